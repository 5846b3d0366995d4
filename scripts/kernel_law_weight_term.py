"""Does a weight-bytes term of its own rescue the kernel law's small-batch extrapolation?

Session 19 found that the wide ResNets the kernel law misses at batch 1-2 take ~1.8x the sum of
their operators timed alone, the gap growing with their weight bytes (README, *Why those ten*).
The kernel law (:mod:`carb_lib.base_models`) has one bytes term, ``(param_bytes +
activation_bytes) / B_p``. This experiment splits it into activation bytes and weight bytes,
each with its own non-negative bandwidth, and scores the default kernel-law model with batches
<= 8 and >= 64 held out (3 model seeds; :func:`carb_lib.evaluation.kernel_law.kernel_law_comparison`,
the fits of ``scripts/kernel_law_replication.py``, its ``kernel`` rows), plain law beside split
law. The split is made by replacing the law's design columns for this process
only (:func:`carb_lib.base_models._terms` and :func:`~carb_lib.base_models.law_columns`); the
library is unchanged.

``python scripts/kernel_law_weight_term.py data/other_cpus/cpu_xeon_gnr_2c.parquet
data/kernels/cpu_xeon_gnr_2c.parquet``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib import base_models, kernels
from carb_lib.dataset import read_dataset
from carb_lib.evaluation import prepare_dataset
from carb_lib.evaluation.kernel_law import kernel_law_comparison

PLAIN_TERMS, PLAIN_COLUMNS = base_models._terms, base_models.law_columns


def split_terms(df, kind, block=base_models.DEFAULT_ALLOC_BLOCK):
    """The kernel law's columns with its bytes term split into activation and weight bytes."""
    t = PLAIN_TERMS(df, kind, block)
    if kind != "kernel":
        return t
    act = base_models._col(df, "activation_bytes") / 1e9
    weights = base_models._col(df, "param_bytes") / 1e9
    return np.column_stack([t[:, :3], act, weights, t[:, 4]])


def split_columns(kind: str) -> tuple[str, ...]:
    if kind == "kernel":
        return ("const", "batch", "kernel_ms", "gbyte", "param_gbyte", "layers")
    return PLAIN_COLUMNS(kind)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("bench", type=Path, nargs="+")
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    df = prepare_dataset(read_dataset(args.dataset))
    bench = kernels.read_bench(args.bench)
    print(f"{args.dataset}: kernel-law model, held-out latency, mean ± sd over {args.seeds} "
          "model seeds")
    parts = []
    try:
        for name, terms, columns in (("plain law", PLAIN_TERMS, PLAIN_COLUMNS),
                                     ("weight bytes apart", split_terms, split_columns)):
            base_models._terms, base_models.law_columns = terms, columns
            res = kernel_law_comparison(df, bench, splits=["batch_small", "batch_large"],
                                        seeds=args.seeds)
            parts.append(res.scores[res.scores["law"] == "kernel"].assign(variant=name))
    finally:
        base_models._terms, base_models.law_columns = PLAIN_TERMS, PLAIN_COLUMNS
    scores = pd.concat(parts)
    for held in parts[0]["held_out"].unique():  # per split, plain law first
        for name, g in scores[scores["held_out"] == held].groupby("variant", sort=False):
                print(f"  {held:<16} {name:<19} R² {g['r2'].mean():.3f} ± {g['r2'].std():.3f}"
                  f"   MAPE {g['mape_pct'].mean():.2f} %")

if __name__ == "__main__":
    main()
