"""Pre-registration Z (session 30): the kept heap against a same-day default-heap control.

Two sittings of the same 3,000 operators and the same seeded ResNet plan, one after the other
(``scripts/kept_heap_sitting.sh PLATFORM 1200 DEFAULT_TAG default``, then ``... KEPT_TAG kept``),
each followed by ``scripts/kernel_law_replication.py ROWS OPS --seeds 3 --out
results/carb/replication_PLATFORM_TAG``. ``results/measurement/PLATFORM_KEPT_TAG/PREREGISTRATION.md``
says what is predicted; this script judges it:

* Z0 (precondition, a steady host): each sitting's reference config (``reference.parquet`` of
  its ``carb merge``) has latency CV <= 5 %, and the two sittings' reference medians differ by
  <= 5 %.
* Z1: the kept sitting's operators and rows fault >= 100 times per call in <= 1 % each.
* Z2: the default sitting's operators fault >= 100 times per call in >= 5 % (the control).
* Z3: operators that fault >= 1,000 times per call in the default sitting: median kept /
  default ratio over that of the others <= 0.85 (X2 of ``kept_heap_sitting_score.py``).
* Z4: ResNet rows whose expected fault time is >= 10 % of their default latency, the fault
  cost fitted on the default sitting's operators: median kept / default over that of the rows
  with none <= 0.92 (X3).
* Z5: kept kernel law, small batches held out, R² >= 0.95.   Z6: kept minus default >= -0.01.
* Z7: kept kernel law, random split, >= 95 % within +-10 %.  Z8: kept minus default >= -0.02.
* Z9: peak memory equal between the sittings in >= 99 % of paired rows.

Writes ``score.txt``, ``paired_ops.csv`` and ``paired_rows.csv`` under ``--out`` (default
``results/measurement/PLATFORM_KEPT_TAG``).

``python scripts/paired_heap_score.py cpu_xeon_gnr_2c``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kept_heap_sitting_score import (  # noqa: E402
    FAULTED,
    FAULTS,
    Judge,
    memory_identical,
    missing_file,
    paired_ops,
    paired_rows,
    replication_cell,
    write_score,
)

from carb_lib.dataset import read_dataset  # noqa: E402
from carb_lib.families._alloc import parse_variant  # noqa: E402
from carb_lib.kernels import KernelModel, read_bench  # noqa: E402

#: Z0: the most a sitting's reference config may vary (CV), and the most its median may differ
#: between the two sittings.
STEADY_CV, STEADY_SHIFT = 0.05, 0.05


def reference_stats(path: Path) -> tuple[float, float, int]:
    """Median (ms), CV and count of a sitting's ``ok`` reference-config timings."""
    ref = pd.read_parquet(path)
    lat = ref.loc[ref["status"].astype(str) == "ok", "latency_ms"].astype(float)
    return float(lat.median()), float(lat.std(ddof=1) / lat.mean()), int(len(lat))


def fault_share(df: pd.DataFrame, column: str) -> tuple[float, int]:
    """Share (of the rows with a count) and number of rows faulting >= ``FAULTS`` per call;
    NaN and 0 where no row has a count (files from before the column)."""
    f = df[column] if column in df.columns else pd.Series(np.nan, index=df.index)
    n = int((f >= FAULTS).sum())
    return (n / int(f.notna().sum()) if f.notna().any() else float("nan")), n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--kept", default="session30_kept", help="the kept sitting's file tag")
    ap.add_argument("--default", default="session30_default",
                    help="the default-heap sitting's file tag")
    ap.add_argument("--variant", default="16+fp16", help="this CPU's allocator variant")
    ap.add_argument("--out", type=Path, default=None,
                    help="default results/measurement/PLATFORM_KEPT")
    a = ap.parse_args(argv)
    p = a.platform
    files: dict[str, Path] = {}
    for side, tag in (("kept", a.kept), ("default", a.default)):
        files[f"{side} operators"] = Path(f"data/kernels/{p}_{tag}.parquet")
        files[f"{side} rows"] = Path(f"data/other_cpus/{p}_{tag}.parquet")
        files[f"{side} reference"] = Path(f"results/measurement/{p}_{tag}/reference.parquet")
        files[f"{side} replication"] = Path(
            f"results/carb/replication_{p}_{tag}/replication_summary.csv")
    if missing_file("paired_heap_score", files):
        return 2
    out = a.out or Path(f"results/measurement/{p}_{a.kept}")
    out.mkdir(parents=True, exist_ok=True)
    variant = parse_variant(a.variant)
    ops = {s: read_bench(files[f"{s} operators"]) for s in ("kept", "default")}
    rows = {s: read_dataset(files[f"{s} rows"]) for s in ("kept", "default")}
    rep = {s: files[f"{s} replication"].parent for s in ("kept", "default")}
    lines = [f"# python scripts/paired_heap_score.py {p} --kept {a.kept} --default {a.default}",
             *(f"{s} sitting ({t}): {len(ops[s]):,} operators, {len(rows[s]):,} rows"
               for s, t in (("default", a.default), ("kept", a.kept))), ""]
    judge = Judge(lines)

    ref = {s: reference_stats(files[f"{s} reference"]) for s in ("default", "kept")}
    shift = ref["kept"][0] / ref["default"][0] - 1
    judge("Z0", "reference config: " + "; ".join(
        f"{s} median {m:.2f} ms, CV {cv:.1%} ({n} timings)" for s, (m, cv, n) in ref.items())
        + f"; kept / default median {1 + shift:.3f} (bounds: CV <= {STEADY_CV:.0%} each, "
        f"shift <= {STEADY_SHIFT:.0%})",
        max(ref["default"][1], ref["kept"][1]) <= STEADY_CV and abs(shift) <= STEADY_SHIFT)

    k_op, _ = fault_share(ops["kept"], "faults_per_call")
    k_row, _ = fault_share(rows["kept"], "minor_faults_per_call")
    judge("Z1", f"kept: {k_op:.2%} of operators and {k_row:.2%} of rows fault >= {FAULTS} "
          "times per call (bound 1 % each)", k_op <= 0.01 and bool(k_row <= 0.01))
    d_op, d_n = fault_share(ops["default"], "faults_per_call")
    d_row, d_rn = fault_share(rows["default"], "minor_faults_per_call")
    judge("Z2", f"default: {d_n:,} operators ({d_op:.1%}) fault >= {FAULTS} times per call "
          f"(bound >= 5 %); rows: {d_rn:,} ({d_row:.1%}), not judged", d_op >= 0.05)

    po = paired_ops(ops["kept"], ops["default"])
    faulted = po["faults_per_call_before"] >= FAULTED
    c_ops = float(po.loc[~faulted, "ratio"].median())
    m_ops = float((po.loc[faulted, "ratio"] / c_ops).median()) if faulted.any() else np.nan
    judge("Z3", f"{len(po):,} operators paired; the {int((~faulted).sum()):,} that do not fault "
          f"with the default heap: median kept / default {c_ops:.3f} (the host); the "
          f"{int(faulted.sum())} that do: {m_ops:.3f} of it (bound <= 0.85)",
          bool(m_ops <= 0.85))
    po.to_csv(out / "paired_ops.csv", index=False)

    costs = {s: KernelModel(faults=variant).fit(ops[s]).fault_ms_per_mib_
             for s in ("default", "kept")}
    pr = paired_rows(rows["kept"], rows["default"], variant, costs["default"])
    none = pr["group"] == "none"
    c_rows = float(pr.loc[none, "ratio"].median())
    by = pr.assign(norm=pr["ratio"] / c_rows).groupby("group")["norm"].agg(["size", "median"])
    m_large = float(by.loc["large", "median"]) if "large" in by.index else float("nan")
    judge("Z4", f"{len(pr):,} rows paired, fault cost fitted on the default operators "
          f"{costs['default']:.3f} ms per MiB (on the kept: {costs['kept']:.3f}); 'none' median "
          f"kept / default {c_rows:.3f} (the host); of it: "
          + ", ".join(f"{g} {by.loc[g, 'median']:.3f} ({int(by.loc[g, 'size'])} rows)"
                      for g in by.index) + " (bound: large <= 0.92)", bool(m_large <= 0.92))
    pr.to_csv(out / "paired_rows.csv", index=False)

    law = {s: {"r2": replication_cell(rep[s], "batch_small", "r2"),
               "r2_sd": replication_cell(rep[s], "batch_small", "r2_sd"),
               "w10": replication_cell(rep[s], "random", "within_10pct"),
               "w10_sd": replication_cell(rep[s], "random", "within_10pct_sd")}
           for s in ("default", "kept")}
    k, d = law["kept"], law["default"]
    judge("Z5", f"kept kernel law, small batches held out: R² {k['r2']:.3f} ± {k['r2_sd']:.3f} "
          "(bound >= 0.95)", k["r2"] >= 0.95)
    judge("Z6", f"kept minus default small-batch R²: {k['r2'] - d['r2']:+.3f} (default "
          f"{d['r2']:.3f} ± {d['r2_sd']:.3f}; bound >= -0.01)", k["r2"] - d["r2"] >= -0.01)
    judge("Z7", f"kept kernel law, random split: {k['w10']:.1%} ± {k['w10_sd']:.1%} within "
          "+-10 % (bound >= 95 %)", k["w10"] >= 0.95)
    judge("Z8", f"kept minus default share within +-10 %: {100 * (k['w10'] - d['w10']):+.1f} "
          f"points (default {d['w10']:.1%} ± {d['w10_sd']:.1%}; bound >= -2)",
          k["w10"] - d["w10"] >= -0.02)
    same = memory_identical(pr, "peak_mem_mib_kept", "peak_mem_mib_before")
    judge("Z9", f"peak memory identical in {same:.2%} of {len(pr):,} paired rows (bound >= 99 %)",
          same >= 0.99)
    agree = float((np.abs(np.log(pr.loc[none, "ratio"] / c_rows)) <= np.log(1.1)).mean())
    lines += ["", f"not judged: 'none' rows within +-10 % of each other once the host factor "
              f"{c_rows:.3f} is divided out: {agree:.1%} of {int(none.sum()):,}",
              judge.held_line()]
    write_score(out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
