"""Which measured rows may carry page-fault time: the audit issue 14 asks for before
``cpu_keep_heap`` becomes the CPU default (session 29).

A row's network maps ``network_mmap_mib`` MiB past glibc's 32 MiB threshold per call
(:func:`carb_lib.cache_probe.network_mmap_mib`, the allocator model's events on the CPU's
allocator variant). With the default heap each such MiB can cost a page fault per 4 KiB page
on every call, unless the heap happens to hold a free block that size (session 28). Times
``--ms-per-mib`` (session 20's cost on the fifth CPU, 0.374 ms per MiB, fitted in one sitting
on operators; 0.35-0.62 on the other CPUs' benchmarks) it is the row's **expected** fault time,
an upper bound on what it paid: only rows timed with the heap kept are free of it. Per file
and family: rows, rows that map anything, rows whose expected fault time is >= 10 % and >= 25 %
of their latency, and that time's share of the file's summed latency.

``python scripts/fault_exposure.py data/cpu_epyc_zen3_2c.parquet:8 ... --out results/measurement/fault_exposure``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from carb_lib.cache_probe import network_mmap_mib
from carb_lib.dataset import read_dataset
from carb_lib.families._alloc import parse_variant


def exposure(rows: pd.DataFrame, variant: int | str, ms_per_mib: float) -> pd.DataFrame:
    """Per family of ``rows`` (status ok): the counts and shares above."""
    ok = rows.loc[rows["status"].astype(str) == "ok"].reset_index(drop=True)
    fault_ms = ms_per_mib * network_mmap_mib(ok, variant)
    share = fault_ms / ok["latency_ms"].to_numpy()
    df = pd.DataFrame({"family": ok["family"].astype(str), "mapped": fault_ms > 0,
                       "share_10": share >= 0.10, "share_25": share >= 0.25,
                       "fault_ms": fault_ms, "latency_ms": ok["latency_ms"].to_numpy()})
    g = df.groupby("family")
    out = pd.DataFrame({"rows": g.size(), "mapped": g["mapped"].sum(),
                        "expected_10pct": g["share_10"].sum(),
                        "expected_25pct": g["share_25"].sum(),
                        "time_share": g["fault_ms"].sum() / g["latency_ms"].sum()})
    return out.reset_index()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="PATH:VARIANT (allocator variant 8, 16 or 16+fp16)")
    ap.add_argument("--ms-per-mib", type=float, default=0.374)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    todo = []
    for spec in a.files:
        path, sep, variant = spec.rpartition(":")
        if not sep or not Path(path).exists():
            print(f"fault_exposure: {spec!r} is not an existing PATH:VARIANT", file=sys.stderr)
            return 2
        try:
            todo.append((Path(path), parse_variant(variant)))
        except ValueError as exc:
            print(f"fault_exposure: {spec}: {exc}", file=sys.stderr)
            return 2
    parts = [exposure(read_dataset(p), v, a.ms_per_mib).assign(file=str(p), variant=str(v))
             for p, v in todo]
    table = pd.concat(parts, ignore_index=True)[
        ["file", "variant", "family", "rows", "mapped", "expected_10pct", "expected_25pct",
         "time_share"]]
    a.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(a.out / "fault_exposure.csv", index=False)
    text = (f"# python scripts/fault_exposure.py {' '.join(a.files)} --ms-per-mib "
            f"{a.ms_per_mib} --out {a.out}\n"
            f"expected fault time = MiB mapped past 32 MiB per call x {a.ms_per_mib} ms/MiB "
            "(an upper bound: the heap may serve a block)\n\n"
            + table.to_string(index=False, float_format=lambda x: f"{x:.4f}") + "\n")
    (a.out / "fault_exposure.txt").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
