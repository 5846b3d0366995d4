"""The pre-issue-14 CARB model on the two CPU datasets (test split, 5 seeds, "fast" preset).

Runs against the model code of commit bf9a785 (before the characterization-guided model):
``git worktree add ../carb-old bf9a785 && PYTHONPATH=../carb-old OMP_NUM_THREADS=1 python
scripts/old_model_on_new_data.py data/cpu_epyc_2c.parquet data/cpu_epyc_zen3_2c.parquet``.
Writes the per-seed metrics to results/measurement/old_model_on_v1_and_zen3.csv.
"""

from __future__ import annotations

import sys
import warnings

import pandas as pd

from carb_lib import evaluation as ev
from carb_lib.dataset import read_dataset
from carb_lib.ensemble import PRESETS


def main(paths: list[str]) -> None:
    warnings.filterwarnings("ignore")
    out = []
    for path in paths:
        d = ev.prepare_dataset(read_dataset(path))
        for seed in range(5):
            split = ev.stratified_split(d, random_state=seed)
            tr, te = d[split == "train"], d[split == "test"]
            m = ev._fit_quiet({**PRESETS["fast"], "n_jobs": 1}, tr)
            pred = m.predict(te)
            for t in ("latency_ms", "peak_mem_mib"):
                r = ev.regression_metrics(te[t], pred[t])
                out.append({"dataset": path, "seed": seed, "target": t, **r})
            print(path, seed, flush=True)
    res = pd.DataFrame(out)
    cols = ["r2", "mape_pct", "within_10pct"]
    print(res.groupby(["dataset", "target"])[cols].agg(["mean", "std"]).round(4).to_string())
    res.to_csv("results/measurement/old_model_on_v1_and_zen3.csv", index=False)


if __name__ == "__main__":
    main(sys.argv[1:])
