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

``python scripts/kernel_law_extrapolation.py data/cpu_epyc_zen3_2c.parquet \\
data/kernels/cpu_epyc_zen3_2c.parquet``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib import kernels
from carb_lib.dataset import read_dataset
from carb_lib.ensemble import preset
from carb_lib.evaluation import extrapolation_splits, fit_quiet, prepare_dataset
from carb_lib.metrics import regression_metrics

TARGETS = ("peak_mem_mib", "latency_ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("bench", type=Path)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    df = prepare_dataset(read_dataset(args.dataset))
    bench = kernels.read_bench(args.bench)
    # kernel_ms from every timed operator: the same for both splits (the roofline law ignores it)
    full = kernels.with_kernel_column(df, kernels.KernelModel().fit(bench)).reset_index(drop=True)
    rows = []
    for kind, held, test in extrapolation_splits(df, ("batch_small", "batch_large")):
        train_b = set(df.loc[~test, "batch"].astype(int))
        strict = kernels.KernelModel().fit(bench[bench["batch"].astype(int).isin(train_b)])
        lo, hi = min(train_b), max(train_b)
        frames = {"roofline": full, "kernel": full,
                  "kernel_strict": kernels.with_kernel_column(df, strict).reset_index(drop=True)}
        for law, d in frames.items():
            tr, te = d[~test].reset_index(drop=True), d[test].reset_index(drop=True)
            y = te["latency_ms"].to_numpy(dtype=float)
            for seed in range(args.seeds):
                params = {**preset("default", targets=TARGETS, random_state=seed),
                          "latency_law": "roofline" if law == "roofline" else "kernel"}
                p = fit_quiet(params, tr).predict(te)["latency_ms"]
                m = regression_metrics(y, np.asarray(p, dtype=float))
                rows.append({"split": f"{kind} ({held} held out; train batches {lo}-{hi})",
                             "law": law, "seed": seed, "r2": m.r2, "mape_pct": m.mape_pct,
                             "within_10pct": m.within_10pct, "spearman": m.spearman})
    res = pd.DataFrame(rows)
    g = res.groupby(["split", "law"], sort=False)[["r2", "mape_pct", "within_10pct", "spearman"]]
    out = g.mean().round(3).astype(str) + " ± " + g.std().round(3).astype(str)
    print(f"# python scripts/kernel_law_extrapolation.py {args.dataset} {args.bench}")
    print(f"{len(df):,} rows, {len(bench):,} timed operators, default preset, "
          f"{args.seeds} model seeds; held-out latency (mean ± sd over seeds)\n")
    with pd.option_context("display.width", 200, "display.max_colwidth", 80):
        print(out.to_string())


if __name__ == "__main__":
    main()
