"""Judge pre-registration N (``results/cross_family/sitting_source/PREREGISTRATION.md``) from
``scripts/sitting_source_test.py``'s outputs in ``DIR`` (``summary.csv``, ``agreement.txt``);
writes ``DIR/scores.txt`` and prints it. Times nothing. With ``--replication``: pre-registration
P, the second sitting (``.../cpu_epyc_zen5_2c/sitting2/PREREGISTRATION.md``).

``python scripts/sitting_source_score.py results/cross_family/sitting_source/cpu_epyc_zen5_2c``
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_source_score import DEPTHWISE, offset_cells, write_judgement  # noqa: E402

JUDGED, BASE = "resnet_now", "resnet_s12"


def _both(name: str, what: str, values: dict[str, float], ok) -> tuple[str, str, bool]:
    """A prediction over both depthwise families: held when ``ok`` holds for each value."""
    return (name, what + " " + ", ".join(f"{f} {v:+.2f}" for f, v in values.items()),
            all(ok(v) for v in values.values()))


def judge(summary: pd.DataFrame, halves_pct: float) -> list[tuple[str, str, bool]]:
    """``(id, what was measured, held)`` for N1-N8."""
    m = offset_cells(summary, "mape_pct_mean")

    def diff(ds: str, fam: str, other: str) -> float:  # other's MAPE minus the judged source's
        return m[(ds, fam, other)] - m[(ds, fam, JUDGED)]

    out = []
    for name, fam in (("N1", "mobilenetv2"), ("N2", "efficientnet")):
        v = diff("now", fam, BASE)
        out.append((name, f"{fam} on now: resnet_s12 minus resnet_now {v:+.2f} points", v >= 1.0))
    out.append(_both("N3", "on now, resnet_s12_400 minus resnet_now (points)",
                     {f: diff("now", f, "resnet_s12_400") for f in DEPTHWISE}, lambda v: v >= 1.0))
    out.append(_both("N4", "gain of resnet_now over resnet_s12, now minus passes (points)",
                     {f: diff("now", f, BASE) - diff("passes", f, BASE) for f in DEPTHWISE},
                     lambda v: v >= 1.0))
    out.append(_both("N5", "on now, resnet_m minus resnet_now (points)",
                     {f: diff("now", f, "resnet_m") for f in DEPTHWISE}, lambda v: v >= 1.0))
    cells = {f: m[("now", f, JUDGED)] for f in DEPTHWISE}
    out.append(("N6", "resnet_now MAPE % on now " + ", ".join(
        f"{f} {v:.2f}" for f, v in cells.items()), all(v <= 10.0 for v in cells.values())))
    v = -diff("now", "vgg", BASE)
    out.append(("N7", f"vgg on now: resnet_now minus resnet_s12 {v:+.2f} points", v <= 1.0))
    out.append(("N8", f"halves median |log ratio| {halves_pct:.2f} %", halves_pct <= 8.0))
    return out


def judge_replication(summary: pd.DataFrame, halves_pct: float) -> list[tuple[str, str, bool]]:
    """``(id, what was measured, held)`` for pre-registration P's P1-P6 (a second sitting:
    ``now`` and ``resnet_now`` are its rows, ``other`` and ``resnet_other`` the first's)."""
    m = offset_cells(summary, "mape_pct_mean")
    out = []
    for name, fam in (("P1", "mobilenetv2"), ("P2", "efficientnet")):
        v = m[("now", fam, BASE)] - m[("now", fam, JUDGED)]
        out.append((name, f"{fam} on now: resnet_s12 minus resnet_now {v:+.2f} points", v >= 1.0))
    match = {f: (m[("now", f, "resnet_other")] - m[("now", f, JUDGED)])
             + (m[("other", f, JUDGED)] - m[("other", f, "resnet_other")]) for f in DEPTHWISE}
    out.append(_both("P3", "match advantage, off-diagonal minus diagonal (points)", match,
                     lambda v: v >= 2.0))
    out.append(("P4", f"halves median |log ratio| {halves_pct:.2f} %", halves_pct <= 8.0))
    cells = {f: m[("now", f, JUDGED)] for f in DEPTHWISE}
    out.append(("P5", "resnet_now MAPE % on now " + ", ".join(
        f"{f} {v:.2f}" for f, v in cells.items()), all(v > 10.0 for v in cells.values())))
    v = m[("now", "vgg", JUDGED)] - m[("now", "vgg", BASE)]
    out.append(("P6", f"vgg on now: resnet_now minus resnet_s12 {v:+.2f} points", v >= 1.0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--replication", action="store_true",
                    help="judge pre-registration P (a second sitting, tested with --other)")
    args = ap.parse_args()
    for name in ("summary.csv", "agreement.txt"):
        if not (args.dir / name).exists():
            raise SystemExit(f"sitting_source_score: no {name} in {args.dir}")
    m = re.search(r"median_abs_log_ratio=([0-9.eE+-]+|nan)", (args.dir / "agreement.txt").read_text())
    if m is None:
        raise SystemExit(f"sitting_source_score: no halves check in {args.dir / 'agreement.txt'}")
    summary, halves = pd.read_csv(args.dir / "summary.csv"), 100 * float(m.group(1))
    if args.replication:
        rows, what = judge_replication(summary, halves), "P (results/cross_family/sitting_source/" \
            "cpu_epyc_zen5_2c/sitting2/PREREGISTRATION.md)"
    else:
        rows, what = judge(summary, halves), "N (results/cross_family/sitting_source/" \
            "PREREGISTRATION.md)"
    flag = " --replication" if args.replication else ""
    print(write_judgement(args.dir, f"python scripts/sitting_source_score.py {args.dir}{flag}",
                          f"pre-registration {what}", rows), end="")


if __name__ == "__main__":
    main()
