"""Do operators fault where the allocator model says they map buffers past 32 MiB?

A kernel benchmark timed since session 20 records each operator's minor page faults per call
(``faults_per_call``, :func:`carb_lib.kernels.faults_per_call`). This script compares them with
the MiB that :func:`carb_lib.cache_probe._mmap_mib` expects an operator to map afresh per call
(allocator ``--variant``; one 4 KiB page faults per 4 KiB written), and fits
``KernelModel(faults=VARIANT)`` for its fault cost per MiB (pre-registration E of session 20,
predictions E1 and E2):

* of the operators expected to map buffers, the share faulting at least 0.9x the expected pages;
* of the others, the share with fewer than 100 faults per call;
* the operators that disagree, by kind;
* the fitted fault cost (ms per MiB).

``python scripts/kernel_faults_check.py data/kernels/cpu_xeon_gnr_2c_session20.parquet --variant
16+fp16 --out results/carb/replication_cpu_xeon_gnr_2c/faults_check.txt``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib import kernels
from carb_lib.cache_probe import PAGES_PER_MIB, fault_agreement
from carb_lib.families._alloc import parse_variant


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench", type=Path)
    ap.add_argument("--variant", required=True, choices=("8", "16", "16+fp16"))
    ap.add_argument("--out", type=Path, required=True, help="the report (.txt)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    variant = parse_variant(args.variant)
    bench = kernels.read_bench(args.bench).reset_index(drop=True)
    if "faults_per_call" not in bench.columns or bench["faults_per_call"].isna().all():
        raise SystemExit(f"{args.bench} has no faults_per_call column (timed before session 20)")
    agree = fault_agreement(bench, variant)
    mib, mapped, hit, quiet = agree.mib, agree.mapped, agree.hit, agree.quiet
    faults = bench["faults_per_call"].to_numpy(dtype=float)
    lines = [f"# python scripts/kernel_faults_check.py {args.bench} --variant {args.variant} "
             f"--out {args.out}",
             f"{len(bench):,} operators; {int(mapped.sum())} expected to map buffers past 32 MiB "
             f"(allocator variant {args.variant})",
             f"  expected to map: {100 * hit[mapped].mean():.1f} % fault >= 0.9x the expected "
             f"pages (median faults / expected {np.median(faults[mapped] / (mib[mapped] * PAGES_PER_MIB)):.3f})",
             f"  not expected to map: {100 * quiet[~mapped].mean():.2f} % fault < 100 times per "
             f"call (median {np.median(faults[~mapped]):.1f})"]
    off = agree.disagreeing
    if off.any():
        tab = (pd.DataFrame({"kind": bench["kind"], "precision": bench["precision"],
                             "expected_to_map": mapped, "off": off})[off]
               .groupby(["kind", "precision", "expected_to_map"]).size().rename("operators"))
        lines += ["  operators that disagree:", tab.to_string()]
    model = kernels.KernelModel(faults=variant).fit(bench)
    lines.append(f"KernelModel(faults={variant!r}): fault cost {model.fault_ms_per_mib_:.3f} ms "
                 f"per MiB ({1e3 * model.fault_ms_per_mib_ / PAGES_PER_MIB:.2f} µs per page)")
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
