"""Benchmark: 10,000 design-space candidates screened from cached call times.

Target (issue "Any network, from its operators"; 2 cores): screening 10,000 candidates whose
calls are all in the cache takes at most 60 s. The candidates are 10,000 rows of the paper's
ResNet grid (:func:`carb_lib.families.resnet.paper_grid`, 17,280 configurations: 192
architectures x 5 resolutions x 9 batch sizes x 2 precisions), drawn with ``--seed``.

1. ``record``: :func:`carb_lib.kernels.replay.screen_calls` on a cold start (fresh worker
   processes): every candidate's calls recorded on the ``meta`` device, each architecture built
   once; the screen's distinct calls counted.
2. A cache in a temporary folder is filled with a PLACEHOLDER time (1 µs) for every distinct
   call: SYNTHETIC times. Timing tens of thousands of distinct calls on this CPU (the largest
   run for seconds) is not what is benchmarked; the screen's cost does not depend on the
   values, and its accuracy is measured elsewhere (``replay_zoo.py``, ``composition_law.py``).
3. ``screen``: :func:`carb_lib.kernels.replay.screen_times` from that cache (budget 0: nothing
   timed), ``--repeats`` times, each with fresh worker processes and a new cache object (a
   user's screen in a new session); every candidate is checked to have all its calls cached.

Writes ``results/benchmarks/replay_screen_<platform>.csv`` (one row per run; the median is the
number to quote; the platform is the catalogued CPU platform measured on this CPU kind, or
``--platform``; on the AMD EPYC Zen 4: ``replay_screen_cpu_epyc_zen4_2c.csv``). ``python benchmarks/replay_screen.py`` (about 4 min on 2 cores; nothing else heavy
meanwhile).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 60.0
#: The placeholder time of every call (SYNTHETIC: the screen's cost does not depend on it).
PLACEHOLDER_MS = 1e-3


def _platform() -> str:
    """The catalogued CPU platform whose design rows were measured on this CPU kind."""
    from carb_lib.dataset.catalog import load_catalog
    from carb_lib.measure.devices import cpu_identity

    found = load_catalog().platform_of_cpu(cpu_identity())
    if found is None:
        raise SystemExit("error: no catalogued CPU platform was measured on this CPU kind: "
                         "name it with --platform")
    return found


def candidates(n: int, seed: int) -> pd.DataFrame:
    from carb_lib.families.resnet import paper_grid

    grid = paper_grid()
    if n > len(grid):
        raise SystemExit(f"error: --n {n}: the paper grid holds {len(grid)} candidates")
    return grid.sample(n, random_state=seed).reset_index(drop=True)


def fill_placeholders(cache, calls: pd.DataFrame) -> int:
    """Every non-view call of ``calls`` into ``cache`` at :data:`PLACEHOLDER_MS`."""
    from carb_lib.kernels.replay import CACHE_COLUMNS

    real = calls[calls["kind"] != "view"]
    rows = pd.DataFrame({
        "key": real["key"], "aten": real["aten"], "kind": real["kind"],
        "time_ms": PLACEHOLDER_MS, "cv": np.nan, "n_iter": 0, "campaign": cache.campaign,
        **cache.protocol, "window_s": cache.window_s, "n_windows": cache.n_windows,
        "measured_at": pd.Timestamp.now(tz="UTC")}, columns=list(CACHE_COLUMNS))
    cache._append(rows)
    return len(rows)


def run(n: int, seed: int, processes: int, repeats: int, platform: str) -> pd.DataFrame:
    from carb_lib.kernels.replay import CallCache, screen_calls, screen_times
    from carb_lib.measure.devices import cpu_identity

    cands = candidates(n, seed)
    base = {"platform": platform, "n_candidates": n, "seed": seed, "processes": processes,
            "cpu_id": cpu_identity(), "times": "placeholder (synthetic)"}
    out = []
    start = time.perf_counter()
    counts, calls, _ = screen_calls(cands, processes=processes, progress=True)
    record_s = time.perf_counter() - start
    n_calls = int(sum(sum(c.values()) for c in counts))
    distinct = int((calls["kind"] != "view").sum())
    out.append({"run": 0, "step": "record", "seconds": record_s, **base})
    with tempfile.TemporaryDirectory(prefix="carb-screen-") as tmp:
        filled = fill_placeholders(CallCache(tmp, scale_by_anchors=False), calls)
        for r in range(1, repeats + 1):
            start = time.perf_counter()
            got = screen_times(cands, cache=CallCache(tmp, scale_by_anchors=False),
                               processes=processes, progress=True)
            seconds = time.perf_counter() - start
            if int(got["n_untimed"].sum()):
                raise SystemExit(f"error: {int(got['n_untimed'].sum())} calls missing from a "
                                 "filled cache")
            out.append({"run": r, "step": "screen", "seconds": seconds, **base})
    rows = pd.DataFrame(out)
    rows["ms_per_candidate"] = 1e3 * rows["seconds"] / n
    rows["n_calls"] = n_calls
    rows["n_distinct_calls"] = distinct
    rows["n_cached"] = filled
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--n", type=int, default=10_000, help="candidates (default 10,000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--platform", default=None,
                    help="name of this CPU in the file name (default: the catalogued CPU "
                         "platform measured on this CPU kind)")
    ap.add_argument("--out", type=Path, default=None,
                    help="default results/benchmarks/replay_screen_<platform>.csv")
    args = ap.parse_args(argv)
    if args.n < 1 or args.processes < 1 or args.repeats < 1:
        raise SystemExit("error: --n, --processes and --repeats must be at least 1")
    platform = args.platform or _platform()
    out = args.out or ROOT / "results" / "benchmarks" / f"replay_screen_{platform}.csv"
    rows = run(args.n, args.seed, args.processes, args.repeats, platform)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows.to_csv(out, index=False)
    screen = rows[rows["step"] == "screen"]["seconds"]
    med = float(screen.median())
    print(f"{args.n:,} candidates, {int(rows['n_distinct_calls'].iloc[0]):,} distinct calls "
          f"({int(rows['n_calls'].iloc[0]):,} calls): recorded cold in "
          f"{rows['seconds'].iloc[0]:.1f} s; screened from the cache in {med:.1f} s (median of "
          f"{len(screen)}, {screen.min():.1f}-{screen.max():.1f} s; target <= {TARGET_S:.0f} s: "
          f"{'met' if med <= TARGET_S else 'not met'}) on {args.processes} processes")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
