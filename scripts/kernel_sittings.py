"""One operator draw timed in two sittings: how much did the host's speed move, and evenly?

Two kernel benchmarks of the same draw (``carb kernels`` with the same ``--n``, ``--seed`` and
``--sampler``) hold the same operators in the same order. This script pairs them row by row
(refusing two files whose operators differ) and reports the median time ratio new / old, the
share of operators within ±10 % of their old time once that median is divided out, the same
per operator kind and per size (old time in quarters), and the correlation of the log ratio
with the log time (a slowdown that grows with the operator's time is not one factor).

``python scripts/kernel_sittings.py data/kernels/cpu_epyc_zen5_2c.parquet
data/kernels/cpu_epyc_zen5_2c_session21.parquet --out results/carb/replication_cpu_epyc_zen5_2c/sittings.txt``
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib.kernels import OP_COLUMNS
from carb_lib.metrics import within_pct

PAIR_COLUMNS = [*OP_COLUMNS, "batch", "precision"]


def paired(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """``old`` and ``new`` row by row: the operator columns, ``old_ms``, ``new_ms`` and
    ``ratio`` (new / old). ``ValueError`` naming the first row where the operators differ."""
    if len(old) != len(new):
        raise ValueError(f"{len(old)} operators against {len(new)}: not the same draw")
    a = old[PAIR_COLUMNS].reset_index(drop=True)
    b = new[PAIR_COLUMNS].reset_index(drop=True)
    differ = ~(a == b).all(axis=1)
    if differ.any():
        i = int(np.flatnonzero(differ)[0])
        raise ValueError(f"row {i}: operator {tuple(a.iloc[i])} against {tuple(b.iloc[i])}: "
                         "not the same draw")
    out = a.assign(old_ms=old["time_ms"].to_numpy(), new_ms=new["time_ms"].to_numpy())
    return out.assign(ratio=out["new_ms"] / out["old_ms"])


def report(p: pd.DataFrame) -> str:
    """The text summary of :func:`paired` rows."""
    med = float(p["ratio"].median())
    p = p.assign(expected_ms=p["old_ms"] * med)  # the old time at this sitting's median speed
    log_r, log_t = np.log(p["ratio"]), np.log(p["old_ms"])
    buf = io.StringIO()
    print(f"{len(p):,} operators paired; time new / old: median {med:.3f} "
          f"(p10 {p['ratio'].quantile(0.1):.3f}, p90 {p['ratio'].quantile(0.9):.3f})", file=buf)
    print(f"with the median divided out: "
          f"{100 * within_pct(p['expected_ms'], p['new_ms'], 10):.1f} % within ±10 %, "
          f"{100 * within_pct(p['expected_ms'], p['new_ms'], 5):.1f} % within ±5 %; "
          f"sd of the log ratio {float(np.log(p['ratio'] / med).std()):.3f}", file=buf)
    print(f"correlation of log ratio with log old time: {np.corrcoef(log_r, log_t)[0, 1]:.2f}",
          file=buf)
    size = pd.qcut(p["old_ms"], 4, labels=["fastest quarter", "second", "third",
                                           "slowest quarter"])
    for name, key in (("kind", p["kind"] + " " + p["precision"]), ("old time", size)):
        g = p.groupby(key, observed=True)
        within = g.apply(lambda x: within_pct(x["expected_ms"], x["new_ms"], 10))
        t = pd.DataFrame({"n": g.size(), "median_ratio": g["ratio"].median().round(3),
                          "within_10pct": (100 * within).round(1)})
        print(f"\nby {name}:\n{t.to_string()}", file=buf)
    return buf.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--out", type=Path, required=True, help="the report (.txt)")
    args = ap.parse_args()
    try:
        p = paired(pd.read_parquet(args.old), pd.read_parquet(args.new))
    except ValueError as e:
        sys.exit(f"kernel_sittings: {e}")
    text = f"# python scripts/kernel_sittings.py {args.old} {args.new} --out {args.out}\n"
    text += report(p)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
