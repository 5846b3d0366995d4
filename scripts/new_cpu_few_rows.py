"""A new CPU from its operator benchmark and a few measured networks: how close does it get?

Source: the Zen 3 rows and operators (``cpu_epyc_zen3_2c``); target: a second CPU whose
operators were timed (``carb kernels``) and whose networks are measured (here the Zen 4 of
``data/other_cpus``, the same configs). For ``k`` target rows drawn at random (``--draws``
seeds), every other target row is predicted by:

* ``zen3_roofline``: the source's default CARB model (roofline law) as it is, then recalibrated
  on the k rows (:func:`carb_lib.transfer.recalibrate`, the default ``blend``; k = 0: as is);
* ``zen3_kernel_law + target operators``: the source's kernel-law CARB model (law constants and
  residual learners fitted on the source's networks) fed the *target's* ``kernel_ms`` (its own
  operators, predicted by a kernel model fitted on its benchmark): no target network at k = 0;
  then recalibrated on the k rows the same way;
* ``flops``: FLOPs alone fitted on the k rows (the baseline; k >= 2);
* ``target_own_kernel_law``: for reference, the target's own kernel-law CARB model fitted on its
  70 % training part (:func:`carb_lib.evaluation.splits.stratified_split`, seed 0), scored on
  that split's test part (not on the same rows as the others).

With target rows of several families, k rows *of each family* are drawn and that family's
other rows predicted (the protocol of notebook 05), and every metric is per family.

Latency MAPE, share within +-10 %, Spearman and R², mean ± sd over draws. Nothing is tuned
here: the presets, kernel model and recalibration are the defaults. ``--feature-set shared``
(``CARBRegressor(feature_set="shared")``, notebook 05's cross-family model) lets the target be
rows of families the source never measured: a new CPU *and* new networks.

``python scripts/new_cpu_few_rows.py data/cpu_epyc_zen3_2c.parquet
data/kernels/cpu_epyc_zen3_2c.parquet data/other_cpus/cpu_epyc_zen4_2c.parquet
data/kernels/cpu_epyc_zen4_2c.parquet --out results/carb/new_cpu_cpu_epyc_zen4_2c``
"""

from __future__ import annotations

import argparse
import io
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib import kernels
from carb_lib.dataset import read_dataset
from carb_lib.ensemble import preset
from carb_lib.evaluation import fit_quiet, prepare_dataset
from carb_lib.evaluation.splits import stratified_split
from carb_lib.metrics import regression_metrics
from carb_lib.transfer import model_features, recalibrate

TARGETS = ("peak_mem_mib", "latency_ms")
METRICS = ["mape_pct", "within_10pct", "spearman", "r2"]


def _with_kernel(df: pd.DataFrame, bench: Path) -> pd.DataFrame:
    return kernels.with_kernel_column(df, kernels.KernelModel().fit(kernels.read_bench(bench)),
                                      n_jobs=2).reset_index(drop=True)


def _metrics(y: np.ndarray, p: np.ndarray) -> dict:
    m = regression_metrics(y, p)
    return {"mape_pct": m.mape_pct, "within_10pct": m.within_10pct, "spearman": m.spearman,
            "r2": m.r2}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source")
    ap.add_argument("source_bench", type=Path)
    ap.add_argument("target")
    ap.add_argument("target_bench", type=Path)
    ap.add_argument("--ks", type=int, nargs="+", default=[0, 10, 50])
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--feature-set", default="static", choices=("static", "shared"),
                    help="model features; 'shared' for target rows of families the source "
                         "never measured (the cross-family feature set)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    src = _with_kernel(prepare_dataset(read_dataset(args.source)), args.source_bench)
    tgt = _with_kernel(prepare_dataset(read_dataset(args.target)), args.target_bench)
    base = {**preset("default", targets=TARGETS, random_state=0), "feature_set": args.feature_set}
    roof = fit_quiet(base, src)
    kern = fit_quiet({**base, "latency_law": "kernel"}, src)
    y = tgt["latency_ms"].to_numpy(dtype=float)
    fam = tgt["family"].astype(str).to_numpy()
    log_src = {"zen3_roofline": np.log(np.asarray(roof.predict(tgt)["latency_ms"], float)),
               "zen3_kernel_law + target operators":
                   np.log(np.asarray(kern.predict(tgt)["latency_ms"], float))}
    feats = model_features(tgt).reset_index(drop=True)
    rows = []
    # k rows *of each family* (one family: k of all rows), the rest of that family predicted
    for family in sorted(set(fam)):
        idx = np.flatnonzero(fam == family)
        yf, ff = y[idx], feats.iloc[idx].reset_index(drop=True)
        for k in args.ks:
            for draw in range(args.draws):
                rng = np.random.default_rng(1000 + draw)
                pick = np.zeros(len(idx), dtype=bool)
                pick[rng.choice(len(idx), size=k, replace=False)] = True
                q = ~pick
                for name, s_all in log_src.items():
                    s = s_all[idx]
                    if k == 0:
                        p = np.exp(s[q])
                    else:
                        p = np.exp(recalibrate("blend", s[pick], ff[pick], np.log(yf[pick]),
                                               s[q], ff[q]))
                    rows.append({"family": family, "method": name, "k": k, "draw": draw,
                                 **_metrics(yf[q], p)})
                if k >= 2:
                    s0 = log_src["zen3_roofline"][idx]
                    p = np.exp(recalibrate("flops", s0[pick], ff[pick], np.log(yf[pick]),
                                           s0[q], ff[q]))
                    rows.append({"family": family, "method": "flops", "k": k, "draw": draw,
                                 **_metrics(yf[q], p)})
                if k == 0:
                    break  # nothing is drawn: one draw says it all
    part = stratified_split(tgt, random_state=0).to_numpy()
    own = fit_quiet({**base, "latency_law": "kernel"}, tgt[part == "train"])
    te = tgt[part == "test"]
    p = np.asarray(own.predict(te)["latency_ms"], dtype=float)
    for family in sorted(set(fam)):
        sel = fam[part == "test"] == family
        rows.append({"family": family, "method": "target_own_kernel_law",
                     "k": int((part == "train").sum()), "draw": 0,
                     **_metrics(te["latency_ms"].to_numpy(dtype=float)[sel], p[sel])})
    res = pd.DataFrame(rows)
    keys = ["method", "k"] if res["family"].nunique() == 1 else ["family", "method", "k"]
    g = res.groupby(keys, sort=False)[METRICS]
    table = (g.mean().round(3).astype(str) + " ± " + g.std().fillna(0).round(3).astype(str))
    ratio = float(np.median(y / np.exp(log_src["zen3_roofline"])))
    buf = io.StringIO()
    buf.write(f"# python scripts/new_cpu_few_rows.py {args.source} {args.source_bench} "
              f"{args.target} {args.target_bench} --draws {args.draws} "
              + ("" if args.feature_set == "static" else f"--feature-set {args.feature_set} ")
              + f"--out {args.out}\n")
    buf.write(f"source {len(src):,} rows; target {len(tgt):,} rows; k target rows drawn at random "
              f"({args.draws} draws), the rest predicted; default preset and recalibration "
              f"('blend'); target latency / source model's prediction, median: {ratio:.3f}\n\n")
    with pd.option_context("display.width", 200, "display.max_colwidth", 60):
        buf.write(table.to_string() + "\n")
    args.out.mkdir(parents=True, exist_ok=True)
    res.to_csv(args.out / "new_cpu_few_rows.csv", index=False)
    (args.out / "new_cpu_few_rows.txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
