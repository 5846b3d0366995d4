"""Judge pre-registration Q (``results/cross_family/sitting_source/cpu_epyc_zen5_2c/alone/PREREGISTRATION.md``)
from ``scripts/alone_source_test.py``'s outputs in ``DIR`` (``summary.csv``, ``agreement.txt``);
writes ``DIR/scores.txt`` and prints it. Times nothing.

``python scripts/alone_source_score.py results/cross_family/sitting_source/cpu_epyc_zen5_2c/alone``
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from alone_source_test import BASE, CONTROL, JUDGED, NOISY  # noqa: E402
from probe_source_score import DEPTHWISE, offset_cells, write_judgement  # noqa: E402

#: Q2 and Q3's least gains over session 12's source, in points.
LEAST_GAIN = {"mobilenetv2": 2.0, "efficientnet": 1.0}


def parse_agreement(text: str) -> dict[str, float]:
    """The numbers Q4 and Q5 read from ``agreement.txt``: both sittings' halves (median |log
    ratio|, in %), and the alone / beside median ratio and median |log| after it (in %)."""
    out = {}
    for name in ("alone", "beside"):
        m = re.search(rf"halves \({name}\): .*?median_abs_log_ratio=([0-9.eE+-]+|nan)", text)
        if m is None:
            raise SystemExit(f"alone_source_score: no halves check of the {name} sitting")
        out[f"halves_{name}_pct"] = 100 * float(m.group(1))
    m = re.search(r"ResNet rows alone / beside, \d+ configs: median ratio ([0-9.]+);.*?"
                  r"median \|log\| after it ([0-9.]+)", text)
    if m is None:
        raise SystemExit("alone_source_score: no alone / beside ratio line")
    out["ratio"], out["log_after_pct"] = float(m.group(1)), 100 * float(m.group(2))
    return out


def judge(summary: pd.DataFrame, agree: dict[str, float]) -> list[tuple[str, str, bool]]:
    """``(id, what was measured, held)`` for Q1-Q7."""
    m = offset_cells(summary, "mape_pct_mean")

    def noisy_mean(fam: str, source: str) -> float:
        return sum(m[(ds, fam, source)] for ds in NOISY) / len(NOISY)

    out = []
    q1 = {f: noisy_mean(f, JUDGED) - noisy_mean(f, CONTROL) for f in DEPTHWISE}
    out.append(("Q1", "alone minus beside, mean over the noisy target sets (points) "
                + ", ".join(f"{f} {v:+.2f}" for f, v in q1.items()),
                all(abs(v) <= 1.5 for v in q1.values())))
    q2 = {f: noisy_mean(f, BASE) - noisy_mean(f, JUDGED) for f in DEPTHWISE}
    out.append(("Q2", "resnet_s12 minus resnet_alone, mean over the noisy target sets (points) "
                + ", ".join(f"{f} {v:+.2f}" for f, v in q2.items()),
                all(v >= LEAST_GAIN[f] for f, v in q2.items())))
    q3 = {f: m[("beside", f, BASE)] - m[("beside", f, CONTROL)] for f in DEPTHWISE}
    out.append(("Q3", "on beside, resnet_s12 minus resnet_beside (points) "
                + ", ".join(f"{f} {v:+.2f}" for f, v in q3.items()),
                all(v >= LEAST_GAIN[f] for f, v in q3.items())))
    out.append(("Q4", f"alone / beside median ratio {agree['ratio']:.4f}, median |log| after it "
                f"{agree['log_after_pct']:.2f} %",
                0.95 <= agree["ratio"] <= 1.05 and agree["log_after_pct"] <= 6.0))
    out.append(("Q5", f"halves median |log ratio| alone {agree['halves_alone_pct']:.2f} %, "
                f"beside {agree['halves_beside_pct']:.2f} %",
                max(agree["halves_alone_pct"], agree["halves_beside_pct"]) <= 8.0))
    cells = {f: m[("beside", f, JUDGED)] for f in DEPTHWISE}
    out.append(("Q6", "resnet_alone MAPE % on beside " + ", ".join(
        f"{f} {v:.2f}" for f, v in cells.items()), all(v > 10.0 for v in cells.values())))
    v = noisy_mean("vgg", JUDGED) - noisy_mean("vgg", BASE)
    out.append(("Q7", f"vgg: resnet_alone minus resnet_s12, mean over the noisy target sets "
                f"{v:+.2f} points", v >= 1.0))
    return out


def reading(rows: list[tuple[str, str, bool]], summary: pd.DataFrame) -> str:
    """The pre-registered reading of Q1: neighbours ruled out, neighbours matter, or undecided."""
    if rows[0][2]:
        return "reading: Q1 held -- the neighbours are ruled out; the host's state stays the candidate"
    m = offset_cells(summary, "mape_pct_mean")
    worse = all(sum(m[(ds, f, JUDGED)] - m[(ds, f, CONTROL)] for ds in NOISY) > 0
                for f in DEPTHWISE)
    return ("reading: Q1 missed with resnet_alone worse for both families -- the neighbours matter"
            if worse else "reading: undecided")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", type=Path)
    args = ap.parse_args()
    for name in ("summary.csv", "agreement.txt"):
        if not (args.dir / name).exists():
            raise SystemExit(f"alone_source_score: no {name} in {args.dir}")
    summary = pd.read_csv(args.dir / "summary.csv")
    rows = judge(summary, parse_agreement((args.dir / "agreement.txt").read_text()))
    text = write_judgement(args.dir, f"python scripts/alone_source_score.py {args.dir}",
                           "pre-registration Q (results/cross_family/sitting_source/"
                           "cpu_epyc_zen5_2c/alone/PREREGISTRATION.md)", rows)
    line = reading(rows, summary)
    with (args.dir / "scores.txt").open("a") as fh:
        fh.write(line + "\n")
    print(text + line)


if __name__ == "__main__":
    main()
