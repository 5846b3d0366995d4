"""Where does the zero-shot error on a new family come from? A diagnostic of one platform.

Fits the ResNet-only source model of notebook 05 (``CARBRegressor``, kernel law,
``feature_set="shared"``, seed 0) and scores every row of the new families. For each family it
prints the log residual ``r = log(measured / predicted)`` (mean, sd, and the sd left *between*
architectures once each architecture's mean is taken: what a per-network correction would have
to explain), then how much of ``r``'s spread each candidate explanatory variable carries
(R^2 of a one-variable least-squares line, within the family):

* ``share_<group>``: the share of the network's predicted operator time in each operator group
  (:data:`carb_lib.kernels.KERNEL_GROUPS`: dense, depthwise, linear, memory-bound);
* ``log_batch``, ``log_resolution``, ``log_layers``, ``log_kernel_ms``, ``log_flops``.

A few-shot method fits k = 10 rows; only a variable that explains much of ``r`` within a
family, the same way on each CPU, is worth a second parameter.

``python scripts/cross_family_residuals.py SOURCE NEW_FAMILIES BENCH [BENCH ...] --out DIR``
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
from carb_lib.evaluation.cross_family import prepare_rows
from carb_lib.evaluation.models import fit_quiet
from carb_lib.families import get_family
from carb_lib.families._common import factorize_rows

GROUPS = tuple(kernels.KERNEL_GROUPS)


def explanatory(rows: pd.DataFrame) -> pd.DataFrame:
    total = rows[kernels.KERNEL_FEATURE].to_numpy(float)
    X = pd.DataFrame(index=rows.index)
    for g in GROUPS:
        X[f"share_{g}"] = rows[f"{kernels.KERNEL_FEATURE}_{g}"].to_numpy(float) / total
    X["log_batch"] = np.log(rows["batch"].astype(float))
    X["log_resolution"] = np.log(rows["resolution"].astype(float))
    X["log_layers"] = np.log((rows["n_conv"] + rows["n_fc"]).astype(float))
    X["log_kernel_ms"] = np.log(total)
    X["log_flops"] = np.log(rows["flops"].astype(float))
    return X


def r2_line(x: np.ndarray, r: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(r)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0:
        return float("nan")
    return float(np.corrcoef(x[ok], r[ok])[0, 1] ** 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("target", type=Path)
    ap.add_argument("bench", type=Path, nargs="+",
                    help="the platform's timed operators; several files are read as one")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    km = kernels.KernelModel(random_state=0).fit(kernels.read_bench(args.bench))
    src = kernels.with_kernel_column(prepare_rows(read_dataset(args.source)), km)
    tgt = kernels.with_kernel_column(prepare_rows(read_dataset(args.target)), km, by_group=True)
    model = fit_quiet({**preset("default", targets=("latency_ms",), random_state=0),
                       "latency_law": "kernel", "feature_set": "shared"}, src)
    tgt["r"] = np.log(tgt["latency_ms"].to_numpy(float)
                      / np.asarray(model.predict(tgt)["latency_ms"], float))
    X = explanatory(tgt)
    rows, buf = [], io.StringIO()
    for (fam, prec), part in tgt.groupby(["family", "precision"]):
        cols = [c for c in get_family(fam).config_columns if c not in ("batch", "precision")]
        codes, _ = factorize_rows(part.reset_index(drop=True), [c for c in cols if c in part])
        r = part["r"].to_numpy()
        arch_mean = pd.Series(r).groupby(codes).transform("mean").to_numpy()
        rec = {"family": fam, "precision": prec, "n": len(part), "r_mean": r.mean(),
               "r_sd": r.std(), "r_sd_within_arch": (r - arch_mean).std(),
               "r_sd_between_arch": pd.Series(arch_mean).std()}
        for c in X.columns:
            rec[f"r2_{c}"] = r2_line(X.loc[part.index, c].to_numpy(), r)
        sub = X.loc[part.index]
        A = np.c_[np.ones(len(part)), sub.drop(columns=["share_conv"]).fillna(0).to_numpy()]
        coef, *_ = np.linalg.lstsq(A, r, rcond=None)
        rec["r2_all"] = 1 - np.var(r - A @ coef) / np.var(r)
        rows.append(rec)
    table = pd.DataFrame(rows)
    benches = " ".join(map(str, args.bench))
    buf.write(f"# python scripts/cross_family_residuals.py {args.source} {args.target} "
              f"{benches} --out {args.out}\n")
    buf.write("log residual r = log(measured / zero-shot kernel-law prediction), per family and "
              "precision; r2_<x>: share of r's variance a line in x explains\n\n")
    with pd.option_context("display.width", 250, "display.max_columns", 40):
        buf.write(table.round(3).T.to_string() + "\n")
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "residuals_summary.csv", index=False)
    keep = ["family", "precision", "batch", "resolution", "latency_ms", "r"]
    pd.concat([tgt[keep], X], axis=1).to_parquet(args.out / "residual_rows.parquet", index=False)
    (args.out / "residuals.txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
