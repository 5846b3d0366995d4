"""Diagnostic: where the latency base law goes wrong when small batches are held out.

Fits the roofline base law (:func:`carb_lib.base_models.fit_base_law`) on the rows with
``batch >= --min-train-batch`` (the leave-small-batches-out split of notebook 03) and on all
rows, prints both laws' constants, and the median log residual ``log(law / measured)`` per
precision and batch on the training and held-out rows (positive: the law predicts too slow).
``python scripts/small_batch_law_residuals.py data/cpu_epyc_zen3_2c.parquet``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib.base_models import fit_base_law
from carb_lib.evaluation.splits import prepare_dataset


def residual_table(law, part: pd.DataFrame) -> pd.DataFrame:
    r = np.log(law.predict(part) / part["latency_ms"].to_numpy(dtype=float))
    t = part[["precision", "batch"]].assign(log_residual=r)
    return (t.groupby(["batch", "precision"])["log_residual"].agg(["size", "median"])
            .rename(columns={"size": "rows", "median": "median_log_residual"})
            .unstack("precision").round(3))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--min-train-batch", type=int, default=16)
    a = ap.parse_args()
    d = prepare_dataset(pd.read_parquet(a.dataset))
    train = d[d["batch"] >= a.min_train_batch]
    held = d[d["batch"] < a.min_train_batch]
    cols = ["precision", "term", "value", "unit"]
    law = fit_base_law(train, "latency_ms")
    everything = fit_base_law(d, "latency_ms")
    both = law.constants()[cols].merge(everything.constants()[cols],
                                       on=["precision", "term", "unit"],
                                       suffixes=(f"_batch>={a.min_train_batch}", "_all_rows"))
    pd.set_option("display.width", 120)
    print(f"{a.dataset}: {len(train):,} training rows (batch >= {a.min_train_batch}), "
          f"{len(held):,} held out\n")
    print(both.round(3).to_string(index=False))
    print(f"\nlaw fitted on batch >= {a.min_train_batch}, training rows:")
    print(residual_table(law, train).to_string())
    print("\nheld-out rows:")
    print(residual_table(law, held).to_string())


if __name__ == "__main__":
    main()
