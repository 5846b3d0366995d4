"""Pre-registration W (session 28): with the heap kept for sources *and* targets, does the list a
ResNet source is timed in still matter?

``NO_TEST=1 CAMPAIGN_PROTOCOL='{..., "cpu_keep_heap": true}' scripts/sitting_source_campaign.sh
PLATFORM 4 2100 keep_beside 8`` times N's 837-config list (M's 400 ResNet configs beside the 437
new-family configs of session 23's passes rows) with the heap kept, into ``ROOT/keep_beside``.
This test fits the kernel-law source model (latency only, shared features, default preset) on

* ``resnet_keep_beside``: that sitting's ResNet rows (the kept control);
* ``resnet_keep_heap``, ``resnet_keep_heap2``: U's and V's ResNet rows, alone, heap kept;
* ``resnet_beside``: sitting 3's ResNet rows (beside, default heap);
* ``resnet_alone``: Q's ResNet rows (alone, default heap);

and scores them zero-shot and with ``offset`` at k = 10, 5 seeds, 70 % of architectures held
out, on two target data sets: ``keep_beside`` (the kept sitting's new-family rows) and
``beside`` (sitting 3's). Writes ``scores.csv``, ``summary.csv`` and ``scores.txt`` (the table
and the judgement, W1 reading the kept sitting's ``pass_rows.parquet``) into
``ROOT/keep_beside``.

``python scripts/keep_heap_test.py cpu_epyc_zen5_2c``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from list_context_faults import PAGES_PER_MIB  # noqa: E402
from probe_source_score import DEPTHWISE, offset_cells  # noqa: E402
from probe_source_test import judged_bench, scores, summarise  # noqa: E402

from carb_lib.evaluation.cross_family import kernel_law_rows  # noqa: E402

CONTROL = "resnet_keep_beside"
KEPT_ALONE = ("resnet_keep_heap", "resnet_keep_heap2")
#: Pre-registered bounds: W2 (points of MAPE) and W3 (% MAPE).
W2_PTS, W3_PCT = 1.0, 10.0


def input_files(root: Path) -> dict[str, Path]:
    """Every input of the test by name (sources ``resnet_*``, target data sets otherwise)."""
    return {"resnet_keep_beside": root / "keep_beside" / "resnet_rows.parquet",
            "resnet_keep_heap": root / "keep_heap" / "resnet_rows.parquet",
            "resnet_keep_heap2": root / "keep_heap2" / "resnet_rows.parquet",
            "resnet_beside": root / "sitting3" / "resnet_rows.parquet",
            "resnet_alone": root / "alone" / "resnet_rows.parquet",
            "keep_beside": root / "keep_beside" / "target_rows.parquet",
            "beside": root / "sitting3" / "target_rows.parquet"}


def judge(summary: pd.DataFrame, pass_rows: pd.DataFrame) -> list[tuple[str, str, bool]]:
    """``(id, what was measured, held)`` for W1-W3 (offset, k = 10, on the kept targets)."""
    m = offset_cells(summary, "mape_pct_mean")
    ok = pass_rows[pass_rows["status"] == "ok"]
    faults = ok["minor_faults_per_call"].astype(float)
    w2 = {(s, f): m[("keep_beside", f, s)] - m[("keep_beside", f, CONTROL)]
          for s in KEPT_ALONE for f in DEPTHWISE}
    w3 = {f: m[("keep_beside", f, CONTROL)] for f in DEPTHWISE}
    return [
        ("W1", f"pass rows with >= {PAGES_PER_MIB} minor faults per call: "
         f"{int((faults >= PAGES_PER_MIB).sum())} of {len(faults)}",
         len(faults) > 0 and bool((faults < PAGES_PER_MIB).all())),
        ("W2", "on the kept targets, kept alone minus kept beside (points) "
         + ", ".join(f"{s.removeprefix('resnet_')} {f} {v:+.2f}" for (s, f), v in w2.items()),
         all(abs(v) <= W2_PTS for v in w2.values())),
        ("W3", "the kept beside source on the kept targets, MAPE % "
         + ", ".join(f"{f} {v:.2f}" for f, v in w3.items()), w3["mobilenetv2"] <= W3_PCT),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    root = Path(f"results/cross_family/sitting_source/{args.platform}")
    out = root / "keep_beside"
    files = input_files(root)
    for f in [*files.values(), out / "pass_rows.parquet"]:
        if not f.exists():
            raise SystemExit(f"keep_heap_test: missing {f}")
    rows = dict(zip(files, kernel_law_rows(judged_bench(args.platform), *files.values()),
                    strict=True))
    sources = {name: (rows[name], False) for name in files if name.startswith("resnet_")}
    sc = pd.concat([scores(sources, rows[ds], None, seeds=args.seeds, test_fraction=0.7, label=ds)
                    for ds in ("keep_beside", "beside")], ignore_index=True)
    summ, _ = summarise(sc, base=CONTROL)
    sc.to_csv(out / "scores.csv", index=False)
    summ.to_csv(out / "summary.csv", index=False)
    rows_ = judge(summ, pd.read_parquet(out / "pass_rows.parquet"))
    few = summ[(summ["model"] == "offset") & (summ["k"] == 10)]
    table = few.pivot_table(index=["dataset", "family"], columns="source",
                            values="mape_pct_mean").round(2)
    lines = [f"# python scripts/keep_heap_test.py {args.platform}",
             "pre-registration W (results/cross_family/sitting_source/"
             f"{args.platform}/keep_beside/PREREGISTRATION.md)", "",
             "offset, k = 10, latency MAPE % (mean over 5 seeds):",
             table.to_string(), "",
             *[f"{i}: {'held' if ok else 'missed'} -- {what}" for i, what, ok in rows_], "",
             f"{sum(ok for _, _, ok in rows_)} of {len(rows_)} held"]
    (out / "scores.txt").write_text("\n".join(lines) + "\n")
    print((out / "scores.txt").read_text(), end="")


if __name__ == "__main__":
    main()
