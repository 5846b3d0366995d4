"""Which held-out rows decide the kernel law's R² when small batches are held out? One platform.

R² weighs squared errors, so a few slow rows can hold it down while MAPE and Spearman are good
(session 18's fifth CPU: R² 0.857 at MAPE 9.1 %). This script fits the default kernel-law CARB
model on the rows with batch > 8 (model seed 0, the kernel model fitted on every operator, as in
``scripts/kernel_law_replication.py``), predicts the rows with batch <= 8, and prints the rows
with the largest shares of the squared error, and the shares by precision (``--csv``: every
held-out row, e.g. to time the worst ones with ``scripts/kernel_additivity.py --config-ids``).

``python scripts/kernel_law_worst_rows.py data/other_cpus/cpu_xeon_gnr_2c.parquet
data/kernels/cpu_xeon_gnr_2c.parquet``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib import kernels
from carb_lib.dataset import read_dataset
from carb_lib.ensemble import preset as model_preset
from carb_lib.evaluation import prepare_dataset
from carb_lib.evaluation.kernel_law import COMPARISON_TARGETS
from carb_lib.evaluation.models import fit_quiet
from carb_lib.evaluation.splits import extrapolation_splits
from carb_lib.metrics import regression_metrics


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("bench", type=Path, nargs="+")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--csv", type=Path, default=None,
                    help="also write every held-out row (config_id, config, latency_ms, pred_ms, "
                         "ratio, se_share, param_bytes) to this CSV, largest share first")
    ap.add_argument("--timing-list", type=Path, default=None,
                    help="write config_id + group for scripts/kernel_additivity.py --config-ids: "
                         "the --top worst rows ('worst') and, as controls, --top rows drawn "
                         "(seed 0) from the held-out rows of the worst rows' precision, "
                         "resolution and batch range with weights <= 16 MiB ('small') and "
                         "16-128 MiB ('middle')")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    df = prepare_dataset(read_dataset(args.dataset)).reset_index(drop=True)
    full = kernels.with_kernel_column(df, kernels.KernelModel().fit(kernels.read_bench(args.bench)),
                                      n_jobs=2)
    _, held, test = extrapolation_splits(full, ["batch_small"])[0]
    params = {**model_preset("default", targets=COMPARISON_TARGETS, random_state=0),
              "latency_law": "kernel"}
    pred = np.asarray(fit_quiet(params, full[~test]).predict(full[test])["latency_ms"], float)
    t = full[test].assign(pred_ms=pred)
    m = regression_metrics(t["latency_ms"].to_numpy(float), pred)
    se = (t["pred_ms"] - t["latency_ms"]) ** 2
    t = t.assign(ratio=t["pred_ms"] / t["latency_ms"], se_share=se / se.sum())
    print(f"{len(t):,} held-out rows ({held}): R² {m.r2:.3f}, MAPE {m.mape_pct:.1f} %, "
          f"Spearman {m.spearman:.3f}")
    cols = ["depth", "width", "resolution", "batch", "precision", "latency_ms", "pred_ms",
            "ratio", "se_share"]
    worst = t.nlargest(args.top, "se_share")
    print(f"the {args.top} rows with the largest squared errors hold "
          f"{100 * worst['se_share'].sum():.0f} % of it:")
    print(worst[cols].round(3).to_string(index=False))
    if args.timing_list is not None:
        _timing_list(t, worst, args.top, args.timing_list)
    if args.csv is not None:
        keep = ["config_id", *cols, "param_bytes", "flops"]
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        t.sort_values("se_share", ascending=False)[keep].to_csv(args.csv, index=False)
    print("\nshare of the squared error and median predicted / measured, by precision:")
    print(t.groupby("precision").agg(rows=("ratio", "size"), se_share=("se_share", "sum"),
                                     median_ratio=("ratio", "median")).round(3).to_string())


def _timing_list(held, worst, n: int, path: Path) -> None:
    """The worst rows and two control groups of the same regime, by their weight bytes."""
    mib = held["param_bytes"] / 2**20
    regime = (held["precision"].isin(worst["precision"].unique())
              & held["resolution"].isin(worst["resolution"].unique())
              & held["batch"].between(worst["batch"].min(), worst["batch"].max())
              & ~held.index.isin(worst.index))
    parts = [worst.assign(group="worst")]
    for name, sel in (("small", mib <= 16), ("middle", (mib > 16) & (mib <= 128))):
        pool = held[regime & sel]
        parts.append(pool.sample(n=min(n, len(pool)), random_state=0).assign(group=name))
    out = pd.concat(parts)[["config_id", "group", "depth", "width", "resolution", "batch",
                            "precision", "param_bytes", "ratio"]]
    path.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(path, index=False)
    print(f"timing list: {path} ({out['group'].value_counts().to_dict()})")


if __name__ == "__main__":
    main()
