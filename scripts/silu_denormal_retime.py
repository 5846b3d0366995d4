"""Time a benchmark's ``silu`` operators again, with and without denormals flushed, paired.

Pre-registration AC (session 31). ``carb kernels`` times an in-place ``silu`` by calling it
again and again on one tensor; each call halves the values until they pass through the
denormal range (~120-160 calls on in float32), where x86 arithmetic runs up to ~50x slower.
Since session 31 ``bench_kernels`` flushes denormals to zero while timing
(``flush_denormal=True``). This script measures what that changes, in one sitting: each
``silu`` operator of the given benchmark files is timed in both arms, in blocks of
``--block`` operators, the arms' order alternating from block to block (heap kept, as the
benchmark).

Writes ``OUT`` (.parquet): the operators' rows with ``arm`` (``flushed`` / ``denormal``),
``block`` and ``order`` (0: this arm ran first in its block) beside
:func:`carb_lib.kernels.bench_kernels`' columns. A measurement: nothing else running.

``python scripts/silu_denormal_retime.py data/kernels/P_TAG.parquet data/kernels/P_TAG_sampler4.parquet
--out results/measurement/P_TAG/silu_retime.parquet``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import pandas as pd

from carb_lib import kernels
from carb_lib.dataset import atomic_write_parquet
from carb_lib.operators import DRAW_COLUMN, OP_COLUMNS

#: The arms: name -> bench_kernels(flush_denormal=...).
ARMS: dict[str, bool] = {"flushed": True, "denormal": False}


def silu_ops(bench: pd.DataFrame) -> pd.DataFrame:
    """The distinct ``silu`` operators (shape, batch, precision) of a benchmark, in its order."""
    cols = [*OP_COLUMNS, "batch", "precision"]
    s = bench[bench["kind"].astype(str) == "silu"]
    return s[[*cols, *([DRAW_COLUMN] if DRAW_COLUMN in s else [])]].drop_duplicates(
        cols).reset_index(drop=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench", type=Path, nargs="+", help="benchmark files (carb kernels --out)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--block", type=int, default=10)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    if args.out.exists():
        raise SystemExit(f"{args.out} exists; a measurement is never overwritten")
    if args.block < 1:
        raise SystemExit(f"--block must be >= 1, got {args.block}")
    for p in args.bench:
        if not p.is_file():
            raise SystemExit(f"no such benchmark {p}")
    bench = pd.concat([kernels.read_bench(p) for p in args.bench], ignore_index=True)
    ops = silu_ops(bench)
    if ops.empty:
        raise SystemExit(f"no silu operators in {[str(p) for p in args.bench]}")
    plat = str(bench["platform"].iloc[0])
    names = list(ARMS)
    done: list[pd.DataFrame] = []
    n_blocks = (len(ops) + args.block - 1) // args.block
    for b in range(n_blocks):
        part = ops.iloc[b * args.block:(b + 1) * args.block]
        order = names if b % 2 == 0 else names[::-1]
        for pos, arm in enumerate(order):
            timed = kernels.bench_kernels(part.drop(columns=[DRAW_COLUMN], errors="ignore"),
                                          platform=plat, progress=False, keep_heap=True,
                                          flush_denormal=ARMS[arm])
            done.append(timed.assign(arm=arm, block=b, order=pos))
        atomic_write_parquet(pd.concat(done, ignore_index=True), args.out)  # rows so far
        print(f"block {b + 1}/{n_blocks} done", flush=True)
    out = pd.concat(done, ignore_index=True)
    atomic_write_parquet(out, args.out)
    med = out.groupby(["precision", "arm"])["time_ms"].median().unstack()
    print(f"{len(ops)} silu operators, median ms:\n{med.round(4).to_string()}")


if __name__ == "__main__":
    main()
