"""Does the ResNet source's small-batch corrector help or hurt a family it never saw?

``CARBRegressor`` refines small batches (``batch <= 8``) with a corrector learned on the
source's residuals (``regime_shrink`` 0.9). Fitted on ResNet rows only, it learns ResNet's
small-batch residual; session 31 found (post hoc, on session 29's fifth-CPU rows) that the
cross-family zero-shot residual of every new family spreads less without it. This script asks
it on the **validation sets only**, none of them session 31's rows: each set's ResNet source
and new-family rows with its own operator benchmark, kernel law, ``offset`` with k = 10, the
default preset, ``--seeds`` paired seeds, with ``source_params={"regime_shrink": 0.0}`` against
the default.

Rule, fixed before this script first ran: the source drops the corrector for cross-family
prediction if, on the offset k = 10 latency MAPE averaged over a set's families, it is ahead on
at least 4 of the 5 sets, and the mean paired gap over all set x seed units is below zero by
more than one standard error.

``python scripts/source_corrector_check.py --out results/cross_family/source_corrector_check``
"""

from __future__ import annotations

import argparse
import io
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from denormal_sitting_score import kernel_rows, offset_cell  # noqa: E402

from carb_lib import kernels  # noqa: E402
from carb_lib.dataset import read_dataset  # noqa: E402

#: name -> (ResNet source, new-family rows, operator benchmark files); none of session 31.
SETS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "zen3 (development)": ("data/cpu_epyc_zen3_2c.parquet",
                           "data/new_families/cpu_epyc_zen3_2c.parquet",
                           ("data/kernels/cpu_epyc_zen3_2c.parquet",)),
    "zen5": ("data/other_cpus/cpu_epyc_zen5_2c.parquet",
             "data/other_cpus/new_families/cpu_epyc_zen5_2c.parquet",
             ("data/kernels/cpu_epyc_zen5_2c.parquet",
              "data/kernels/cpu_epyc_zen5_2c_sampler4.parquet")),
    "xeon emr": ("data/other_cpus/cpu_xeon_emr_2c.parquet",
                 "data/other_cpus/new_families/cpu_xeon_emr_2c.parquet",
                 ("data/kernels/cpu_xeon_emr_2c.parquet",)),
    "xeon gnr, session 18-19": ("data/other_cpus/cpu_xeon_gnr_2c.parquet",
                                "data/other_cpus/new_families/cpu_xeon_gnr_2c.parquet",
                                ("data/kernels/cpu_xeon_gnr_2c.parquet",
                                 "data/kernels/cpu_xeon_gnr_2c_sampler4.parquet")),
    "xeon gnr, session 29 kept": ("data/other_cpus/cpu_xeon_gnr_2c_session29_kept.parquet",
                                  "data/other_cpus/new_families/cpu_xeon_gnr_2c_session29_kept.parquet",
                                  ("data/kernels/cpu_xeon_gnr_2c_session29_kept.parquet",
                                   "data/kernels/cpu_xeon_gnr_2c_sampler4.parquet")),
}
VARIANTS: dict[str, dict] = {"default": {}, "no corrector": {"regime_shrink": 0.0}}


def rule(offset_scores: pd.DataFrame, variant: str):
    """The choice's rule on ``offset`` scores (``set``, ``seed``, ``variant``, ``family``,
    ``mape_pct``): the per set x seed gap ``variant`` - ``default`` (mean over families), its
    mean per set, its SE, the number of sets where ``variant`` is ahead, and whether it is
    adopted (ahead on >= 4 sets and a mean gap below -1 SE)."""
    wide = offset_scores.pivot_table(index=["set", "seed"], columns=["variant", "family"],
                                     values="mape_pct")
    per_unit = wide[variant].mean(axis=1) - wide["default"].mean(axis=1)
    by_set = per_unit.groupby(level="set").mean()
    se = float(per_unit.std(ddof=1) / np.sqrt(len(per_unit)))
    ahead = int((by_set < 0).sum())
    return per_unit, by_set, se, ahead, bool(ahead >= 4 and per_unit.mean() < -se)


def choose(variant: str, params: dict, *, seeds: int, out: Path, command: str,
           adopt: str, kernel_params: dict | None = None) -> bool:
    """Run ``default`` and ``variant`` (``source_params=params``; with ``kernel_params``, the
    variant's kernel law reads ``KernelModel(**kernel_params)`` fitted on the set's benchmark)
    on every set of :data:`SETS` and apply the rule: adopt ``variant`` if, on the offset k = 10
    latency MAPE averaged over a set's families, it is ahead on at least 4 of the 5 sets and the mean paired gap over all set
    x seed units is below zero by more than one standard error. Writes ``scores.csv`` and
    ``choice.txt`` (its first line ``# command``; ``adopt`` names the adopted choice) into
    ``out``, prints the choice, and returns whether ``variant`` is adopted."""
    rows = []
    for name, (src_f, tgt_f, bench_f) in SETS.items():
        print(f"{name} ...", flush=True)
        bench = kernels.read_bench(list(bench_f) if len(bench_f) > 1 else bench_f[0])
        source, target = read_dataset(src_f), read_dataset(tgt_f)
        src, tgt = kernel_rows(bench, source, target)
        v_rows = (kernel_rows(bench, source, target, kernel_params=kernel_params)
                  if kernel_params else (src, tgt))
        for v, p, (s_v, t_v) in (("default", {}, (src, tgt)), (variant, params, v_rows)):
            res = offset_cell(s_v, t_v, seeds, source_params=p)
            sc = res.scores[res.scores["target"] == "latency_ms"]
            rows.append(sc.assign(set=name, variant=v))
    scores = pd.concat(rows, ignore_index=True)
    off = scores[scores["model"] == "offset"]
    per_unit, by_set, se, ahead, adopted = rule(off, variant)
    buf = io.StringIO()
    buf.write(f"# {command}\n")
    buf.write("offset k = 10 latency MAPE % (mean over seeds) per set, family and variant:\n")
    buf.write(off.pivot_table(index=["set", "family"], columns="variant", values="mape_pct")
              .round(2).to_string() + "\n\nzero-shot latency MAPE %:\n")
    buf.write(scores[scores["model"] == "zero_shot"].pivot_table(
        index=["set", "family"], columns="variant", values="mape_pct").round(2).to_string())
    buf.write(f"\n\npaired gap {variant} - default (mean over families) per set:\n")
    buf.write(by_set.round(3).to_string() + "\n")
    buf.write(f"all {len(per_unit)} set x seed units: {per_unit.mean():+.3f} ± {se:.3f} (SE); "
              f"ahead on {ahead} of {len(by_set)} sets\n")
    buf.write(f"rule (ahead on >= 4 of 5 sets and mean gap < -1 SE): "
              f"{adopt if adopted else 'keep the default'}\n")
    out.mkdir(parents=True, exist_ok=True)
    scores.to_csv(out / "scores.csv", index=False)
    (out / "choice.txt").write_text(buf.getvalue())
    print(buf.getvalue())
    return adopted


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    choose("no corrector", VARIANTS["no corrector"], seeds=args.seeds, out=args.out,
           command=f"python scripts/source_corrector_check.py --seeds {args.seeds} --out {args.out}",
           adopt="drop the corrector for cross-family sources")


if __name__ == "__main__":
    main()
