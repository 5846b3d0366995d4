"""Judge pre-registration O (``results/cross_family/source_subset/PREREGISTRATION.md``) from
``scripts/source_subset_check.py``'s outputs: every ``DIR/*/summary.csv`` and ``gains.csv`` (one
folder per data set, as ``scripts/source_subset_blind.sh`` writes them). Writes
``DIR/scores.txt`` and prints it. Times nothing.

``python scripts/source_subset_score.py results/cross_family/source_subset/blind``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_source_score import offset_cells, write_judgement  # noqa: E402

RULE = "where(width <= 1.0 and early_downsample == True)"
BASE = "all"


def read_outputs(root: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The summaries and gains of every data-set folder under ``root``, concatenated."""
    dirs = sorted(d for d in root.iterdir() if (d / "gains.csv").exists())
    if not dirs:
        raise SystemExit(f"source_subset_score: no data-set folder with gains.csv under {root}")
    return (pd.concat([pd.read_csv(d / "summary.csv") for d in dirs], ignore_index=True),
            pd.concat([pd.read_csv(d / "gains.csv") for d in dirs], ignore_index=True))


def judge(summary: pd.DataFrame, gains: pd.DataFrame) -> list[tuple[str, str, bool]]:
    """``(id, what was measured, held)`` for O1-O5."""
    g = gains[gains["source"] == RULE].set_index(["family", "dataset"])["gain_pts_mean"]
    mape, rho = offset_cells(summary, "mape_pct_mean"), offset_cells(summary, "spearman_mean")
    sets = sorted(g.index.get_level_values("dataset").unique())

    def gains_of(fam: str) -> pd.Series:
        return g.loc[fam].reindex(sets)

    def text(fam: str) -> str:
        v = gains_of(fam)
        return f"{fam} gain (points) " + ", ".join(f"{d} {x:+.2f}" for d, x in v.items()) + \
            f"; mean {v.mean():+.2f}"

    mb, ef, vg = gains_of("mobilenetv2"), gains_of("efficientnet"), gains_of("vgg")
    out = [("O1", text("mobilenetv2"), bool((mb > 0).all() and mb.mean() >= 1.5)),
           ("O2", text("efficientnet"), bool((ef <= 0).sum() <= 1 and ef.mean() >= 0.5)),
           ("O3", text("vgg"), bool(vg.mean() < 0))]
    cells = {(d, f): mape[(d, f, RULE)] for d in sets for f in ("efficientnet", "mobilenetv2")}
    out.append(("O4", "rule MAPE % " + ", ".join(f"{d}/{f} {v:.2f}" for (d, f), v in
                                                  cells.items()),
                all(v > 10.0 for v in cells.values())))
    drho = {(d, f): rho[(d, f, RULE)] - rho[(d, f, BASE)] for d in sets
            for f in ("efficientnet", "mobilenetv2")}
    out.append(("O5", "rule minus all, Spearman " + ", ".join(
        f"{d}/{f} {v:+.3f}" for (d, f), v in drho.items()), all(v >= -0.01 for v in drho.values())))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", type=Path)
    args = ap.parse_args()
    summary, gains = read_outputs(args.dir)
    print(write_judgement(args.dir, f"python scripts/source_subset_score.py {args.dir}",
                          "pre-registration O (results/cross_family/source_subset/"
                          "PREREGISTRATION.md)", judge(summary, gains)), end="")


if __name__ == "__main__":
    main()
