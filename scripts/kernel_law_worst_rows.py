"""Which held-out rows decide the kernel law's R² when small batches are held out? One platform.

R² weighs squared errors, so a few slow rows can hold it down while MAPE and Spearman are good
(session 18's fifth CPU: R² 0.857 at MAPE 9.1 %). This script fits the default kernel-law CARB
model on the rows with batch > 8 (model seed 0, the kernel model fitted on every operator, as in
``scripts/kernel_law_replication.py``), predicts the rows with batch <= 8, and prints the rows
with the largest shares of the squared error, and the shares by precision.

``python scripts/kernel_law_worst_rows.py data/other_cpus/cpu_xeon_gnr_2c.parquet
data/kernels/cpu_xeon_gnr_2c.parquet``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

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
    print("\nshare of the squared error and median predicted / measured, by precision:")
    print(t.groupby("precision").agg(rows=("ratio", "size"), se_share=("se_share", "sum"),
                                     median_ratio=("ratio", "median")).round(3).to_string())


if __name__ == "__main__":
    main()
