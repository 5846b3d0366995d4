"""Benchmark: CARBRegressor fit on ~17k rows and predict on 1,000,000 rows (2 cores).

Targets with the paper's model sizes (XGBoost 800 trees depth 9, LightGBM 800 trees 127 leaves,
ExtraTrees 400 trees, 5-fold OOF, n_jobs=2): fit < 5 min on the 17,280-row grid, predict of
1,000,000 rows < 5 s.

The training data is SYNTHETIC (:func:`carb_lib.synthetic.make_synthetic_dataset`; three
targets, no telemetry): the timings are of the code, its predictions are meaningless. The 1M
prediction rows are the training rows tiled (generation not timed). ``--scale`` divides every
tree count (``--scale 8``: 100 / 100 / 50 trees); ``--rows`` and ``--predict-rows`` shrink the
data. A reduced run also prints a *rough linear extrapolation* to paper size (fit ~ trees x
rows, predict ~ trees x rows), labelled as such; only a run with ``--scale 1 --rows 17280
--predict-rows 1000000`` measures the targets. Do not run the full size while a CPU measurement
campaign is running on the machine. Appends to ``results/benchmarks/carb.csv``.
"""

from __future__ import annotations

import argparse
import os
import pickle
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

PAPER = {"n_estimators_xgb": 800, "max_depth_xgb": 9, "n_estimators_lgbm": 800,
         "num_leaves_lgbm": 127, "n_estimators_et": 400, "n_estimators_regime": 200, "cv": 5}
TARGET_FIT_S = 300.0
TARGET_PREDICT_1M_S = 5.0


def model_params(scale: float, n_jobs: int, cv: int) -> dict:
    p = dict(PAPER)
    for k in ("n_estimators_xgb", "n_estimators_lgbm", "n_estimators_et", "n_estimators_regime"):
        p[k] = max(1, round(p[k] / scale))
    p.update(n_jobs=n_jobs, cv=cv)
    return p


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=17280, help="training rows (synthetic grid)")
    ap.add_argument("--predict-rows", type=int, default=1_000_000)
    ap.add_argument("--scale", type=float, default=1.0, help="divide every tree count by this")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--cv", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=1, help="predict repeats (best is kept)")
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks/carb.csv"))
    args = ap.parse_args(argv)

    from carb_lib.ensemble import CARBRegressor, model_matrix
    from carb_lib.synthetic import make_synthetic_dataset

    df = make_synthetic_dataset(n=args.rows, seed=0, with_telemetry=False)
    df = df[df["status"] == "ok"].reset_index(drop=True)
    params = model_params(args.scale, args.n_jobs, args.cv)
    label = (f"xgb {params['n_estimators_xgb']}x d{params['max_depth_xgb']}, lgbm "
             f"{params['n_estimators_lgbm']}x{params['num_leaves_lgbm']}, et "
             f"{params['n_estimators_et']}, regime {params['n_estimators_regime']}, cv {args.cv}")
    print(f"fit: {len(df)} SYNTHETIC rows, {label}, n_jobs={args.n_jobs}", flush=True)
    model = CARBRegressor(**params)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(df)
    fit_s = time.perf_counter() - t0
    size_mb = len(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)) / 2**20
    print(f"  fit {fit_s:.1f} s; pickled model {size_mb:.0f} MiB", flush=True)

    reps = int(np.ceil(args.predict_rows / len(df)))
    big = pd.concat([df] * reps, ignore_index=True).iloc[: args.predict_rows]
    times = {"model_matrix": [], "predict": [], "predict_interval": []}
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        model_matrix(big, model.feature_set)
        times["model_matrix"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        model.predict(big)
        times["predict"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        model.predict_interval(big, coverage=0.9)
        times["predict_interval"].append(time.perf_counter() - t0)
    best = {k: min(v) for k, v in times.items()}
    print(f"predict {len(big):,} rows: " + ", ".join(f"{k} {v:.2f} s" for k, v in best.items()))

    tree_ratio = args.scale  # paper trees / used trees
    fit_extra = fit_s * tree_ratio * (17280 / args.rows)
    pred_extra = best["predict"] * tree_ratio * (1_000_000 / len(big))
    paper_size = args.scale == 1 and args.rows >= 17280 and len(big) >= 1_000_000
    if not paper_size:
        print(f"ROUGH linear extrapolation to paper size (not a measurement): fit ~{fit_extra:.0f} s "
              f"(target {TARGET_FIT_S:.0f}), predict 1M ~{pred_extra:.1f} s (target "
              f"{TARGET_PREDICT_1M_S:.0f})")
    else:
        print(f"targets: fit {'OK' if fit_s < TARGET_FIT_S else 'MISSED'}, predict 1M "
              f"{'OK' if best['predict'] < TARGET_PREDICT_1M_S else 'MISSED'}")
    rows = [{"case": "fit", "rows": len(df), "seconds": fit_s},
            *({"case": k, "rows": len(big), "seconds": v} for k, v in best.items())]
    out = pd.DataFrame(rows).assign(
        model=label, n_jobs=args.n_jobs, model_mib=size_mb, paper_size=paper_size,
        extrapolated_fit_s=None if paper_size else fit_extra,
        extrapolated_predict_1m_s=None if paper_size else pred_extra,
        cpus=os.cpu_count(), load_avg_1min_at_end=os.getloadavg()[0],
        measured_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(args.out, mode="a", header=not args.out.exists(), index=False)
    print(f"appended to {args.out}")
    return out


if __name__ == "__main__":
    main()
