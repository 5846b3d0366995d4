"""Benchmark: analytic static features for up to 1,000,000 configurations on one core.

Target: at least 1,000,000 configs/s. Reports the median of ``--repeats`` runs per size, with
the per-architecture caches (and the allocator walk's per-op cache) cleared before each run
(cold), writes
``results/benchmarks/static_features.csv`` and the figure ``figures/bench_static_features``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pandas as pd  # noqa: E402

from carb_lib.dataset import features  # noqa: E402
from carb_lib.families import _alloc  # noqa: E402
from carb_lib.families.space import extended_sample  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks/static_features.csv"))
    ap.add_argument("--fig-dir", type=Path, default=Path("figures"))
    args = ap.parse_args()
    pool = extended_sample(max(args.sizes), seed=0)  # extended space: 10 resolutions, 18 batches
    rows = []
    for n in args.sizes:
        df = pool.iloc[:n]
        times = []
        for _ in range(args.repeats):
            features._resnet_unit.cache_clear()
            _alloc.clear_cache()  # the allocator walk's per-op cache too
            t0 = time.perf_counter()
            features.static_features(df)
            times.append(time.perf_counter() - t0)
        med = float(pd.Series(times).median())
        rows.append({"n_configs": n, "median_s": med, "min_s": min(times),
                     "configs_per_s": n / med, "repeats": args.repeats})
        print(f"{n:>9,} configs: median {med * 1e3:8.1f} ms  -> {n / med:,.0f} configs/s")
    res = pd.DataFrame(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    res.to_csv(args.out, index=False)

    from carb_lib import plots

    fig, ax = plots.plt.subplots(figsize=(5.5, 3.8))
    ax.plot(res["n_configs"], res["configs_per_s"], marker="o")
    ax.axhline(1e6, color="tab:red", ls="--", lw=1, label="target 1M configs/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("configurations per call")
    ax.set_ylabel("throughput (configs/s, median)")
    ax.set_title("static_features throughput, 1 core (extended ResNet space)")
    ax.legend()
    plots.save_figure(fig, "bench_static_features", args.fig_dir)


if __name__ == "__main__":
    main()
