"""Judge pre-registration L (``results/cross_family/probe/PREREGISTRATION.md``) from the outputs
of ``scripts/probe_source_test.py``: reads ``DIR/summary.csv``, ``DIR/gains.csv`` and
``DIR/speed.txt``, writes ``DIR/scores.txt`` and prints it. Times nothing.

``python scripts/probe_source_score.py results/cross_family/probe/cpu_epyc_zen5_2c``
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd

DEPTHWISE = ("efficientnet", "mobilenetv2")
DATASETS = ("fresh", "passes", "s12")
JUDGED = "resnet+probe"


def offset_cells(summary: pd.DataFrame, column: str) -> pd.Series:
    """``column`` of the ``offset`` k = 10 rows, indexed by data set, family and source."""
    few = summary[(summary["model"] == "offset") & (summary["k"] == 10)]
    return few.set_index(["dataset", "family", "source"])[column]


def gain_checks(gains: pd.DataFrame, prefix: str, *, at_least: float) -> list[tuple[str, str, bool]]:
    """``<prefix>1`` / ``<prefix>2``: the judged source gains ``at_least`` points for
    efficientnet / mobilenetv2 on at least 2 of the 3 data sets."""
    gain = gains.set_index(["dataset", "family", "source"])["gain_pts_mean"]
    out = []
    for i, fam in enumerate(DEPTHWISE, start=1):
        g = [gain[(d, fam, JUDGED)] for d in DATASETS]
        out.append((f"{prefix}{i}", f"{fam} gain (points) " + ", ".join(
            f"{d} {v:+.2f}" for d, v in zip(DATASETS, g, strict=True)),
            sum(v >= at_least for v in g) >= 2))
    return out


def depthwise_cells(mape: pd.Series) -> tuple[str, dict[tuple[str, str], float]]:
    """The judged source's six depthwise cells, and their text."""
    cells = {(d, f): mape[(d, f, JUDGED)] for d in DATASETS for f in DEPTHWISE}
    return "resnet+probe MAPE % " + ", ".join(
        f"{d}/{f} {v:.2f}" for (d, f), v in cells.items()), cells


def vgg_check(name: str, mape: pd.Series) -> tuple[str, str, bool]:
    """vgg is not hurt: the judged source at most 1.0 point above ``resnet`` on ``passes``
    and ``s12``."""
    vgg = {d: mape[(d, "vgg", JUDGED)] - mape[(d, "vgg", "resnet")] for d in ("passes", "s12")}
    return (name, "vgg resnet+probe minus resnet (points) " + ", ".join(
        f"{d} {v:+.2f}" for d, v in vgg.items()), all(v <= 1.0 for v in vgg.values()))


def write_judgement(out: Path, command: str, title: str,
                    rows: list[tuple[str, str, bool]]) -> str:
    """``out/scores.txt``: the command, the title, one line per prediction and the count."""
    lines = [f"# {command}", title, ""]
    lines += [f"{i}: {'held' if ok else 'missed'} -- {what}" for i, what, ok in rows]
    lines += ["", f"{sum(ok for *_, ok in rows)} of {len(rows)} held"]
    text = "\n".join(lines) + "\n"
    (out / "scores.txt").write_text(text)
    return text


def judge(summary: pd.DataFrame, gains: pd.DataFrame, factor: float) -> list[tuple[str, str, bool]]:
    """``(id, what was measured, held)`` for L1-L8."""
    mape = offset_cells(summary, "mape_pct_mean")
    rho = offset_cells(summary, "spearman_mean")
    out = gain_checks(gains, "L", at_least=2.0)
    text, cells = depthwise_cells(mape)
    out.append(("L3", text, min(cells.values()) <= 10.0))
    l4 = []
    for fam in DEPTHWISE:
        ahead = [mape[(d, fam, "resnet+siblings")] < mape[(d, fam, JUDGED)] for d in DATASETS]
        l4.append(sum(ahead) >= 2)
    out.append(("L4", "siblings MAPE % " + ", ".join(
        f"{d}/{f} {mape[(d, f, 'resnet+siblings')]:.2f}" for d in DATASETS for f in DEPTHWISE),
        all(l4)))
    out.append(vgg_check("L5", mape))
    diff = {(d, f): mape[(d, f, JUDGED)] - mape[(d, f, "resnet+probe_raw")]
            for d in DATASETS for f in DEPTHWISE}
    out.append(("L6", "scaled minus raw (points) " + ", ".join(
        f"{d}/{f} {v:+.2f}" for (d, f), v in diff.items()),
        all(abs(v) <= 1.0 for v in diff.values())))
    out.append(("L7", f"speed factor {factor:.4f}", 1.0 <= factor <= 1.4))
    rhos = {(d, f): rho[(d, f, JUDGED)] for d in DATASETS for f in DEPTHWISE}
    out.append(("L8", "resnet+probe Spearman " + ", ".join(
        f"{d}/{f} {v:.3f}" for (d, f), v in rhos.items()), min(rhos.values()) >= 0.95))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", type=Path)
    args = ap.parse_args()
    summary = pd.read_csv(args.dir / "summary.csv")
    gains = pd.read_csv(args.dir / "gains.csv")
    m = re.search(r"median ratio ([0-9.]+)", (args.dir / "speed.txt").read_text())
    if m is None:
        raise SystemExit(f"probe_source_score: no speed factor in {args.dir / 'speed.txt'}")
    rows = judge(summary, gains, float(m.group(1)))
    print(write_judgement(args.dir, f"python scripts/probe_source_score.py {args.dir}",
                          "pre-registration L (results/cross_family/probe/PREREGISTRATION.md)",
                          rows), end="")


if __name__ == "__main__":
    main()
