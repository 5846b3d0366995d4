"""Does keeping the base law alone, where CARB's learners do not beat it out of fold, help on
held-out rows? (``carb_lib.ensemble.fitting.fit_target``: ``base_law_only``.)

Repeated random splits of measured rows; on each, CARB (preset ``default``) is fitted on the
training part with the rule and without it (the learners always used), and scored on the test
part (MAPE %, R² on the original scale). Prints mean and 95 % t interval over the splits of
both and of their difference, and which targets the rule switched to the base law.

    python benchmarks/base_law_guard.py [--splits 5] [--old-fitting PATH]

``--old-fitting``: a copy of ``fitting.py`` without the rule (``git show
<commit>:carb_lib/ensemble/fitting.py``), used for the "without" fits.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from carb_lib.core.metrics import mape_pct, r2  # noqa: E402
from carb_lib.ensemble import estimator, preset  # noqa: E402
from carb_lib.evaluation import prepare_dataset  # noqa: E402
from carb_lib.evaluation.models import fit_quiet  # noqa: E402

SETS = {
    "gpu_nvidia_h200 ResNet (43 rows)": ["data/gpu_nvidia_h200/design/rows.parquet"],
    "gpu_nvidia_h200 every family (132 rows)": ["data/gpu_nvidia_h200/design/rows.parquet",
                                                "data/gpu_nvidia_h200/design/rows_new_families.parquet"],
    "cpu_epyc_zen3_2c ResNet (400-row sample)": ["data/cpu_epyc_zen3_2c/design/rows.parquet"],
}


def _ci(v):
    v = np.asarray(v, float)
    m = v.mean()
    h = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return f"{m:7.2f} [{m - h:7.2f}, {m + h:7.2f}]"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--old-fitting", type=Path, required=True)
    a = ap.parse_args()
    spec = importlib.util.spec_from_file_location("old_fitting", a.old_fitting)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    new_fit = estimator.fit_target
    out = []
    for name, files in SETS.items():
        rows = prepare_dataset(pd.concat([pd.read_parquet(ROOT / f) for f in files],
                                         ignore_index=True))
        rows = rows[rows["status"].astype(str).eq("ok")].reset_index(drop=True)
        if len(rows) > 400:
            rows = rows.sample(400, random_state=0).reset_index(drop=True)
        targets = tuple(t for t in ("peak_mem_mib", "energy_j", "latency_ms")
                        if t in rows and pd.to_numeric(rows[t], errors="coerce").notna().all())
        for s in range(a.splits):
            rng = np.random.default_rng(s)
            test = np.zeros(len(rows), bool)
            test[rng.permutation(len(rows))[: round(0.3 * len(rows))]] = True
            tr, te = rows[~test], rows[test]
            for rule, fit in (("with", new_fit), ("without", old.fit_target)):
                estimator.fit_target = fit
                m = fit_quiet(preset("default", targets=targets, random_state=s,
                                     latency_law="roofline"), tr)
                p = m.predict(te)
                base_only = m.oof_metrics_.get("base_law_only", pd.Series(False, m.oof_metrics_.index))
                for t in targets:
                    y = te[t].to_numpy(float)
                    out.append({"set": name, "split": s, "rule": rule, "target": t,
                                "mape": mape_pct(y, p[t].to_numpy(float)),
                                "r2": r2(y, p[t].to_numpy(float)),
                                "base_only": bool(base_only.get(t, False))})
            estimator.fit_target = new_fit
    d = pd.DataFrame(out)
    for (name, t), g in d.groupby(["set", "target"], sort=False):
        w = g[g.rule == "with"].set_index("split")
        wo = g[g.rule == "without"].set_index("split")
        print(f"{name:42s} {t:13s} MAPE with {_ci(w.mape)}  without {_ci(wo.mape)}  "
              f"diff {_ci(w.mape - wo.mape)}  base law kept on {int(w.base_only.sum())}/"
              f"{len(w)} splits")


if __name__ == "__main__":
    main()
