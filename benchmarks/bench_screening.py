"""Benchmark: deployment screening of the paper grid (17,280) and of 1,000,000 candidates.

Targets (2 cores): the full grid screened in < 1 s, 1,000,000 candidates in < 10 s. Every stage
is timed separately: static features, model prediction (``predict_interval``), stage 1
(budgets on upper bounds), stage 2 (Pareto front) and the shortlist; ``logic_s`` is the
screening logic without prediction (stage 1 + 2 + shortlist). Also times :func:`pareto_front`
alone on 1,000,000 x 2 and x 3 random points (uniform, and anti-correlated with a large front).

The model is a small :class:`carb_lib.ensemble.CARBRegressor` (50 XGBoost trees of depth 6,
50 LightGBM trees of 31 leaves, 10 ExtraTrees) fitted on a SYNTHETIC dataset
(:func:`carb_lib.dataset.synthetic.make_synthetic_dataset`): the timings are of the code, its
predictions are meaningless. ``--stand-in`` uses the closed-form stand-in predictor of the
tests instead (prediction then costs almost nothing). Candidates of 1M come from
:func:`carb_lib.families.space.extended_sample` (generation is not timed). Writes
``results/benchmarks/screening.csv``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from carb_lib import screening as scr  # noqa: E402
from carb_lib.families import space  # noqa: E402

BUDGETS = ["energy_j<=5", "latency_ms<=50", "peak_mem_mib<=4096"]
OBJECTIVES = ["energy_j", "peak_mem_mib"]  # + params (capacity proxy): 3 objectives


def fit_small_model(n_jobs: int = 2):
    from carb_lib.dataset.synthetic import make_synthetic_dataset
    from carb_lib.ensemble import CARBRegressor

    df = make_synthetic_dataset(n=2000, seed=0, with_telemetry=False)
    # the learners pinned: this benchmark's model predates the ExtraTrees default
    model = CARBRegressor(learners=("xgb", "lgbm"), n_estimators_xgb=50, max_depth_xgb=6, n_estimators_lgbm=50,
                          num_leaves_lgbm=31, n_estimators_et=10, n_estimators_regime=20, cv=3,
                          n_jobs=n_jobs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(df)
    return model, "CARBRegressor small (xgb 50x d6, lgbm 50x31, et 10), SYNTHETIC training data"


def stand_in():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from _screening_standin import StandInPredictor

    return StandInPredictor(platform="synthetic_gpu"), "stand-in closed-form predictor (tests)"


def bench_screen(case: str, model, label: str, cands: pd.DataFrame, repeats: int) -> list[dict]:
    spec = scr.DeploymentSpec(budgets=BUDGETS, objectives=OBJECTIVES, k=10)
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = scr.screen(model, cands, spec)
        total = time.perf_counter() - t0
        t = dict(res.timings_s)
        t["logic"] = t["stage1_budgets"] + t["stage2_pareto"] + t["shortlist"]
        t["total"] = total
        runs.append(t)
    med = pd.DataFrame(runs).median()
    rows = [{"case": case, "n_candidates": len(cands), "n_objectives": len(spec.objectives),
             "stage": k, "seconds": float(v), "repeats": repeats, "model": label,
             "survivors": res.counts["survivors"], "front": res.counts["front"]}
            for k, v in med.items()]
    print(f"{case}: {len(cands):,} candidates, {res.counts['survivors']:,} survivors, "
          f"front {res.counts['front']:,}")
    for k, v in med.items():
        print(f"   {k:<16} {v * 1e3:9.1f} ms")
    return rows


def bench_pareto(n: int, repeats: int) -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    cases = {
        "pareto_2obj_uniform": rng.random((n, 2)),
        "pareto_3obj_uniform": rng.random((n, 3)),
    }
    X = rng.random((n, 3))
    X[:, 1] = 1 - X[:, 0] + 0.01 * X[:, 1]
    cases["pareto_3obj_anticorrelated"] = X
    for name, F in cases.items():
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            mask = scr.pareto_front(F)
            times.append(time.perf_counter() - t0)
        s = float(np.median(times))
        rows.append({"case": name, "n_candidates": n, "n_objectives": F.shape[1],
                     "stage": "pareto_front", "seconds": s, "repeats": repeats,
                     "model": "none (random points)", "survivors": n, "front": int(mask.sum())})
        print(f"{name}: {n:,} points, front {int(mask.sum()):,}: {s * 1e3:.1f} ms")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-large", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--stand-in", action="store_true", help="use the tests' stand-in predictor")
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks/screening.csv"))
    args = ap.parse_args()

    model, label = stand_in() if args.stand_in else fit_small_model()
    grid = space.paper_grid()
    big = space.extended_sample(args.n_large, seed=0)
    rows = bench_screen("paper_grid", model, label, grid, args.repeats)
    rows += bench_screen(f"extended_{args.n_large}", model, label, big, max(1, args.repeats - 2))
    rows += bench_pareto(args.n_large, args.repeats)
    out = pd.DataFrame(rows)
    out["cpus"] = os.cpu_count()
    out["load_avg_1min_at_end"] = os.getloadavg()[0]  # the machine is shared: context for timings
    out["measured_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(args.out, index=False)
    tot = out[out["stage"] == "total"].set_index("case")["seconds"]
    print(f"targets: grid {tot.iloc[0]:.2f} s (< 1 s), {args.n_large:,} {tot.iloc[1]:.2f} s "
          f"(< 10 s); wrote {args.out}")


if __name__ == "__main__":
    main()
