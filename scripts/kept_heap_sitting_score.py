"""Pre-registration X (session 29): operators and ResNet rows timed in ONE sitting with the heap
kept, against an earlier sitting of the same operators and configs with the default heap.

``results/measurement/PLATFORM_TAG/PREREGISTRATION.md`` says what is predicted. This script
judges it from the files the campaign (``scripts/kept_heap_sitting.sh``) and the replication
(``scripts/kernel_law_replication.py ROWS OPS --out results/carb/replication_PLATFORM_TAG``)
wrote:

* X1: faults gone. Operators with ``faults_per_call`` >= 100 and rows with
  ``minor_faults_per_call`` >= 100, each at most 1 % of the kept sitting's.
* X2: the operators that faulted before got faster. Pairs of the same operator (shape, batch,
  precision); ``c`` the median ratio kept / before of the pairs that did not fault before
  (``faults_per_call`` < 1,000 then: the host's speed between the sittings); the median of
  ratio / ``c`` over the pairs that faulted >= 1,000 times per call before: <= 0.85.
* X3: so did the networks expected to pay for faults. A row's expected fault time is the MiB
  its operators map past 32 MiB per call (:func:`carb_lib.cache_probe._mmap_mib`, allocator
  ``--variant``) times ``--ms-per-mib`` (the cost fitted on the before sitting's operators);
  its share of the before latency splits the paired rows: none (0), some (under 10 %),
  large (10 % or more). The median of ratio / ``c`` (``c`` the median over "none") over
  "large": <= 0.92.
* X4: the kernel law with small batches held out (<= 8), mean R² over the replication's seeds:
  >= 0.95.
* X5: ``KernelModel(faults=VARIANT)`` fitted on the kept operators finds a fault cost <= 0.05
  ms per MiB.
* X6: the kernel law on the random split's test part, mean share within +-10 %: >= 0.95.
* X7: peak memory (``peak_mem_mib``) of the paired rows equal to the before sitting's in
  >= 99 % of them (keeping the heap changes where buffers live, not their sizes).

Writes ``score.txt`` and ``paired_rows.csv`` / ``paired_ops.csv`` under ``--out``.

``python scripts/kept_heap_sitting_score.py cpu_xeon_gnr_2c``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib.cache_probe import network_mmap_mib
from carb_lib.dataset import read_dataset
from carb_lib.families._alloc import parse_variant
from carb_lib.kernels import KernelModel, read_bench
from carb_lib.operators import OP_COLUMNS

#: A before-sitting operator "faulted" from this many minor faults per call (X2).
FAULTED = 1000
#: A kept-sitting operator or row "faults" from this many per call (X1).
FAULTS = 100
#: Expected fault share of the before latency that makes a row "large" (X3).
LARGE_SHARE = 0.10

OP_KEY = [*OP_COLUMNS, "batch", "precision"]
ROW_KEY = ["config_id", "batch", "precision"]


def paired_ops(kept: pd.DataFrame, before: pd.DataFrame) -> pd.DataFrame:
    """One row per operator timed in both sittings (the median of repeats within a sitting)."""
    def one(df: pd.DataFrame, tag: str) -> pd.DataFrame:
        g = df.groupby(OP_KEY, dropna=False)[["time_ms", "faults_per_call"]].median()
        return g.add_suffix(f"_{tag}")

    out = one(kept, "kept").join(one(before, "before"), how="inner").reset_index()
    out["ratio"] = out["time_ms_kept"] / out["time_ms_before"]
    return out


def expected_fault_ms(rows: pd.DataFrame, variant: int | str, ms_per_mib: float) -> np.ndarray:
    """Each row's expected page-fault time per call (ms) with the default heap: the MiB its
    network maps past 32 MiB per call (:func:`carb_lib.cache_probe.network_mmap_mib`), times
    ``ms_per_mib``."""
    return ms_per_mib * network_mmap_mib(rows, variant)


def paired_rows(kept: pd.DataFrame, before: pd.DataFrame, variant: int | str,
                ms_per_mib: float) -> pd.DataFrame:
    """Rows of the same config in both sittings, with the expected fault share of the before
    latency and its group (none / some / large)."""
    cols = [*ROW_KEY, "latency_ms", "peak_mem_mib"]
    ok_k = kept.loc[kept["status"].astype(str) == "ok"]
    ok_b = before.loc[before["status"].astype(str) == "ok"]
    out = ok_b.merge(ok_k.reindex(columns=[*cols, "minor_faults_per_call"]), on=ROW_KEY,
                     suffixes=("_before", "_kept")).reset_index(drop=True)
    out["fault_ms"] = expected_fault_ms(out, variant, ms_per_mib)
    out["share"] = out["fault_ms"] / out["latency_ms_before"]
    out["group"] = np.select([out["share"] <= 0, out["share"] < LARGE_SHARE],
                             ["none", "some"], "large")
    out["ratio"] = out["latency_ms_kept"] / out["latency_ms_before"]
    return out


class Judge:
    """Appends one line per pre-registered prediction to ``lines`` (``NAME HELD: text`` or
    ``NAME MISSED: text``) and counts them: ``judge = Judge(lines)``, ``judge("X1", text, ok)``,
    ``judge.held_line()``."""

    def __init__(self, lines: list[str]) -> None:
        self.lines, self.verdicts = lines, []

    def __call__(self, name: str, text: str, ok: bool) -> None:
        self.verdicts.append(bool(ok))
        self.lines.append(f"{name} {'HELD' if ok else 'MISSED'}: {text}")

    def held_line(self) -> str:
        return f"{sum(self.verdicts)} of {len(self.verdicts)} held"


def memory_identical(pr: pd.DataFrame, a: str, b: str) -> float:
    """Share of paired rows whose peak memory columns ``a`` and ``b`` are equal (to 1e-6 MiB)."""
    return float(np.isclose(pr[a], pr[b], rtol=0, atol=1e-6).mean())


def missing_file(script: str, files: dict[str, Path]) -> bool:
    """Whether a scorer's input is missing: the first absent one of ``files`` (what -> path) is
    named in one line on stderr, ``SCRIPT: no WHAT file PATH``."""
    for what, f in files.items():
        if not f.exists():
            print(f"{script}: no {what} file {f}", file=sys.stderr)
            return True
    return False


def write_score(out: Path, lines: list[str]) -> str:
    """The judgement's lines as ``out/score.txt``, also printed; returns the text."""
    text = "\n".join(lines) + "\n"
    (out / "score.txt").write_text(text)
    print(text, end="")
    return text


def replication_cell(folder: Path, split_prefix: str, column: str) -> float:
    """The kernel law's mean ``column`` on the split starting with ``split_prefix``."""
    s = pd.read_csv(folder / "replication_summary.csv")
    hit = s["split"].str.startswith(split_prefix) & (s["law"] == "kernel")
    if hit.sum() != 1:
        raise SystemExit(f"kept_heap_sitting_score: {folder / 'replication_summary.csv'} has "
                         f"{int(hit.sum())} kernel rows for split {split_prefix!r}, not one")
    return float(s.loc[hit, column].iloc[0])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--tag", default="session29_kept", help="the kept sitting's file tag")
    ap.add_argument("--before", default="session20", help="the before sitting's file tag")
    ap.add_argument("--variant", default="16+fp16", help="this CPU's allocator variant")
    ap.add_argument("--ms-per-mib", type=float, default=0.374,
                    help="fault cost of the before sitting (session 20's, pre-registration E2)")
    ap.add_argument("--out", type=Path, default=None,
                    help="default results/measurement/PLATFORM_TAG")
    a = ap.parse_args(argv)
    p, tag = a.platform, a.tag
    files = {"kept operators": Path(f"data/kernels/{p}_{tag}.parquet"),
             "before operators": Path(f"data/kernels/{p}_{a.before}.parquet"),
             "kept rows": Path(f"data/other_cpus/{p}_{tag}.parquet"),
             "before rows": Path(f"data/other_cpus/{p}_{a.before}.parquet"),
             "replication": Path(f"results/carb/replication_{p}_{tag}/replication_summary.csv")}
    if missing_file("kept_heap_sitting_score", files):
        return 2
    out = a.out or Path(f"results/measurement/{p}_{tag}")
    out.mkdir(parents=True, exist_ok=True)
    variant = parse_variant(a.variant)
    k_ops, b_ops = read_bench(files["kept operators"]), read_bench(files["before operators"])
    k_rows, b_rows = read_dataset(files["kept rows"]), read_dataset(files["before rows"])
    lines = [f"# python scripts/kept_heap_sitting_score.py {p} --tag {tag} --before {a.before}",
             f"kept sitting: {len(k_ops):,} operators, {len(k_rows):,} rows; before sitting "
             f"({a.before}): {len(b_ops):,} operators, {len(b_rows):,} rows", ""]
    judge = Judge(lines)

    op_share = float((k_ops["faults_per_call"] >= FAULTS).mean())
    row_f = k_rows["minor_faults_per_call"]
    row_share = float((row_f >= FAULTS).sum() / max(row_f.notna().sum(), 1))
    before_ops = int((b_ops["faults_per_call"] >= FAULTS).sum())
    judge("X1", f"{op_share:.2%} of kept operators fault >= {FAULTS} times per call (before: "
          f"{before_ops:,} of {len(b_ops):,}); {row_share:.2%} of kept rows "
          f"({int(row_f.notna().sum()):,} with a count; median {row_f.median():.1f}); "
          "bound 1 % each", op_share <= 0.01 and row_share <= 0.01)

    po = paired_ops(k_ops, b_ops)
    faulted = po["faults_per_call_before"] >= FAULTED
    c_ops = float(po.loc[~faulted, "ratio"].median())
    m_ops = float((po.loc[faulted, "ratio"] / c_ops).median())
    judge("X2", f"{len(po):,} operators paired; the {int((~faulted).sum()):,} that did not "
          f"fault before: median kept / before {c_ops:.3f} (the host); the {int(faulted.sum())} "
          f"that did: {m_ops:.3f} of it (bound <= 0.85)", m_ops <= 0.85)
    po.to_csv(out / "paired_ops.csv", index=False)

    pr = paired_rows(k_rows, b_rows, variant, a.ms_per_mib)
    c_rows = float(pr.loc[pr["group"] == "none", "ratio"].median())
    by = pr.assign(norm=pr["ratio"] / c_rows).groupby("group")["norm"].agg(["size", "median"])
    m_large = float(by.loc["large", "median"]) if "large" in by.index else float("nan")
    judge("X3", f"{len(pr):,} rows paired; 'none' median kept / before {c_rows:.3f} (the "
          f"host); of it: " + ", ".join(f"{g} {by.loc[g, 'median']:.3f} ({int(by.loc[g, 'size'])} "
                                        "rows)" for g in by.index)
          + " (bound: large <= 0.92)", bool(m_large <= 0.92))
    pr.to_csv(out / "paired_rows.csv", index=False)

    rep = files["replication"].parent
    r2 = replication_cell(rep, "batch_small", "r2")
    judge("X4", f"kernel law, small batches held out: R² {r2:.3f} ± "
          f"{replication_cell(rep, 'batch_small', 'r2_sd'):.3f} (bound >= 0.95)", r2 >= 0.95)
    cost = KernelModel(faults=variant).fit(k_ops).fault_ms_per_mib_
    judge("X5", f"fault cost fitted on the kept operators {cost:.3f} ms per MiB (before: "
          f"{a.ms_per_mib}; bound <= 0.05)", cost <= 0.05)
    w10 = replication_cell(rep, "random", "within_10pct")
    judge("X6", f"kernel law, random split: {w10:.1%} within +-10 % ± "
          f"{replication_cell(rep, 'random', 'within_10pct_sd'):.1%} (bound >= 95 %)",
          w10 >= 0.95)
    same = memory_identical(pr, "peak_mem_mib_kept", "peak_mem_mib_before")
    judge("X7", f"peak memory identical in {same:.2%} of {len(pr):,} paired rows (bound >= 99 %)",
          same >= 0.99)
    lines += ["", judge.held_line()]
    write_score(out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
