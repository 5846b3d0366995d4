"""Does a buffer of exactly 32 MiB fault like those past it? (issue 14's boundary question)

The page-fault term (``KernelModel(faults=VARIANT)``, :func:`carb_lib.cache_probe._mmap_mib`)
counts the buffers *past* glibc's largest mmap threshold (32 MiB). This script measures where
the boundary lies and what the stored kernel benchmarks say about buffers of exactly 32 MiB:

1. sizes: minor page faults per call of a float32 ``x + 1`` whose output has a given number of
   bytes, each size in a fresh process (around 32 MiB to the byte, and a few sizes in MiB);
2. for each kernel benchmark given (``FILE:VARIANT``, with ``faults_per_call``): the operators
   whose allocator events hold a buffer of exactly 32 MiB, with their stored faults, their
   faults timed again here each in a fresh process, and the pages either rule expects
   (``>`` 32 MiB, the default; ``>=`` 32 MiB, ``_mmap_mib(..., inclusive=True)``);
3. the fault check's two shares (``scripts/kernel_faults_check.py``) with either rule.

Counting faults is not timing: it can run beside other work. Example::

    python scripts/mmap_boundary.py data/kernels/cpu_xeon_gnr_2c_session20.parquet:16+fp16 \\
        data/kernels/cpu_epyc_zen5_2c_session21.parquet:16 \\
        data/kernels/cpu_epyc_zen5_2c_sampler4.parquet:16 --out results/carb/mmap_boundary.txt
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

MIB = 2**20
EDGE = 32 * MIB
#: Output sizes (bytes) timed in part 1: to the byte around 32 MiB, then a few in MiB.
SIZES = [EDGE + d for d in (-256, -192, -176, -128, -16, 0, 64)] + [
    m * MIB for m in (16, 31, 33, 36)]


def _child_size(n_bytes: int) -> float:
    import torch

    from carb_lib.kernels import faults_per_call

    torch.set_num_threads(1)
    x = torch.rand(n_bytes // 4)
    return faults_per_call(lambda: x + 1, n=10)


def _child_op(path: str, row: int) -> float:
    import torch

    from carb_lib import kernels

    torch.set_num_threads(1)
    r = pd.read_parquet(path).iloc[row]
    call = kernels._module(r, torch.float16 if r["precision"] == "fp16" else torch.float32)
    with torch.inference_mode():
        for _ in range(3):
            call()
    return kernels.faults_per_call(call)


def _fresh(*args: str) -> float:
    """Run this script's child mode in a new process and read its one number."""
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.split()[-1])


def _exactly_edge(ops: pd.DataFrame, variant) -> np.ndarray:
    """Whether each operator's events hold a buffer of exactly 32 MiB."""
    from carb_lib.cache_probe import _mmap_mib

    return _mmap_mib(ops, variant, inclusive=True) != _mmap_mib(ops, variant)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("benches", nargs="*", help="FILE:VARIANT of kernel benchmarks with faults")
    ap.add_argument("--out", type=Path, help="the report (.txt)")
    ap.add_argument("--child-size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--child-op", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_size is not None:
        print(_child_size(args.child_size))
        return
    if args.child_op is not None:
        print(_child_op(args.child_op[0], int(args.child_op[1])))
        return
    if args.out is None:
        ap.error("--out is required")

    from carb_lib.cache_probe import PAGES_PER_MIB, fault_agreement
    from carb_lib.devices import cpu_identity
    from carb_lib.families._alloc import parse_variant

    lines = [f"# python scripts/mmap_boundary.py {' '.join(args.benches)} --out {args.out}",
             f"# host: {cpu_identity()}", "",
             "1. faults per call of an fp32 `x + 1` (output bytes), one fresh process each"]
    for n in SIZES:
        d = n - EDGE
        label = f"32 MiB {d:+d} B" if abs(d) < MIB else f"{n / MIB:g} MiB"
        f = _fresh("--child-size", str(n))
        lines.append(f"  {label:>16}: {f:9.1f} faults ({f / (n / 4096):.2f} per 4 KiB page)")
        print(lines[-1], flush=True)
    shares = []
    for spec in args.benches:
        path, _, var = spec.rpartition(":")
        variant = parse_variant(var)
        bench = pd.read_parquet(path).reset_index(drop=True)
        agree = {incl: fault_agreement(bench, variant, inclusive=incl) for incl in (False, True)}
        edge = np.flatnonzero(_exactly_edge(bench, variant))
        gt, ge = (agree[incl].mib[edge] * PAGES_PER_MIB for incl in (False, True))
        fresh = [_fresh("--child-op", path, str(i)) for i in edge]
        tab = bench.iloc[edge][["kind", "cin", "cout", "k", "stride", "h_in", "h_out", "batch",
                                "precision", "faults_per_call"]].assign(
            fresh_here=fresh, pages_gt=gt, pages_ge=ge)
        stored = tab["faults_per_call"].to_numpy()
        lines += ["", f"2. {path} (variant {var}): {len(edge)} operators with a buffer of "
                  "exactly 32 MiB", tab.to_string(float_format=lambda v: f"{v:.0f}"),
                  f"  stored faults >= 0.9x the pages of '>=': {(stored >= 0.9 * ge).sum()} / "
                  f"{len(edge)}; in a fresh process here: "
                  f"{(np.asarray(fresh) >= 0.9 * ge).sum()} / {len(edge)}"]
        print("\n".join(lines[-3:]), flush=True)
        for rule, inclusive in ((">", False), (">=", True)):
            a = agree[inclusive]
            shares.append({"benchmark": Path(path).stem, "rule": f"{rule} 32 MiB",
                           "expected_to_map": int(a.mapped.sum()),
                           "mapped_and_faulting_pct": 100 * a.hit[a.mapped].mean(),
                           "others_quiet_pct": 100 * a.quiet[~a.mapped].mean(),
                           "disagreeing_ops": int(a.disagreeing.sum())})
    if shares:
        lines += ["", "3. the fault check's shares with either rule (stored faults)",
                  pd.DataFrame(shares).to_string(index=False, float_format=lambda v: f"{v:.2f}")]
    _write_report(args.out, lines)


def _write_report(out: Path, lines: list[str]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"mmap_boundary: wrote {out}")


if __name__ == "__main__":
    main()
