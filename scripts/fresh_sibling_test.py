"""Pre-registration J (session 24): the sibling source on fresh depthwise rows at batch >= 16.

For each family ``F`` of ``FRESH`` (rows measured today, ``scripts/fresh_depthwise_list.py``),
the target is ``F``'s fresh rows beside the *earlier* rows of the other families (``EARLIER``,
measured on another day with the ResNet rows), and notebook 05's evaluation runs on it
(``cross_family_evaluation``: kernel law, memory and latency, default preset, ``--seeds``
seeds, grouped split of ``F``'s fresh rows with ``--test-fraction`` held out, ``offset`` with
k = 10 of the rest) with three sources:

* ``resnet``: the ResNet rows alone (the issue's source);
* ``resnet+siblings``: the ResNet rows and the earlier rows of the other families
  (``siblings=True``; they share no sitting with ``F``'s fresh rows, so they cannot carry
  today's host speed);
* ``everything``: the ResNet rows and every earlier row, ``F``'s own included (what a user who
  measured ``F`` before would fit).

``python scripts/fresh_sibling_test.py RESNET EARLIER FRESH BENCH [BENCH ...] --out DIR``
writes ``DIR/scores.csv``, ``DIR/summary.csv`` and ``DIR/check.txt``.
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


def scores(src: pd.DataFrame, earlier: pd.DataFrame, fresh: pd.DataFrame, *, seeds: int,
           test_fraction: float) -> pd.DataFrame:
    common = {"ks": (K,), "n_seeds": seeds, "methods": (METHOD,), "default_method": METHOD,
              "latency_law": "kernel", "preset": "default", "test_fraction": test_fraction,
              "own_model": False, "progress": False}
    parts = []
    for fam in sorted(fresh["family"].astype(str).unique()):
        target = pd.concat([fresh[fresh["family"] == fam], earlier[earlier["family"] != fam]],
                           ignore_index=True)
        runs = {
            "resnet": cross_family_evaluation(src, target, families=[fam], **common),
            "resnet+siblings": cross_family_evaluation(src, target, families=[fam],
                                                       siblings=True, **common),
            "everything": cross_family_evaluation(
                pd.concat([src, earlier], ignore_index=True), target, families=[fam], **common),
        }
        parts += [r.scores.assign(source=name) for name, r in runs.items()]
        print(f"{fam}: done", flush=True)
    return pd.concat(parts, ignore_index=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("resnet", type=Path)
    ap.add_argument("earlier", type=Path, help="earlier new-family rows of the platform")
    ap.add_argument("fresh", type=Path, help="the fresh rows")
    ap.add_argument("bench", type=Path, nargs="+")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--test-fraction", type=float, default=0.7)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    src, earlier, fresh = kernel_law_rows(a.bench, a.resnet, a.earlier, a.fresh)
    sc = scores(src, earlier, fresh, seeds=a.seeds, test_fraction=a.test_fraction)
    g = sc.groupby(["family", "target", "source", "model", "k"], sort=False)
    summary = g[["mape_pct", "within_10pct", "spearman"]].agg(["mean", "std"])
    summary.columns = [f"{m}_{'sd' if s == 'std' else s}" for m, s in summary.columns]
    summary["n_test"] = g["n_test"].median()
    summary = summary.reset_index()
    buf = io.StringIO()
    buf.write(f"# python scripts/fresh_sibling_test.py {a.resnet} {a.earlier} {a.fresh} "
              f"{' '.join(map(str, a.bench))} --seeds {a.seeds} --test-fraction "
              f"{a.test_fraction} --out {a.out}\n")
    buf.write(f"fresh rows: {fresh['family'].value_counts().sort_index().to_dict()}; earlier rows: "
              f"{earlier['family'].value_counts().sort_index().to_dict()}; ResNet {len(src)}\n\n")
    show = summary.assign(**{m: summary[f"{m}_mean"].map("{:.3f}".format) + " ± "
                             + summary[f"{m}_sd"].map("{:.3f}".format)
                             for m in ("mape_pct", "within_10pct", "spearman")})
    cols = ["family", "target", "source", "model", "k", "n_test", "mape_pct", "within_10pct",
            "spearman"]
    with pd.option_context("display.width", 200):
        buf.write(show[cols].to_string(index=False) + "\n")
    a.out.mkdir(parents=True, exist_ok=True)
    sc.to_csv(a.out / "scores.csv", index=False)
    summary.to_csv(a.out / "summary.csv", index=False)
    (a.out / "check.txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
