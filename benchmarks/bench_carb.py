"""Benchmark: CARBRegressor fit on 17,280 rows and predict on 1,000,000 rows, per preset (2 cores).

Targets: fit on ~17k rows < 5 min on 2 cores; the screening default predicts
1,000,000 candidates *with intervals* in <= 10 s and is <= 200 MB on disk.

For each preset of :data:`carb_lib.ensemble.PRESETS` (``default``: the screening default and
the estimator's defaults; ``paper``: the paper's sizes; ``fast``) with ``n_jobs=2``:

* ``fit``: one fit on the 17,280-row grid of :func:`carb_lib.dataset.synthetic.make_synthetic_dataset`
  (``error_rate=0``; its 32 OOM rows are dropped by the fit, so 17,248 rows are used). The data
  are SYNTHETIC: the timings are of the code, the predictions are not evidence of anything.
* ``model_matrix``, ``predict``, ``predict_interval``: 1,000,000 rows (the training rows tiled;
  building them is not timed); median of ``--repeats`` runs (3) for ``model_matrix`` and
  ``predict``, one run of ``predict_interval`` (the same model calls plus the intervals).
  ``predict`` includes building the model matrix.
* ``model_mib``: size of the pickled model (streamed, not held in memory); ``disk_mib``: size
  of the file :func:`carb_lib.ensemble.save_model` writes (skops, uncompressed).
* ``heldout_r2_<target>``: R2 on a second SYNTHETIC draw (``seed=1``, same grid, new noise):
  a sanity check that both presets fit the synthetic laws, not an accuracy claim (those are
  measured on real data in notebook 03).

``results/benchmarks/carb.csv`` holds one row per preset and measure: the presets run replace
their rows, the others' rows are kept with their own ``measured_at``. Smaller runs
(``--rows``, ``--predict-rows``) are labelled ``full_size=False``. Do not run while a CPU
measurement campaign is running on the machine.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

TARGET_FIT_S = 300.0
TARGET_PREDICT_1M_S = 5.0
TARGET_INTERVAL_1M_S = 10.0
TARGET_DISK_MIB = 200.0 * 1e6 / 2**20  # 200 MB
FULL_ROWS, FULL_PREDICT_ROWS = 17_280, 1_000_000


class _ByteCounter:
    """File-like sink that only counts bytes (size of a pickle without holding it)."""

    def __init__(self) -> None:
        self.n = 0

    def write(self, b) -> int:
        n = memoryview(b).nbytes  # bytes, or a PickleBuffer (protocol 5)
        self.n += n
        return n


def pickled_mib(obj) -> float:
    sink = _ByteCounter()
    pickle.dump(obj, sink, protocol=pickle.HIGHEST_PROTOCOL)
    return sink.n / 2**20


def timed(fn, repeats: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def synthetic_sets(rows: int, predict_rows: int
                   ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """SYNTHETIC training grid (``seed=0``), its ok rows tiled to ``predict_rows`` rows, and a
    second draw (``seed=1``, ok rows) for the held-out sanity check."""
    from carb_lib.dataset.synthetic import make_synthetic_dataset

    train = make_synthetic_dataset(n=rows, seed=0, with_telemetry=False, error_rate=0.0)
    holdout = make_synthetic_dataset(n=rows, seed=1, with_telemetry=False, error_rate=0.0)
    holdout = holdout[holdout["status"] == "ok"].reset_index(drop=True)
    ok = train[train["status"] == "ok"].reset_index(drop=True)
    reps = int(np.ceil(predict_rows / len(ok)))
    big = pd.concat([ok] * reps, ignore_index=True).iloc[:predict_rows]
    return train, big, holdout


def fit_and_size(params: dict, train: pd.DataFrame, n_jobs: int):
    """``CARBRegressor(**params, n_jobs=n_jobs).fit(train)`` timed, and its size on disk
    (:func:`carb_lib.ensemble.save_model`): ``(model, fit_s, disk_mib)``."""
    import tempfile

    from carb_lib.ensemble import CARBRegressor, save_model

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CARBRegressor(**{**params, "n_jobs": n_jobs}).fit(train)
    fit_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        disk = save_model(model, Path(tmp) / "m.joblib").stat().st_size / 2**20
    return model, fit_s, disk


def bench_preset(name: str, train: pd.DataFrame, big: pd.DataFrame, holdout: pd.DataFrame,
                 n_jobs: int, repeats: int) -> list[dict]:
    from sklearn.metrics import r2_score

    from carb_lib.core.vocab import DEFAULT_COVERAGE
    from carb_lib.ensemble import PRESETS, model_matrix

    print(f"[{name}] fit on {len(train):,} SYNTHETIC rows ...", flush=True)
    model, fit_s, disk = fit_and_size(PRESETS[name], train, n_jobs)
    size = pickled_mib(model)
    print(f"[{name}]   fit {fit_s:.1f} s on {model.n_train_:,} rows; model {size:.0f} MiB",
          flush=True)
    pred = model.predict(holdout)
    r2 = {f"heldout_r2_{t}": float(r2_score(holdout[t], pred[t])) for t in model.targets_}
    mm_s, mm_all = timed(lambda: model_matrix(big, model.feature_set), repeats)
    pr_s, pr_all = timed(lambda: model.predict(big), repeats)
    iv_s, iv_all = timed(lambda: model.predict_interval(big, coverage=DEFAULT_COVERAGE), repeats)
    print(f"[{name}]   {len(big):,} rows: model_matrix {mm_s:.2f} s, predict {pr_s:.2f} s "
          f"(runs {', '.join(f'{t:.2f}' for t in pr_all)}), predict_interval {iv_s:.2f} s",
          flush=True)
    common = {"preset": name, "n_jobs": n_jobs, "model_mib": size, "disk_mib": disk,
              "disk_target_mib": TARGET_DISK_MIB, "disk_ok": disk <= TARGET_DISK_MIB,
              "params": ", ".join(f"{k}={v}" for k, v in PRESETS[name].items()), **r2}
    return [
        {**common, "measure": "fit", "rows": model.n_train_, "seconds": fit_s, "repeats": 1,
         "all_seconds": f"{fit_s:.3f}", "target_s": TARGET_FIT_S},
        {**common, "measure": "model_matrix", "rows": len(big), "seconds": mm_s,
         "repeats": repeats, "all_seconds": " ".join(f"{t:.3f}" for t in mm_all),
         "target_s": None},
        {**common, "measure": "predict", "rows": len(big), "seconds": pr_s, "repeats": repeats,
         "all_seconds": " ".join(f"{t:.3f}" for t in pr_all), "target_s": TARGET_PREDICT_1M_S},
        {**common, "measure": "predict_interval", "rows": len(big), "seconds": iv_s,
         "repeats": repeats, "all_seconds": " ".join(f"{t:.3f}" for t in iv_all),
         "target_s": TARGET_INTERVAL_1M_S},
    ]


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", nargs="+", default=["default"])
    ap.add_argument("--rows", type=int, default=FULL_ROWS, help="training rows (synthetic grid)")
    ap.add_argument("--predict-rows", type=int, default=FULL_PREDICT_ROWS)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3, help="predict repeats (median is kept)")
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks/carb.csv"))
    args = ap.parse_args(argv)

    from carb_lib.ensemble import PRESETS

    unknown = sorted(set(args.presets) - set(PRESETS))
    if unknown:
        ap.error(f"unknown preset(s) {unknown}; known: {sorted(PRESETS)}")
    train, big, holdout = synthetic_sets(args.rows, args.predict_rows)
    full = args.rows >= FULL_ROWS and len(big) >= FULL_PREDICT_ROWS
    rows = []
    for name in args.presets:
        rows += bench_preset(name, train, big, holdout, args.n_jobs, args.repeats)
    out = pd.DataFrame(rows).assign(
        data="SYNTHETIC (carb_lib.dataset.synthetic, error_rate=0)", full_size=full,
        cpus=os.cpu_count(), load_avg_1min_at_end=os.getloadavg()[0],
        measured_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    out["meets_target"] = [
        (s < t) if pd.notna(t) and full else None
        for s, t in zip(out["seconds"], out["target_s"], strict=True)
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.out.exists():  # keep the rows of presets not run this time (their own measured_at)
        old = pd.read_csv(args.out)
        old = old[~old["preset"].isin(args.presets)]
        pd.concat([old, out], ignore_index=True).to_csv(args.out, index=False)
    else:
        out.to_csv(args.out, index=False)
    show = out[["preset", "measure", "rows", "seconds", "target_s", "meets_target", "disk_mib"]]
    print(show.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    r2_cols = [c for c in out.columns if c.startswith("heldout_r2_")]
    print(out.drop_duplicates("preset").set_index("preset")[r2_cols].round(4).to_string())
    print(f"wrote {args.out}" + ("" if full else " (reduced size: full_size=False)"))
    return out


if __name__ == "__main__":
    main()
