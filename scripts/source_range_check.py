"""Which ResNet rows should a cross-family source hold? Whole grid against subsets.

Pre-registration N's dry run (session 26) found session 12's rows of 400 configs (stored
latency ≤ 300 ms) predicting mobilenetv2 with ``offset`` at k = 10 better than all 2,656 rows.
This script scores, per target family, the kernel-law source model (latency only, shared
features, default preset, zero-shot and ``offset`` at k = 10, 5 seeds, paired splits) fitted on

* ``all``: every ResNet row (notebook 05's source; the baseline of ``gain_pts``);
* ``random_400``: 400 of them, drawn with seed 1 (size alone);
* ``le300ms_400``: pre-registration M's 400 (``probe_list.resnet_sample``, ≤ 300 ms, seed 1);
* ``kernel_range``: the rows whose kernel-law latency (``kernel_ms``, known before measuring)
  lies within the target family's range of ``kernel_ms`` over all its rows (measured or not:
  only their features are read), a rule that needs no latency of the family.

``--targets LABEL=PATH:FRACTION`` (repeatable) names each target data set and its held-out
share of architectures. Writes ``scores.csv``, ``summary.csv`` and ``gains.csv`` into ``--out``.

``python scripts/source_range_check.py data/other_cpus/cpu_epyc_zen5_2c.parquet --targets s12=data/other_cpus/new_families/cpu_epyc_zen5_2c.parquet:0.3 --bench data/kernels/cpu_epyc_zen5_2c_session21.parquet data/kernels/cpu_epyc_zen5_2c_sampler4.parquet --out results/cross_family/source_range/cpu_epyc_zen5_2c``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_list import resnet_sample  # noqa: E402
from probe_source_test import METHOD, K, summarise  # noqa: E402

from carb_lib.dataset import read_dataset  # noqa: E402
from carb_lib.evaluation import cross_family_evaluation  # noqa: E402
from carb_lib.evaluation.cross_family import kernel_law_rows  # noqa: E402
from carb_lib.vocab import KERNEL_FEATURE  # noqa: E402

SOURCES = ("all", "random_400", "le300ms_400", "kernel_range")
BASE = "all"


def in_kernel_range(source: pd.DataFrame, family_rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``source`` whose ``kernel_ms`` lies within ``family_rows``' min-max range."""
    lo, hi = family_rows[KERNEL_FEATURE].min(), family_rows[KERNEL_FEATURE].max()
    return source[source[KERNEL_FEATURE].between(lo, hi)].reset_index(drop=True)


def sources_for(resnet: pd.DataFrame, raw: pd.DataFrame, family_rows: pd.DataFrame
                ) -> dict[str, pd.DataFrame]:
    """The four sources for one target family. ``raw``: the ResNet rows as stored (to draw
    M's 400 exactly as ``probe_list`` drew them)."""
    m400 = set(resnet_sample(raw, 400, max_ms=300.0, seed=1)["config_id"])
    return {"all": resnet,
            "random_400": resnet.sample(n=min(400, len(resnet)), random_state=1)
                                .reset_index(drop=True),
            "le300ms_400": resnet[resnet["config_id"].isin(m400)].reset_index(drop=True),
            "kernel_range": in_kernel_range(resnet, family_rows)}


def parse_target(text: str) -> tuple[str, Path, float]:
    """``LABEL=PATH:FRACTION`` -> (label, path, fraction), with one clear error."""
    try:
        label, rest = text.split("=", 1)
        path, frac = rest.rsplit(":", 1)
        f = float(frac)
    except ValueError:
        raise SystemExit(f"source_range_check: --targets {text!r}: want LABEL=PATH:FRACTION") from None
    if not 0 < f < 1:
        raise SystemExit(f"source_range_check: --targets {text!r}: fraction {f} not in (0, 1)")
    return label, Path(path), f


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("resnet", type=Path, help="the platform's ResNet rows")
    ap.add_argument("--targets", nargs="+", required=True, help="LABEL=PATH:FRACTION")
    ap.add_argument("--bench", type=Path, nargs="+", required=True)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    targets = [parse_target(t) for t in args.targets]
    for p in [args.resnet, *(t[1] for t in targets), *args.bench]:
        if not p.exists():
            raise SystemExit(f"source_range_check: missing {p}")
    resnet, *rows = kernel_law_rows(args.bench, args.resnet, *(t[1] for t in targets))
    raw = read_dataset(args.resnet)
    common = {"ks": (K,), "n_seeds": args.seeds, "targets": ("latency_ms",),
              "methods": (METHOD,), "default_method": METHOD, "latency_law": "kernel",
              "preset": "default", "own_model": False, "progress": False}
    parts, sizes = [], []
    for (label, _, frac), tgt in zip(targets, rows, strict=True):
        for fam in sorted(tgt["family"].astype(str).unique()):
            for name, src in sources_for(resnet, raw, tgt[tgt["family"] == fam]).items():
                res = cross_family_evaluation(src, tgt, families=[fam], test_fraction=frac,
                                              **common)
                parts.append(res.scores.assign(source=name, dataset=label))
                sizes.append({"dataset": label, "family": fam, "source": name,
                              "n_source_rows": len(src)})
            print(f"{label} {fam}: done", flush=True)
    sc = pd.concat(parts, ignore_index=True)
    summ, gains = summarise(sc, base=BASE)
    summ = summ.merge(pd.DataFrame(sizes), on=["dataset", "family", "source"])
    args.out.mkdir(parents=True, exist_ok=True)
    sc.to_csv(args.out / "scores.csv", index=False)
    summ.to_csv(args.out / "summary.csv", index=False)
    gains.to_csv(args.out / "gains.csv", index=False)
    few = summ[(summ["model"] == METHOD) & (summ["k"] == K)]
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(few.pivot_table(index=["dataset", "family"], columns="source",
                              values="mape_pct_mean").round(2))
        print(few.pivot_table(index=["dataset", "family"], columns="source",
                              values="n_source_rows"))
        print(gains.round(2))


if __name__ == "__main__":
    main()
