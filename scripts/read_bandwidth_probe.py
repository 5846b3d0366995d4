"""Probe one core's read bandwidth by working set: the ``--cache-probe`` file of ``carb fit``.

Usage::

    python scripts/read_bandwidth_probe.py data/<platform>/design/cache_probe.csv

Times a full read of a float32 buffer of each working set
(:func:`carb_lib.kernels.cache_probe.read_bandwidth`) and writes ``size_mib``, ``read_gb_per_s`` and
``cv`` to the CSV named, then prints the knee :func:`carb_lib.kernels.cache_probe.cache_knee` reads from
it (the working set past which a network's weights stream from memory). The kernel law's weight
traffic term (``carb fit --latency-law kernel --kernel-bench B --cache-probe FILE``) reads it.
Run it on the machine the benchmark was timed on, with nothing else running (~1 min).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from carb_lib.kernels.cache_probe import PROBE_SIZES_MIB, cache_knee, read_bandwidth


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="CSV to write (refused if it exists, unless --force)")
    ap.add_argument("--threads", type=int, default=1, help="threads reading (default 1)")
    ap.add_argument("--window-s", type=float, default=0.2, help="seconds per timing window")
    ap.add_argument("--n-windows", type=int, default=5, help="windows per size (median counts)")
    ap.add_argument("--sizes-mib", type=int, nargs="+", default=list(PROBE_SIZES_MIB),
                    help="working sets to time, MiB")
    ap.add_argument("--force", action="store_true", help="overwrite an existing file")
    args = ap.parse_args(argv)
    if args.out.suffix != ".csv":
        print(f"read_bandwidth_probe: {args.out}: the probe is written as a .csv file",
              file=sys.stderr)
        return 2
    if args.out.exists() and not args.force:
        print(f"read_bandwidth_probe: {args.out} exists (--force overwrites it)", file=sys.stderr)
        return 2
    probe = read_bandwidth(tuple(args.sizes_mib), window_s=args.window_s,
                           n_windows=args.n_windows, threads=args.threads)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    probe.to_csv(args.out, index=False)
    print(probe.round(3).to_string(index=False))
    try:
        knee = cache_knee(probe)
    except ValueError as err:
        print(f"read_bandwidth_probe: no knee in this probe: {err}", file=sys.stderr)
    else:
        print(f"cache {knee.cache_gb_per_s:.2f} GB/s up to ~{knee.cache_mib:.0f} MiB, "
              f"memory {knee.memory_gb_per_s:.2f} GB/s beyond")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
