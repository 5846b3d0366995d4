"""Pre-registration N's test: does a ResNet source measured in the SAME sitting as the depthwise
target rows predict them better than session 12's quiet ResNet rows?

``scripts/sitting_source_campaign.sh`` measures, in one sitting, the 400 ResNet configs of
pre-registration M and the new families' configs of session 23's fastest-of-8-passes rows
(``passes``). For each target data set and family, the kernel-law source model (latency only,
shared features, default preset) is fitted on

* ``resnet_now``: this sitting's 400 ResNet rows (**the judged source**);
* ``resnet_s12``: session 12's 2,656 quiet ResNet rows (**the baseline**; every gain is
  paired against it, per seed);
* ``resnet_s12_400``: session 12's rows of the same 400 configs (same configs, other sitting);
* ``resnet_m``: pre-registration M's sitting's rows of the same 400 configs (another noisy
  sitting of the same configs);

and scored zero-shot and with ``offset`` at k = 10, 5 seeds. Target data sets:

* ``now``: this sitting's new-family rows, 70 % of architectures held out;
* ``passes``: session 23's rows of the same configs, 70 % held out (the same split);
* ``s12``: session 12's new-family rows, 30 % held out (as in pre-registrations L and M).

With ``--other DIR`` (a replication, pre-registration P), another sitting's folder of this test
adds its ResNet rows as source ``resnet_other`` and its new-family rows as target data set
``other`` (70 % held out): source sitting x target sitting.

Writes ``scores.csv``, ``summary.csv``, ``gains.csv`` and ``agreement.txt`` (the halves check
of this sitting's passes, and this sitting's rows against session 12's, M's and session 23's
rows of the same configs) into ``--out``.

``python scripts/sitting_source_test.py cpu_epyc_zen5_2c --out results/cross_family/sitting_source/cpu_epyc_zen5_2c``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_source_test import judged_bench, ratio_line, scores, summarise  # noqa: E402

from carb_lib.dataset import read_dataset  # noqa: E402
from carb_lib.evaluation.cross_family import kernel_law_rows  # noqa: E402
from carb_lib.passes import pass_agreement, read_passes  # noqa: E402

BASE = "resnet_s12"
JUDGED = "resnet_now"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--other", type=Path, default=None,
                    help="another sitting's folder of this test: its ResNet rows join as source "
                         "resnet_other and its new-family rows as target data set 'other' (70 %% "
                         "held out), for the sitting x sitting comparison of a replication")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    p, out = args.platform, args.out
    fams = Path("data/other_cpus/new_families")
    files = {"resnet_now": out / "resnet_rows.parquet", "now": out / "target_rows.parquet",
             "resnet_s12": Path(f"data/other_cpus/{p}.parquet"),
             "resnet_m": Path(f"results/cross_family/probe/{p}/sitting2/resnet_rows.parquet"),
             "passes": fams / f"{p}_passes.parquet", "s12": fams / f"{p}.parquet"}
    if args.other is not None:
        files |= {"resnet_other": args.other / "resnet_rows.parquet",
                  "other": args.other / "target_rows.parquet"}
    for f in files.values():
        if not f.exists():
            raise SystemExit(f"sitting_source_test: missing {f}")
    bench = judged_bench(p)
    rows = dict(zip(files, kernel_law_rows(bench, *files.values()), strict=True))
    same = rows["resnet_s12"]["config_id"].isin(rows["resnet_now"]["config_id"])
    sources = {name: (rows[name], False) for name in (JUDGED, BASE, "resnet_m")}
    sources["resnet_s12_400"] = (rows["resnet_s12"][same].reset_index(drop=True), False)
    if args.other is not None:
        sources["resnet_other"] = (rows["resnet_other"], False)
    sc = pd.concat([
        scores(sources, rows["now"], None, seeds=args.seeds, test_fraction=0.7, label="now"),
        *([scores(sources, rows["other"], None, seeds=args.seeds, test_fraction=0.7,
                  label="other")] if args.other is not None else []),
        scores(sources, rows["passes"], None, seeds=args.seeds, test_fraction=0.7,
               label="passes"),
        scores(sources, rows["s12"], None, seeds=args.seeds, test_fraction=0.3, label="s12"),
    ], ignore_index=True)
    summ, gains = summarise(sc, base=BASE)
    sc.to_csv(out / "scores.csv", index=False)
    summ.to_csv(out / "summary.csv", index=False)
    gains.to_csv(out / "gains.csv", index=False)
    raw = {k: read_dataset(v) for k, v in files.items()}
    lines = [f"halves: {pass_agreement(read_passes(out / 'pass_rows.parquet'))}",
             ratio_line("ResNet rows / session 12's", raw["resnet_now"], raw["resnet_s12"]),
             ratio_line("ResNet rows / M's sitting's", raw["resnet_now"], raw["resnet_m"]),
             ratio_line("new-family rows / session 23's (passes)", raw["now"], raw["passes"])]
    if args.other is not None:
        lines += [ratio_line("ResNet rows / the other sitting's", raw["resnet_now"],
                             raw["resnet_other"]),
                  ratio_line("new-family rows / the other sitting's", raw["now"], raw["other"])]
    (out / "agreement.txt").write_text("\n".join(lines) + "\n")
    print((out / "agreement.txt").read_text())
    few = summ[(summ["model"] == "offset") & (summ["k"] == 10)]
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(few.pivot_table(index=["dataset", "family"], columns="source",
                              values="mape_pct_mean").round(2))
        print(gains.round(2))


if __name__ == "__main__":
    main()
