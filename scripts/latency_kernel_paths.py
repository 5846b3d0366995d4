"""Diagnostic: does the CPU kernel path explain the small-batch latency miss?

PyTorch's ``use_mkldnn`` heuristic (the rule :mod:`carb_lib.families._alloc` models for memory)
sends each fp32 conv either to oneDNN (blocked layouts, a weight reorder every call) or to the
slow path (unfold + GEMM); which one depends on the batch (1 / 2-15 / >= 16), the kernel, the
stride and the input size. fp16 convs always take the slow path. This script

1. prints the batch-sweep shape: per-sample latency relative to batch 16, median over the
   configs measured at >= 8 batch sizes, per precision;
2. records every conv's geometry once per architecture and resolution (forward hooks on the
   ``meta`` device) and derives per-row path features with the allocator model's rules
   (:func:`carb_lib.families._alloc.uses_onednn`, ``conv_events``): oneDNN and slow-path
   convs and GFLOPs, fixed reorder bytes, blocked-copy bytes and unfold bytes;
3. fits the roofline base law (relative NNLS with Huber passes, per precision, as
   :func:`carb_lib.base_models.fit_base_law`) with and without them on the
   leave-small-batches-out split (train batch > 8, test <= 8), the large-batch split
   (train < 64, test >= 64), two validation splits (train >= 32 / test 16; train < 32 /
   test 32) and all rows, and prints R² and MAPE;
4. breaks the leave-small-batches-out error of the full law down by precision and batch, and
   by whether the held-out config was also measured at a batch > 8;
5. prints fp16 time per FLOP by resolution and by batch tier (the slow path's efficiency).

``python scripts/latency_kernel_paths.py data/cpu_epyc_zen3_2c.parquet``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib.base_models import _col, _precision, _robust_fit, _terms, law_columns
from carb_lib.evaluation.splits import prepare_dataset
from carb_lib.families._alloc import conv_events, uses_onednn
from carb_lib.metrics import regression_metrics

ARCH = ["block", "depth", "width", "early_downsample", "resolution"]
PATH_COLUMNS = ["n_mkl", "n_slow", "mkl_gflop", "slow_gflop", "reorder_gb", "blocked_gb",
                "unfold_gb"]


def conv_geometry(row: dict) -> list[tuple]:
    """``(cin, cout, k, stride, padding, groups, hw_in, hw_out)`` of every conv call."""
    import torch

    from carb_lib.families.resnet import build_resnet, resnet_from_row

    with torch.device("meta"):
        model = build_resnet(resnet_from_row({**row, "batch": 1, "precision": "fp32"}))
    convs: list[tuple] = []

    def hook(m, inp, out):
        x = inp[0]
        convs.append((x.shape[1], out.shape[1], m.kernel_size[0], m.stride[0], m.padding[0],
                      m.groups, x.shape[2] * x.shape[3], out.shape[2] * out.shape[3]))

    for mod in model.modules():
        if isinstance(mod, torch.nn.Conv2d):
            mod.register_forward_hook(hook)
    with torch.no_grad():
        model(torch.empty(1, 3, row["resolution"], row["resolution"], device="meta"))
    return convs


def path_features(convs: list[tuple], n: int, precision: str, block: int = 8) -> dict:
    """Per-row kernel-path quantities: the path from PyTorch's rule
    (:func:`carb_lib.families._alloc.uses_onednn`), the copies from the allocator model's
    events (:func:`~carb_lib.families._alloc.conv_events`): fixed bytes (weight reorder,
    scratch, bias copy) and per-image scratch bytes other than the output (blocked copies on
    oneDNN, the unfold on the slow path)."""
    f = dict.fromkeys(PATH_COLUMNS, 0.0)
    for cin, cout, k, s, p, g, hw_in, hw_out in convs:
        gflop = 2 * n * cout * hw_out * (cin // g) * k * k / 1e9
        events = conv_events(precision, n, cin, cout, (k, k), (s, s), (p, p), g, hw_in, hw_out,
                             block=block)
        fixed = sum(ev[1] for ev in events if len(ev) == 2 and ev[1] > 0)
        scratch = n * sum(ev[0] for ev in events if len(ev) == 2 and ev[0] > 0)
        if uses_onednn(precision, n, cin, (k, k), (s, s), g, hw_in):
            f["n_mkl"] += 1
            f["mkl_gflop"] += gflop
            f["reorder_gb"] += fixed / 1e9
            f["blocked_gb"] += scratch / 1e9
        else:
            f["n_slow"] += 1
            f["slow_gflop"] += gflop
            f["unfold_gb"] += scratch / 1e9
    return f


def terms(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """The roofline law's terms (:func:`carb_lib.base_models._terms`), the layers other than
    convs, and the path features."""
    t = dict(zip(law_columns("roofline"), _terms(df, "roofline").T, strict=True))
    t["other_layers"] = _col(df, "n_bn") + _col(df, "n_act") + _col(df, "n_fc")
    t.update({c: _col(df, c) for c in PATH_COLUMNS})
    return t


LAWS = {
    "roofline (CARB's law)": ["const", "batch", "gflop", "gbyte", "layers"],
    "+ path split": ["const", "batch", "mkl_gflop", "slow_gflop", "gbyte", "n_mkl", "n_slow",
                     "other_layers"],
    "+ path split + copy bytes": ["const", "batch", "mkl_gflop", "slow_gflop", "gbyte", "n_mkl",
                                  "n_slow", "other_layers", "reorder_gb", "blocked_gb",
                                  "unfold_gb"],
}


def fit_predict(train: pd.DataFrame, test: pd.DataFrame, cols: list[str]):
    a, b = terms(train), terms(test)
    A = np.column_stack([a[c] for c in cols])
    B = np.column_stack([b[c] for c in cols])
    y = train["latency_ms"].to_numpy(float)
    ptr, pte = _precision(train), _precision(test)
    out, coef = np.full(len(test), np.nan), {}
    for p in np.unique(ptr):
        c = _robust_fit(A[ptr == p], y[ptr == p], np.ones(int((ptr == p).sum())))
        coef[p] = dict(zip(cols, c, strict=True))
        out[pte == p] = B[pte == p] @ c
    return np.maximum(out, 1e-3), coef


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path)
    a = ap.parse_args()
    d = prepare_dataset(pd.read_parquet(a.dataset))
    d = d[d["family"].astype(str) == "resnet"].reset_index(drop=True)
    pd.set_option("display.width", 160)

    cfg = [*ARCH, "precision"]
    rel = []
    for key, g in d.groupby(cfg):
        if g["batch"].nunique() >= 8 and (g["batch"] == 16).any():
            per = g.groupby("batch")["latency_ms"].median()
            per = per / per.index
            rel.append((per / per.loc[16]).rename(key[-1]))
    sweep = pd.DataFrame(rel)
    print(f"{a.dataset}: {len(d):,} resnet rows\n")
    print(f"per-sample latency / per-sample latency at batch 16 (median over "
          f"{len(sweep)} configs measured at >= 8 batch sizes):")
    print(sweep.groupby(level=0).median().round(2).to_string(), "\n")

    geo = {k: conv_geometry(dict(zip(ARCH, k, strict=True)))
           for k in d[ARCH].drop_duplicates().itertuples(index=False, name=None)}
    feats = [path_features(geo[tuple(r[:5])], int(r[5]), r[6])
             for r in d[[*ARCH, "batch", "precision"]].itertuples(index=False, name=None)]
    d = pd.concat([d, pd.DataFrame(feats)], axis=1)

    splits = {"val: >=32 -> 16": (d.batch >= 32, d.batch == 16),
              "TEST: >8 -> <=8": (d.batch > 8, d.batch <= 8),
              "val: <32 -> 32": (d.batch < 32, d.batch == 32),
              "TEST: <64 -> >=64": (d.batch < 64, d.batch >= 64),
              "all rows (fit)": (d.batch > 0, d.batch > 0)}
    rows = []
    for law, cols in LAWS.items():
        for split, (tr, te) in splits.items():
            p, coef = fit_predict(d[tr], d[te], cols)
            m = regression_metrics(d.loc[te, "latency_ms"], p)
            rows.append({"law": law, "split": split, "R2": m.r2, "MAPE %": m.mape_pct})
            if split.startswith("all") and law != "roofline (CARB's law)":
                print(f"{law}, fitted on all rows (ms per unit):")
                for prec, c in coef.items():
                    print(f"  {prec}: " + ", ".join(f"{k} {v:.4g}" for k, v in c.items()))
    r = pd.DataFrame(rows)
    print("\nbase law alone:")
    print(r.pivot(index="law", columns="split", values=["R2", "MAPE %"]).round(3).to_string())

    tr, te = d[d.batch > 8], d[d.batch <= 8]
    p, _ = fit_predict(tr, te, LAWS["+ path split + copy bytes"])
    y = te["latency_ms"].to_numpy(float)
    seen = set(tr[cfg].astype(str).agg("|".join, axis=1))
    swept = te[cfg].astype(str).agg("|".join, axis=1).isin(seen).to_numpy()
    t = te[["precision", "batch"]].assign(log_law_over_measured=np.log(p / y),
                                          sq_err=(p - y) ** 2, swept=swept)
    print("\nleave-small-batches-out, law with path features: median log(law / measured), "
          "share of squared error")
    g = t.groupby(["precision", "batch"])
    print(pd.DataFrame({"rows": g.size(), "median_log": g["log_law_over_measured"].median(),
                        "sse_share": g["sq_err"].sum() / t["sq_err"].sum()}).round(3).to_string())
    for name, m in (("measured at a batch > 8 too", swept), ("only at batches <= 8", ~swept)):
        met = regression_metrics(y[m], p[m])
        print(f"held-out configs {name}: {int(m.sum())} rows, R² {met.r2:.3f}, "
              f"MAPE {met.mape_pct:.1f} %")

    h = d[d["precision"] == "fp16"].assign(ns_per_flop=lambda f: 1e6 * f.latency_ms / f.flops,
                                           tier=lambda f: np.where(f.batch > 8, ">8", "<=8"))
    print("\nfp16: ns per FLOP (median, rows) by resolution and batch tier")
    print(h.pivot_table(index="resolution", columns="tier", values="ns_per_flop",
                        aggfunc=["median", "size"]).round(2).to_string())


if __name__ == "__main__":
    main()
