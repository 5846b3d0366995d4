"""Judge pre-registration M (``results/cross_family/probe/cpu_epyc_zen5_2c/sitting2/
PREREGISTRATION.md``) from ``scripts/probe_sitting_test.py``'s outputs in ``DIR``
(``summary.csv``, ``gains.csv``, ``agreement.txt``); writes ``DIR/scores.txt``. Times nothing.

``python scripts/probe_sitting_score.py results/cross_family/probe/cpu_epyc_zen5_2c/sitting2``
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_source_score import (  # noqa: E402
    depthwise_cells,
    gain_checks,
    offset_cells,
    vgg_check,
    write_judgement,
)


def judge(summary: pd.DataFrame, gains: pd.DataFrame, halves_pct: float) -> list[tuple[str, str, bool]]:
    """``(id, what was measured, held)`` for M1-M5."""
    mape = offset_cells(summary, "mape_pct_mean")
    out = gain_checks(gains, "M", at_least=1.0)
    text, cells = depthwise_cells(mape)
    out.append(("M3", text, min(cells.values()) > 10.0))
    out.append(("M4", f"halves median |log ratio| {halves_pct:.2f} %", halves_pct <= 8.0))
    out.append(vgg_check("M5", mape))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", type=Path)
    args = ap.parse_args()
    m = re.search(r"median_abs_log_ratio=([0-9.eE+-]+|nan)", (args.dir / "agreement.txt").read_text())
    if m is None:
        raise SystemExit(f"probe_sitting_score: no halves check in {args.dir / 'agreement.txt'}")
    rows = judge(pd.read_csv(args.dir / "summary.csv"), pd.read_csv(args.dir / "gains.csv"),
                 100 * float(m.group(1)))
    print(write_judgement(args.dir, f"python scripts/probe_sitting_score.py {args.dir}",
                          "pre-registration M (results/cross_family/probe/cpu_epyc_zen5_2c/"
                          "sitting2/PREREGISTRATION.md)", rows), end="")


if __name__ == "__main__":
    main()
