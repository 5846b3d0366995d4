"""Does a source that holds *other* new families (siblings) predict a family better?

Notebook 05's source model is fitted on the ResNet rows alone. A user who has measured some
families and asks for the next one would fit it on everything measured. For each new family
``F`` of ``TARGET`` this script fits the kernel-law source model (``CARBRegressor``,
``feature_set="shared"``, the default preset) on

* the ResNet rows alone (notebook 05's source; the family's own model beside it),
* the ResNet rows and one sibling family's rows, for each sibling,
* the ResNet rows and every sibling's rows (``cross_family_evaluation(siblings=True)``),

and scores zero-shot and ``offset`` with k = 10 rows of ``F`` on ``F``'s held-out
architectures. Every source sees the same split, the same k rows and the same model seeds per
seed, so the gains are paired: ``gain_pts`` is the per-seed difference in latency MAPE to the
ResNet-only source with ``offset`` at k = 10 (notebook 05's judged cell), mean ± sd over seeds.

The single-sibling rows are the control: if adding *any* family's rows helped as much as adding a
depthwise one, the gain would be the host speed the sibling rows share with ``F``'s (they were
measured in the same campaign), not what they teach about depthwise networks.

``python scripts/sibling_source_check.py SOURCE TARGET BENCH [BENCH ...] --out DIR``
"""

from __future__ import annotations

import argparse
import io
import warnings
from pathlib import Path

import pandas as pd

from carb_lib.evaluation import cross_family_evaluation
from carb_lib.evaluation.cross_family import kernel_law_rows

K = 10
METHOD = "offset"
BASELINE = ("resnet", METHOD, K)


def scores_by_source(src: pd.DataFrame, tgt: pd.DataFrame, *, seeds: int,
                     preset: str) -> pd.DataFrame:
    """Per-seed latency scores of every (family, source, model) as described above."""
    fams = sorted(tgt["family"].astype(str).unique())
    common = {"ks": (K,), "n_seeds": seeds, "targets": ("latency_ms",), "methods": (METHOD,),
              "default_method": METHOD, "latency_law": "kernel", "preset": preset,
              "progress": False}
    parts = []
    for fam in fams:
        others = [f for f in fams if f != fam]
        runs = [("resnet", cross_family_evaluation(src, tgt, families=[fam], **common))]
        for sib in others if len(others) > 1 else ():
            sib_rows = tgt[tgt["family"].astype(str) == sib]
            runs.append((f"resnet+{sib}", cross_family_evaluation(
                pd.concat([src, sib_rows], ignore_index=True), tgt, families=[fam],
                own_model=False, **common)))
        runs.append(("resnet+" + "+".join(others), cross_family_evaluation(
            src, tgt, families=[fam], own_model=False, siblings=True, **common)))
        for name, res in runs:
            parts.append(res.scores.assign(source=name))
        print(f"{fam}: {len(runs)} sources", flush=True)
    return pd.concat(parts, ignore_index=True)


def summarise(scores: pd.DataFrame) -> pd.DataFrame:
    base = scores[(scores["source"] == BASELINE[0]) & (scores["model"] == BASELINE[1])
                  & (scores["k"] == BASELINE[2])].set_index(["family", "seed"])["mape_pct"]
    s = scores.join(base.rename("base"), on=["family", "seed"])
    s["gain_pts"] = s["base"] - s["mape_pct"]
    g = s.groupby(["family", "source", "model", "k"], sort=False)
    out = g[["mape_pct", "within_10pct", "spearman", "gain_pts"]].agg(["mean", "std"])
    out.columns = [f"{m}_{'sd' if a == 'std' else a}" for m, a in out.columns]
    out["n_seeds"] = g["seed"].nunique()
    out["n_test"] = g["n_test"].median()
    return out.reset_index()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source", type=Path, help="the platform's ResNet rows")
    ap.add_argument("target", type=Path, help="the platform's new-family rows")
    ap.add_argument("bench", type=Path, nargs="+",
                    help="the platform's timed operators; several files are read as one")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--preset", default="default")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    src, tgt = kernel_law_rows(args.bench, args.source, args.target)
    scores = scores_by_source(src, tgt, seeds=args.seeds, preset=args.preset)
    table = summarise(scores)
    buf = io.StringIO()
    benches = " ".join(map(str, args.bench))
    buf.write(f"# python scripts/sibling_source_check.py {args.source} {args.target} {benches} "
              f"--seeds {args.seeds} --preset {args.preset} --out {args.out}\n")
    buf.write(f"latency, held-out architectures, kernel law, {args.seeds} seeds (mean ± sd); "
              f"gain_pts: MAPE points below the ResNet-only source with {METHOD} at k = {K}, "
              "paired by seed\n")
    n_rows = tgt["family"].astype(str).value_counts().sort_index()
    buf.write("rows: " + ", ".join(f"{f} {n}" for f, n in n_rows.items())
              + f"; ResNet {len(src)}\n\n")
    show = table.assign(**{m: table[f"{m}_mean"].map("{:.2f}".format) + " ± "
                           + table[f"{m}_sd"].map("{:.2f}".format)
                           for m in ("mape_pct", "gain_pts")},
                        within_10pct=table["within_10pct_mean"].round(3),
                        spearman=table["spearman_mean"].round(3))
    cols = ["family", "source", "model", "k", "n_test", "mape_pct", "gain_pts", "within_10pct",
            "spearman"]
    with pd.option_context("display.width", 200, "display.max_colwidth", 40):
        buf.write(show[cols].to_string(index=False) + "\n")
    args.out.mkdir(parents=True, exist_ok=True)
    scores.to_csv(args.out / "scores.csv", index=False)
    table.to_csv(args.out / "summary.csv", index=False)
    (args.out / "check.txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
