"""Benchmark: what the kernel latency law costs at screening time (2 cores).

A ``default``-preset CARB model with ``latency_law="kernel"`` is fitted on the measured CPU
dataset with the platform's operator benchmark (``kernel_bench``: the model learns its kernel
model in ``fit``), then asked for ``predict_interval`` on ``--n`` candidates drawn from the
extended-dense space (:func:`carb_lib.screening.screen.load_candidates`, distinct configs, so
the per-architecture operator lists are not all cached). Timed, median of ``--repeats`` runs:

* ``kernel_column``: :func:`carb_lib.kernels.law.with_kernel_column` alone (operator lists +
  kernel model on the estimator's ``n_jobs`` threads), the first run with a cold
  operator-list cache reported separately;
* ``predict_interval_kernel`` and ``predict_interval_roofline``: the whole prediction with
  intervals, kernel law against the default roofline law fitted on the same rows.

Writes ``results/benchmarks/kernel_law.csv`` (with the host's ``cpu_id``: compare runs of one
CPU only). Do not run while a measurement campaign runs.

``python benchmarks/bench_kernel_law.py`` (20,000 candidates: the kernel law costs milliseconds per
distinct architecture, so a million would take most of an hour on 2 cores)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import pandas as pd  # noqa: E402

from carb_lib.dataset.features import with_static_features  # noqa: E402
from carb_lib.dataset.schema import read_dataset  # noqa: E402
from carb_lib.ensemble import CARBRegressor, preset  # noqa: E402
from carb_lib.evaluation import prepare_dataset  # noqa: E402
from carb_lib.kernels import law as kernels  # noqa: E402
from carb_lib.kernels import op_lists
from carb_lib.measure.devices import cpu_identity  # noqa: E402
from carb_lib.screening.screen import load_candidates  # noqa: E402


def _timed(fn, repeats: int) -> tuple[float, float]:
    """(first run, median of the runs) in seconds."""
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return runs[0], statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("data/cpu_epyc_zen3_2c/design/rows.parquet"))
    ap.add_argument("--bench", type=Path, default=Path("data/cpu_epyc_zen3_2c/design/kernels.parquet"))
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks/kernel_law.csv"))
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    df = prepare_dataset(read_dataset(args.data))
    bench = kernels.read_bench(args.bench)
    targets = ("peak_mem_mib", "latency_ms")
    kern = CARBRegressor(**preset("default", targets=targets, latency_law="kernel",
                                  kernel_bench=bench)).fit(df)
    roof = CARBRegressor(**preset("default", targets=targets, latency_law="roofline")).fit(df)
    cands = with_static_features(load_candidates("extended-dense", n_extended=args.n, seed=0))
    op_lists._ARCH_CACHE.clear()
    cold, warm = _timed(lambda: kernels.with_kernel_column(cands, kern.kernel_model_,
                                                           n_jobs=kern.n_jobs), args.repeats)
    _, k_iv = _timed(lambda: kern.predict_interval(cands), args.repeats)
    _, r_iv = _timed(lambda: roof.predict_interval(cands), args.repeats)
    n_arch = int(kernels.network_ops(cands)[1].max() + 1)
    rows = [("kernel_column_cold_s", cold), ("kernel_column_s", warm),
            ("predict_interval_kernel_s", k_iv), ("predict_interval_roofline_s", r_iv),
            ("distinct_architectures", n_arch)]
    out = pd.DataFrame(rows, columns=["measure", "value"]).assign(
        n_candidates=len(cands), repeats=args.repeats, cpu_id=cpu_identity(),
        measured_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(args.out, index=False)
    print(out.to_string(index=False))


if __name__ == "__main__":
    main()
