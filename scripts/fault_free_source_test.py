"""Pre-registration T, addendum (session 28): do the ResNet configs that page-fault explain why
a ResNet source timed alone predicts the depthwise families worse than one timed beside them?

``scripts/list_context_faults.py`` found 11 of M's 400 ResNet configs taking at least 1 MiB of
minor faults per timed call in either list (:func:`list_context_faults.faulting_configs`), and
session 27's signature lying in them. This test re-scores four of session 27's sources with and
without those configs (nothing is timed): Q's alone sitting (``alone``), R's (``alone2``), S's
sitting beside vgg configs only (``beside_vgg``) and sitting 3 beside depthwise configs
(``beside``, the control), as in ``scripts/alone_source_test.py`` (kernel law, ``offset``,
k = 10, 5 seeds, 70 % of architectures held out) on the four noisy target data sets (sitting
3's, N's, P's and session 23's new-family rows), efficientnet and mobilenetv2 only.

Each source's gap (:func:`gaps`): the mean over the four target sets of its MAPE minus the
beside source's, all sources with the faulting configs (``with``) and all without them
(``without``). Writes ``scores.csv``, ``summary.csv`` and ``scores.txt`` (the gaps and the
pre-registered judgement) into ``OUT``.

``python scripts/fault_free_source_test.py cpu_epyc_zen5_2c --out results/cross_family/sitting_source/cpu_epyc_zen5_2c/faults/source_test``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from alone_source_score import noisy_mean  # noqa: E402
from alone_source_test import NOISY, input_files  # noqa: E402
from list_context_faults import faulting_configs  # noqa: E402
from probe_source_test import judged_bench, scores, summarise  # noqa: E402

from carb_lib.evaluation.cross_family import kernel_law_rows  # noqa: E402

FAMILIES = ("efficientnet", "mobilenetv2")
#: Source name -> its rows in ``alone_source_test.input_files`` (the beside source is sitting 3's).
SOURCES = {"alone": "resnet_alone", "alone2": "resnet_alone2", "beside_vgg": "resnet_beside_vgg",
           "beside": "resnet_beside"}
#: Pre-registered bounds (points of MAPE): T4 Q's alone, T5 R's and S's, T6 the beside source.
T4_PTS, T5_PTS, T6_PTS = 1.0, 1.5, 1.0


def gaps(summary: pd.DataFrame) -> pd.DataFrame:
    """Per source, family and variant (``with`` / ``without`` the faulting configs): the mean
    ``offset`` k = 10 MAPE over the noisy target sets and its gap to the ``beside`` source of
    the same variant, in points."""
    few = summary[(summary["model"] == "offset") & (summary["k"] == 10)]
    m = few.set_index(["dataset", "family", "source"])["mape_pct_mean"]
    rows = []
    for var in ("with", "without"):
        for fam in FAMILIES:
            base = noisy_mean(m, fam, f"beside_{var}")
            for src in SOURCES:
                mean = noisy_mean(m, fam, f"{src}_{var}")
                rows.append({"variant": var, "family": fam, "source": src, "mape_pct": mean,
                             "gap_pts": mean - base})
    return pd.DataFrame(rows)


def judgement(g: pd.DataFrame) -> list[str]:
    """T4-T6 against the pre-registered bounds, one line each."""
    gap = g.set_index(["variant", "family", "source"])["gap_pts"]
    mape = g.set_index(["variant", "family", "source"])["mape_pct"]
    lines = []
    t4 = [gap[("without", f, "alone")] for f in FAMILIES]
    lines.append(f"T4 (alone within {T4_PTS} pt of beside without the faulting configs): "
                 f"{' / '.join(f'{v:+.2f}' for v in t4)} -> "
                 f"{'held' if all(abs(v) <= T4_PTS for v in t4) else 'missed'}")
    t5 = [gap[("without", f, s)] for s in ("alone2", "beside_vgg") for f in FAMILIES]
    lines.append(f"T5 (alone2 and beside_vgg within {T5_PTS} pt): "
                 f"{' / '.join(f'{v:+.2f}' for v in t5)} -> "
                 f"{'held' if all(abs(v) <= T5_PTS for v in t5) else 'missed'}")
    t6 = [mape[("without", f, "beside")] - mape[("with", f, "beside")] for f in FAMILIES]
    lines.append(f"T6 (the beside source moves by at most {T6_PTS} pt): "
                 f"{' / '.join(f'{v:+.2f}' for v in t6)} -> "
                 f"{'held' if all(abs(v) <= T6_PTS for v in t6) else 'missed'}")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    root = Path(f"results/cross_family/sitting_source/{args.platform}")
    faults = root / "faults" / "faults.parquet"
    if not faults.exists():
        raise SystemExit(f"fault_free_source_test: missing {faults} (scripts/list_context_faults.py)")
    drop = faulting_configs(pd.read_parquet(faults))
    files = input_files(args.platform, root)
    files["resnet_alone2"] = root / "alone2" / "resnet_rows.parquet"
    files["resnet_beside_vgg"] = root / "beside_vgg" / "resnet_rows.parquet"
    names = [*SOURCES.values(), *NOISY]
    for n in names:
        if not files[n].exists():
            raise SystemExit(f"fault_free_source_test: missing {files[n]}")
    rows = dict(zip(names, kernel_law_rows(judged_bench(args.platform),
                                           *(files[n] for n in names)), strict=True))
    sources = {}
    for var in ("with", "without"):
        for src, key in SOURCES.items():
            r = rows[key]
            if var == "without":
                r = r[~r["config_id"].isin(drop)].reset_index(drop=True)
            sources[f"{src}_{var}"] = (r, False)
    sc = pd.concat([scores(sources, rows[ds][rows[ds]["family"].isin(FAMILIES)], None,
                           seeds=args.seeds, test_fraction=0.7, label=ds) for ds in NOISY],
                   ignore_index=True)
    summ, _ = summarise(sc, base="beside_with")
    g = gaps(summ)
    args.out.mkdir(parents=True, exist_ok=True)
    sc.to_csv(args.out / "scores.csv", index=False)
    summ.to_csv(args.out / "summary.csv", index=False)
    lines = [f"# python scripts/fault_free_source_test.py {args.platform} --out {args.out}",
             f"faulting configs dropped in 'without' ({len(drop)}): {', '.join(drop)}", "",
             "offset, k = 10, latency MAPE % (mean over the noisy target sets) and gap to the "
             "beside source of the same variant (points):",
             g.round(2).to_string(index=False), "", *judgement(g)]
    (args.out / "scores.txt").write_text("\n".join(lines) + "\n")
    print((args.out / "scores.txt").read_text(), end="")


if __name__ == "__main__":
    main()
