"""Judge pre-registration M (``results/cross_family/probe/cpu_epyc_zen5_2c/sitting2/
PREREGISTRATION.md``) from ``scripts/probe_sitting_test.py``'s outputs in ``DIR``
(``summary.csv``, ``gains.csv``, ``agreement.txt``); writes ``DIR/scores.txt``. Times nothing.

``python scripts/probe_sitting_score.py results/cross_family/probe/cpu_epyc_zen5_2c/sitting2``
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd

DEPTHWISE = ("efficientnet", "mobilenetv2")
DATASETS = ("fresh", "passes", "s12")
JUDGED = "resnet+probe"


def judge(summary: pd.DataFrame, gains: pd.DataFrame, halves_pct: float) -> list[tuple[str, str, bool]]:
    """``(id, what was measured, held)`` for M1-M5."""
    few = summary[(summary["model"] == "offset") & (summary["k"] == 10)]
    mape = few.set_index(["dataset", "family", "source"])["mape_pct_mean"]
    gain = gains.set_index(["dataset", "family", "source"])["gain_pts_mean"]
    out = []
    for i, fam in ((1, "efficientnet"), (2, "mobilenetv2")):
        g = [gain[(d, fam, JUDGED)] for d in DATASETS]
        out.append((f"M{i}", f"{fam} gain (points) " + ", ".join(
            f"{d} {v:+.2f}" for d, v in zip(DATASETS, g, strict=True)),
            sum(v >= 1.0 for v in g) >= 2))
    cells = {(d, f): mape[(d, f, JUDGED)] for d in DATASETS for f in DEPTHWISE}
    out.append(("M3", "resnet+probe MAPE % " + ", ".join(
        f"{d}/{f} {v:.2f}" for (d, f), v in cells.items()), min(cells.values()) > 10.0))
    out.append(("M4", f"halves median |log ratio| {halves_pct:.2f} %", halves_pct <= 8.0))
    vgg = {d: mape[(d, "vgg", JUDGED)] - mape[(d, "vgg", "resnet")] for d in ("passes", "s12")}
    out.append(("M5", "vgg resnet+probe minus resnet (points) " + ", ".join(
        f"{d} {v:+.2f}" for d, v in vgg.items()), all(v <= 1.0 for v in vgg.values())))
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
    lines = [f"# python scripts/probe_sitting_score.py {args.dir}",
             "pre-registration M (results/cross_family/probe/cpu_epyc_zen5_2c/sitting2/"
             "PREREGISTRATION.md)", ""]
    lines += [f"{i}: {'held' if ok else 'missed'} -- {what}" for i, what, ok in rows]
    lines += ["", f"{sum(ok for *_, ok in rows)} of {len(rows)} held"]
    text = "\n".join(lines) + "\n"
    (args.dir / "scores.txt").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
