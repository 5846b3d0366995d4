"""How much of the kernel law's batch extrapolation comes from operators timed at held-out batches?

The kernel law (:mod:`carb_lib.kernels`, ``CARBRegressor(latency_law="kernel")``) sums operators
timed alone on the platform at batch 1-256. In the batch extrapolation splits of notebook 03
(small batches held out: train batch > 8, test <= 8; large held out: train < 64, test >= 64) no
*network* row of the held-out side is used, but *operators* at those batches are. This script
fits the default CARB model on each split, with 3 model seeds, in three ways:

* ``roofline``: the roofline latency law (the default);
* ``kernel``: the kernel law, its kernel model fitted on every timed operator;
* ``kernel_strict``: the kernel law, its kernel model fitted only on operators at the training
  side's batch sizes (no timing of any kind at a held-out batch);

and prints held-out latency R², MAPE, share within +-10 % and Spearman (mean +- sd over seeds).
The loop is :func:`carb_lib.evaluation.kernel_law.kernel_law_comparison`, which
``scripts/kernel_law_replication.py`` runs on other CPUs.

``python scripts/kernel_law_extrapolation.py data/cpu_epyc_zen3_2c.parquet \\
data/kernels/cpu_epyc_zen3_2c.parquet``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import pandas as pd

from carb_lib import kernels
from carb_lib.dataset import read_dataset
from carb_lib.evaluation import prepare_dataset
from carb_lib.evaluation.kernel_law import kernel_law_comparison


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("bench", type=Path)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    df = prepare_dataset(read_dataset(args.dataset))
    res = kernel_law_comparison(df, kernels.read_bench(args.bench),
                                splits=("batch_small", "batch_large"), seeds=args.seeds)
    sc = res.scores
    label = sc["split"] + " (" + sc["held_out"] + " held out; train batches " + sc["train_batches"] + ")"
    res.scores = sc.assign(split=label)
    print(f"# python scripts/kernel_law_extrapolation.py {args.dataset} {args.bench}")
    print(f"{res.n_rows:,} rows, {res.n_operators:,} timed operators, {res.preset} preset, "
          f"{args.seeds} model seeds; held-out latency (mean ± sd over seeds)\n")
    with pd.option_context("display.width", 200, "display.max_colwidth", 80):
        print(res.table().to_string())


if __name__ == "__main__":
    main()
