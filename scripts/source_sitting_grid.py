"""Issue 15's cell with ResNet sources of different sittings of one CPU (session 34).

The cross-family tests of the fifth CPU since pre-registration AF read one ResNet source:
session 30's kept rows. Session 34 saw (post hoc) that the cell moves by up to 7 points with
the sitting the ResNet rows were timed in, in step with how steady the host was then. This
script runs the cell (``offset``, k = 10, kernel law, default preset, ``--seeds`` paired seeds,
pre-registration AC's operator benchmark) for every ResNet sitting of :data:`SOURCES` against the
new-family rows of each ``--targets`` tag, beside each source sitting's reference config CV and
median (``results/measurement/PLATFORM_TAG/reference.parquet``).

``python scripts/source_sitting_grid.py cpu_xeon_gnr_2c --targets session31_flushed
session32_above_caps session34_off_grid --out results/cross_family/source_sittings_cpu_xeon_gnr_2c``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from denormal_sitting_score import offset_cell, offset_mape  # noqa: E402
from paired_heap_score import reference_stats  # noqa: E402

from carb_lib import kernels  # noqa: E402
from carb_lib.dataset import read_dataset  # noqa: E402

#: The fifth CPU's ResNet sittings timed since session 29 (``data/other_cpus/PLATFORM_TAG``).
SOURCES: tuple[str, ...] = ("session29_kept", "session30_kept", "session30_default",
                            "session31_steady", "session32_traffic", "session34_both")
#: Pre-registration AC's operator benchmark (sampler v3 and v4 draws, denormals flushed).
BENCH_TAG = "session31_flushed"


def source_reference(platform: str, tag: str) -> tuple[float, float]:
    """The reference config's CV and median (ms) in the source sitting ``tag``."""
    med, cv, _ = reference_stats(Path(f"results/measurement/{platform}_{tag}/reference.parquet"))
    return cv, med


def steadiest(platform: str, sources: tuple[str, ...] = SOURCES) -> str:
    """The source sitting whose reference config has the lowest CV (the rule of AJ)."""
    return min(sources, key=lambda t: source_reference(platform, t)[0])


def grid(platform: str, targets: list[str], *, sources: tuple[str, ...] = SOURCES,
         seeds: int = 5) -> pd.DataFrame:
    """One row per source x target tag: the source's reference CV and median; per family the
    offset k = 10 latency MAPE (``*_mape_pct``, mean over seeds, and its ``*_sd``) and Spearman,
    and the zero-shot peak memory MAPE (``*_memory_pct``)."""
    bench = kernels.read_bench([f"data/kernels/{platform}_{BENCH_TAG}.parquet",
                                f"data/kernels/{platform}_{BENCH_TAG}_sampler4.parquet"])
    km = kernels.KernelModel(random_state=0).fit(bench)
    tgt = {t: kernels.with_kernel_column(
        read_dataset(f"data/other_cpus/new_families/{platform}_{t}.parquet"), km) for t in targets}
    rows = []
    for s in sources:
        cv, med = source_reference(platform, s)
        src = kernels.with_kernel_column(read_dataset(f"data/other_cpus/{platform}_{s}.parquet"), km)
        for t, rows_t in tgt.items():
            print(f"source {s}, targets {t}", flush=True)
            sc = offset_cell(src, rows_t, seeds).scores
            fam = offset_mape(sc).groupby(level="family").agg(["mean", "std"])
            lat = sc[(sc["target"] == "latency_ms") & (sc["model"] == "offset")]
            rho = lat.groupby("family")["spearman"].mean()
            mem = sc[(sc["target"] == "peak_mem_mib") & (sc["model"] == "zero_shot")].groupby(
                "family")["mape_pct"].mean()
            rows.append({"source": s, "source_ref_cv": cv, "source_ref_ms": med, "targets": t,
                         **{f"{f}_mape_pct": fam.loc[f, "mean"] for f in fam.index},
                         **{f"{f}_sd": fam.loc[f, "std"] for f in fam.index},
                         **{f"{f}_spearman": rho[f] for f in rho.index},
                         **{f"{f}_memory_pct": mem[f] for f in mem.index}})
    return pd.DataFrame(rows)


def report(g: pd.DataFrame) -> str:
    """The grid as text: each target's families by source, sources ordered by their CV."""
    g = g.sort_values(["targets", "source_ref_cv"])
    cols = ["source", "source_ref_cv", "source_ref_ms",
            *[c for c in g.columns if c.endswith("_mape_pct")]]
    out = []
    for t, part in g.groupby("targets", sort=False):
        out += [f"targets {t}: offset k = 10 latency MAPE % (mean over seeds) by ResNet source",
                part[cols].round(3).to_string(index=False), ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--targets", nargs="+", required=True)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    g = grid(a.platform, a.targets, seeds=a.seeds)
    a.out.mkdir(parents=True, exist_ok=True)
    g.to_csv(a.out / "grid.csv", index=False)
    text = (f"# python scripts/source_sitting_grid.py {a.platform} --targets "
            f"{' '.join(a.targets)} --seeds {a.seeds} --out {a.out}\n\n" + report(g))
    (a.out / "grid.txt").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
