"""The ``carb:allocator-precision`` block of the docs (:mod:`carb_lib.app.readme`): the allocator
model's rows exact to the byte per platform and precision, over every measured CPU file
(``results/benchmarks/allocator_exact_by_precision.csv``, written by
``benchmarks/check_allocator.py``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

#: The file the block is written from, relative to ``results/``.
SOURCE = "benchmarks/allocator_exact_by_precision.csv"
#: Its columns.
COLUMNS = ("platform", "precision", "files", "rows", "exact_rows", "exact_share",
           "max_rel_err_pct")


class AllocatorBlockError(RuntimeError):
    """The block's source file is missing or lacks a column."""


def _share(exact: int, rows: int) -> str:
    """``exact / rows`` in percent; a share below 100 % never rounds up to "100 %"."""
    if exact == rows:
        return "100 %"
    return f"{min(100 * exact / rows, 99.99):.2f} %"


def allocator_precision_block(results: Path) -> str:
    """A markdown table, one line per platform and precision: files, rows, rows exact to the
    byte (count and share) and the largest relative error of a row, then a line of totals."""
    path = Path(results) / SOURCE
    if not path.is_file():
        raise AllocatorBlockError(f"{path} does not exist (run `make bench` first)")
    t = pd.read_csv(path)
    missing = [c for c in COLUMNS if c not in t.columns]
    if missing:
        raise AllocatorBlockError(f"{path}: column {missing[0]!r} is missing")
    out = ["| platform | precision | files | rows | exact to the byte | share exact | "
           "largest error of a row |",
           "|---|---|---|---|---|---|---|"]
    for _, r in t.iterrows():
        out.append(f"| {r['platform']} | {r['precision']} | {int(r['files'])} | "
                   f"{int(r['rows']):,} | {int(r['exact_rows']):,} | "
                   f"{_share(int(r['exact_rows']), int(r['rows']))} | "
                   f"{float(r['max_rel_err_pct']):.3g} % |")
    for prec, g in t.groupby("precision", sort=False):
        rows, exact = int(g["rows"].sum()), int(g["exact_rows"].sum())
        out.append(f"| all | {prec} | {int(g['files'].sum())} | {rows:,} | {exact:,} | "
                   f"{_share(exact, rows)} | {float(g['max_rel_err_pct'].max()):.3g} % |")
    return "\n".join(out) + "\n\n_Source: `results/" + SOURCE + "`._\n"
