"""What the benchmarks that run once per CPU kind share: their options, their rows read back,
and the timing of a whole network.

A benchmark of this kind (``chain_overhead.py``, ``replay_zoo.py``, ``composition_law.py``)
times once on a CPU kind and writes ``results/benchmarks/<stem>_<platform>.csv``; run again,
or with ``--score-only``, it recomputes its summary from those rows and times nothing (never
re-timed to improve a number).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def add_options(ap: argparse.ArgumentParser, platform_help: str) -> None:
    """``--platform``, ``--score-only`` and ``--results-dir``."""
    ap.add_argument("--platform", default=None, help=platform_help)
    ap.add_argument("--score-only", action="store_true",
                    help="recompute the summary from the rows written (no timing)")
    ap.add_argument("--results-dir", type=Path, default=ROOT / "results" / "benchmarks")


def platform_here(given: str | None, campaign: str) -> str | None:
    """``given``, else the catalogued CPU platform whose ``campaign`` rows were measured on this
    CPU kind; None (said in one line): there is none."""
    from carb_lib.dataset.catalog import load_catalog
    from carb_lib.measure.devices import cpu_identity

    found = given or load_catalog().platform_of_cpu(cpu_identity(), campaign)
    if found is None:
        print(f"no catalogued {campaign} rows were measured on this CPU kind: nothing to time")
    return found


def begin(args: argparse.Namespace, stem: str, campaign: str
          ) -> tuple[str, Path, Path, pd.DataFrame | None] | None:
    """:func:`platform_here` for ``campaign``, then :func:`start`: the platform, the rows file,
    the summary file and the rows of an earlier run; None (said) where no catalogued platform
    of this CPU kind has ``campaign`` rows and ``--platform`` names none."""
    platform = platform_here(args.platform, campaign)
    if platform is None:
        return None
    return (platform, *start(args, stem, platform))


def start(args: argparse.Namespace, stem: str, name: str
          ) -> tuple[Path, Path, pd.DataFrame | None]:
    """The rows file and the summary file of benchmark ``stem`` on platform ``name``, and the
    rows of an earlier run (the file exists, or ``--score-only``, which needs it; None: time
    them)."""
    out = args.results_dir / f"{stem}_{name}.csv"
    summary = args.results_dir / f"{stem}_{name}_summary.csv"
    if not (args.score_only or out.exists()):
        return out, summary, None
    if not out.exists():
        sys.exit(f"error: --score-only needs {out}")
    print(f"{out} exists (one run per CPU kind): the summary is recomputed from it")
    return out, summary, pd.read_csv(out)


def time_network(net, x, window_s: float) -> tuple[float, float]:
    """The network itself, timed now by the harness that times each operator
    (:func:`carb_lib.kernels.law._time_call`: two warm-up calls, the median of three windows
    of at least ``window_s`` seconds) under ``torch.inference_mode()``: seconds per forward and
    the windows' coefficient of variation."""
    import torch

    from carb_lib.kernels.law import _time_call

    with torch.inference_mode():
        seconds, cv, _ = _time_call(lambda: net(x), window_s, 3)
    return seconds, cv


def finish(table: pd.DataFrame, out: Path, summary: Path, width: int = 160) -> None:
    """Write the summary ``table``, print it and say which files were written."""
    table.to_csv(summary, index=False)
    with pd.option_context("display.width", width):
        print(table.round(3).to_string(index=False))
    wrote(out, summary)


def wrote(out: Path, summary: Path) -> None:
    """The last line: which files were written."""
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}, {summary.name}")
