"""Pre-registration Q's test: is a ResNet source timed *alone* as good a source for the depthwise
families as the same configs timed *beside* them?

``scripts/alone_source_campaign.sh`` times pre-registration M's 400 ResNet configs alone (a
list of them only), its passes on both sides of a third sitting of N's list (the same 400
configs beside the 437 new-family configs of session 23's ``passes`` rows). For each target data
set and family, the kernel-law source model (latency only, shared features, default preset) is
fitted on

* ``resnet_alone``: the alone rows (**the judged source**);
* ``resnet_beside``: sitting 3's ResNet rows (the same-session control);
* ``resnet_s12``: session 12's 2,656 quiet ResNet rows (**the baseline** of ``gains.csv``);
* ``resnet_n``, ``resnet_p``: pre-registrations N's and P's sittings' ResNet rows;
* ``resnet_s12_400``: session 12's rows of the same 400 configs;

and scored zero-shot and with ``offset`` at k = 10, 5 seeds. Target data sets: ``beside``
(sitting 3's new-family rows), ``n``, ``p`` (N's and P's) and ``passes`` (session 23's), 70 % of
architectures held out; ``s12`` (session 12's), 30 %.

With ``--sitting NAME`` (pre-registration R, a second alone sitting in ``ROOT/NAME``) that
sitting's rows are the judged ``resnet_alone`` and Q's alone rows join as ``resnet_alone1``;
``agreement.txt`` adds the two alone sittings' ratio and R's signature correlation
(:func:`signature`). A sitting whose name does not start with ``alone`` (pre-registration S:
``beside_vgg``, the ResNet configs beside vgg configs only) is judged the same way under its own
name, source ``resnet_NAME`` and ``NAME`` in ``agreement.txt``.

Writes ``scores.csv``, ``summary.csv``, ``gains.csv`` (paired against ``resnet_s12``),
``gains_vs_beside.csv`` (paired against ``resnet_beside``), ``agreement.txt`` (both sittings'
halves, the alone rows against the beside, N's, P's and session 12's rows) and ``speed.csv``
(today's rows over session 12's by batch tier and precision, descriptive) into ``DIR``.

``python scripts/alone_source_test.py cpu_epyc_zen5_2c``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_source_test import (  # noqa: E402
    judged_bench,
    ratio_line,
    scores,
    shared_ok_latency,
    summarise,
)

from carb_lib.dataset import read_dataset  # noqa: E402
from carb_lib.evaluation.cross_family import kernel_law_rows  # noqa: E402
from carb_lib.passes import pass_agreement, read_passes  # noqa: E402

BASE = "resnet_s12"
JUDGED = "resnet_alone"
CONTROL = "resnet_beside"
#: The noisy target data sets (70 % held out) and the quiet one (30 %).
NOISY = ("beside", "n", "p", "passes")


def input_files(platform: str, root: Path, sitting: str = "alone") -> dict[str, Path]:
    """Every input of the test by its name (sources ``resnet_*``, target data sets otherwise);
    with a ``sitting`` other than Q's ``alone``, Q's alone rows as ``resnet_alone1``."""
    fams = Path("data/other_cpus/new_families")
    first = {} if sitting == "alone" else {"resnet_alone1": root / "alone" / "resnet_rows.parquet"}
    return {"resnet_alone": root / sitting / "resnet_rows.parquet", **first,
            "resnet_beside": root / "sitting3" / "resnet_rows.parquet",
            "beside": root / "sitting3" / "target_rows.parquet",
            "resnet_n": root / "resnet_rows.parquet", "n": root / "target_rows.parquet",
            "resnet_p": root / "sitting2" / "resnet_rows.parquet",
            "p": root / "sitting2" / "target_rows.parquet",
            "resnet_s12": Path(f"data/other_cpus/{platform}.parquet"),
            "passes": fams / f"{platform}_passes.parquet", "s12": fams / f"{platform}.parquet"}


def speed_by_tier(now: dict[str, pd.DataFrame], quiet: pd.DataFrame) -> pd.DataFrame:
    """Each of ``now``'s rows over ``quiet``'s (same config), median ratio per batch tier
    (1-8, >= 16) and precision, with how many configs."""
    rows = []
    q = quiet[quiet["status"] == "ok"].set_index("config_id")
    for name, frame in now.items():
        a, b = shared_ok_latency(frame, quiet)
        meta = q.loc[a.index, ["batch", "precision"]]
        tier = np.where(meta["batch"].to_numpy() >= 16, "batch>=16", "batch1-8")
        ratio = pd.DataFrame({"tier": tier, "precision": meta["precision"].astype(str).to_numpy(),
                              "ratio": (a / b).to_numpy(float)})
        for (t, p), g in ratio.groupby(["tier", "precision"]):
            rows.append({"rows": name, "tier": t, "precision": p, "n_configs": len(g),
                         "median_ratio": float(g["ratio"].median())})
        rows.append({"rows": name, "tier": "all", "precision": "all", "n_configs": len(ratio),
                     "median_ratio": float(ratio["ratio"].median())})
    return pd.DataFrame(rows)


def signature(a: pd.DataFrame, b: pd.DataFrame, c: pd.DataFrame, d: pd.DataFrame) -> tuple[float, int]:
    """Pearson correlation, over the ``ok`` configs all four hold, of log(a / b) and
    log(c / d): whether two independent pairs of sittings differ config by config alike."""
    la, lb, lc, ld = (np.log(s.to_numpy(float)) for s in shared_ok_latency(a, b, c, d))
    if len(la) < 3:
        return float("nan"), len(la)
    return float(np.corrcoef(la - lb, lc - ld)[0, 1]), len(la)


def judged_label(sitting: str) -> str:
    """How ``agreement.txt`` and the sources name the judged sitting: ``alone`` for Q's and R's
    alone sittings, else the sitting's own name."""
    return "alone" if sitting.startswith("alone") else sitting


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--root", type=Path, default=None,
                    help="the sitting-source folder (default results/cross_family/"
                         "sitting_source/PLATFORM); the output goes to ROOT/SITTING")
    ap.add_argument("--sitting", default="alone",
                    help="the alone sitting judged (default Q's 'alone'; another one adds Q's "
                         "as source resnet_alone1: pre-registration R)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    root = args.root or Path(f"results/cross_family/sitting_source/{args.platform}")
    out = root / args.sitting
    files = input_files(args.platform, root, args.sitting)
    for f in files.values():
        if not f.exists():
            raise SystemExit(f"alone_source_test: missing {f}")
    for name in (args.sitting, "sitting3"):
        if not (root / name / "pass_rows.parquet").exists():
            raise SystemExit(f"alone_source_test: missing {root / name / 'pass_rows.parquet'}")
    who = judged_label(args.sitting)
    rows = dict(zip(files, kernel_law_rows(judged_bench(args.platform), *files.values()),
                    strict=True))
    same = rows[BASE]["config_id"].isin(rows[JUDGED]["config_id"])
    names = (JUDGED, CONTROL, BASE, "resnet_n", "resnet_p",
             *(["resnet_alone1"] if "resnet_alone1" in files else []))
    sources = {name: (rows[name], False) for name in names}
    sources["resnet_s12_400"] = (rows[BASE][same].reset_index(drop=True), False)
    sc = pd.concat([
        *[scores(sources, rows[ds], None, seeds=args.seeds, test_fraction=0.7, label=ds)
          for ds in NOISY],
        scores(sources, rows["s12"], None, seeds=args.seeds, test_fraction=0.3, label="s12"),
    ], ignore_index=True)
    sc["source"] = sc["source"].replace({JUDGED: f"resnet_{who}"})
    summ, gains = summarise(sc, base=BASE)
    _, gains_beside = summarise(sc, base=CONTROL)
    sc.to_csv(out / "scores.csv", index=False)
    summ.to_csv(out / "summary.csv", index=False)
    gains.to_csv(out / "gains.csv", index=False)
    gains_beside.to_csv(out / "gains_vs_beside.csv", index=False)
    raw = {k: read_dataset(v) for k, v in files.items()}
    lines = [f"halves ({who}): {pass_agreement(read_passes(out / 'pass_rows.parquet'))}",
             f"halves (beside): {pass_agreement(read_passes(root / 'sitting3' / 'pass_rows.parquet'))}",
             ratio_line(f"ResNet rows {who} / beside", raw[JUDGED], raw[CONTROL]),
             ratio_line(f"ResNet rows {who} / session 12's", raw[JUDGED], raw[BASE]),
             ratio_line("ResNet rows beside / session 12's", raw[CONTROL], raw[BASE]),
             ratio_line(f"ResNet rows {who} / N's", raw[JUDGED], raw["resnet_n"]),
             ratio_line(f"ResNet rows {who} / P's", raw[JUDGED], raw["resnet_p"]),
             ratio_line("new-family rows beside / N's", raw["beside"], raw["n"])]
    if "resnet_alone1" in raw:
        r, n = signature(raw[JUDGED], raw[CONTROL], raw["resnet_alone1"], raw["resnet_n"])
        lines += [ratio_line(f"ResNet rows {who} / the first alone sitting's", raw[JUDGED],
                             raw["resnet_alone1"]),
                  f"signature: corr(log {who} / beside, log first alone / N's) {r:.3f} over "
                  f"{n} configs"]
    (out / "agreement.txt").write_text("\n".join(lines) + "\n")
    speed = speed_by_tier({who: raw[JUDGED], "beside": raw[CONTROL], "n": raw["resnet_n"],
                           "p": raw["resnet_p"]}, raw[BASE])
    speed.to_csv(out / "speed.csv", index=False)
    print((out / "agreement.txt").read_text())
    few = summ[(summ["model"] == "offset") & (summ["k"] == 10)]
    with pd.option_context("display.width", 220, "display.max_rows", 200):
        print(few.pivot_table(index=["dataset", "family"], columns="source",
                              values="mape_pct_mean").round(2))
        print(gains_beside[gains_beside["source"] == f"resnet_{who}"].round(2))
        print(speed.round(3))


if __name__ == "__main__":
    main()
