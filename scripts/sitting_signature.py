"""Post hoc (session 27): do sittings of the same 400 ResNet configs differ config by config in a
shared way? For every sitting of pre-registration M's 400 configs (session 12's quiet rows, M's,
N's, P's, Q's alone and beside sittings, R's alone sitting and S's sitting beside vgg configs
only, where measured), each config's
log latency minus its mean over the sittings, with each sitting's median removed (its speed):
the Pearson correlation of those deviations between every pair of sittings (with k sittings,
independent noise gives about -1/(k-1)), and how they relate to the configs' batch, resolution,
precision, width and FLOPs (Spearman). And, for each beside sitting's passes, whether a ResNet
row's speed depends on the family of the config timed just before it in the same pass
(:func:`by_predecessor`). Times nothing.

``python scripts/sitting_signature.py cpu_epyc_zen5_2c --out results/cross_family/sitting_source/cpu_epyc_zen5_2c/signature.txt``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_source_test import shared_ok_latency  # noqa: E402

from carb_lib.dataset import read_dataset  # noqa: E402

#: Sitting name -> (rows relative to the sitting-source folder or the repository, timed beside
#: depthwise target configs?).
SITTINGS = {"s12": ("data/other_cpus/{p}.parquet", False),
            "m": ("results/cross_family/probe/{p}/sitting2/resnet_rows.parquet", False),
            "n": ("{root}/resnet_rows.parquet", True),
            "p": ("{root}/sitting2/resnet_rows.parquet", True),
            "beside3": ("{root}/sitting3/resnet_rows.parquet", True),
            "alone": ("{root}/alone/resnet_rows.parquet", False),
            "alone2": ("{root}/alone2/resnet_rows.parquet", False),
            "beside_vgg": ("{root}/beside_vgg/resnet_rows.parquet", False)}


def deviations(latency: pd.DataFrame) -> pd.DataFrame:
    """Log latency (configs x sittings) minus each config's mean over the sittings, minus each
    sitting's median of that."""
    lg = np.log(latency)
    lg = lg.sub(lg.mean(axis=1), axis=0)
    return lg.sub(lg.median())


def load_sittings(platform: str) -> tuple[dict[str, pd.DataFrame], dict[str, bool]]:
    """The rows of every sitting of :data:`SITTINGS` found for ``platform``, and whether each
    was timed beside depthwise target configs; refuses in one line without the alone sitting."""
    root = f"results/cross_family/sitting_source/{platform}"
    rows, beside = {}, {}
    for name, (pattern, bes) in SITTINGS.items():
        path = Path(pattern.format(p=platform, root=root))
        if path.exists():
            rows[name], beside[name] = read_dataset(path), bes
    if "alone" not in rows:
        raise SystemExit(f"sitting_signature: no alone sitting in {root}/alone")
    return rows, beside


def sitting_latency(rows: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Latency (configs x sittings) over the configs every sitting holds ``ok``, in the alone
    sitting's config order."""
    order = ["alone", *[k for k in rows if k != "alone"]]
    shared = dict(zip(order, shared_ok_latency(*(rows[k] for k in order)), strict=True))
    return pd.DataFrame({k: shared[k].astype(float) for k in rows})


def beside_signature(dev: pd.DataFrame, beside: dict[str, bool]) -> pd.Series:
    """Per config: the mean deviation (:func:`deviations`) of the sittings beside depthwise
    configs minus that of the others (positive: slower when timed beside them)."""
    bes = [k for k in dev.columns if beside[k]]
    other = [k for k in dev.columns if not beside[k]]
    return dev[bes].mean(axis=1) - dev[other].mean(axis=1)


def by_predecessor(pass_rows: pd.DataFrame) -> pd.DataFrame:
    """Per family of the config timed just before (in ``measured_at`` order within a pass), the
    median, mean and count of the ResNet rows' log latency over their config's median across
    the passes, each pass's median removed."""
    ok = pass_rows[pass_rows["status"] == "ok"].copy()
    ok["_t"] = pd.to_datetime(ok["measured_at"])
    ok = ok.sort_values(["pass", "_t"], kind="stable")
    ok["before"] = ok.groupby("pass")["family"].shift(1).astype(str)
    dev = np.log(ok["latency_ms"]) - np.log(ok.groupby("config_id")["latency_ms"].transform("median"))
    ok["dev"] = dev - dev.groupby(ok["pass"]).transform("median")
    resnet = ok[(ok["family"].astype(str) == "resnet") & (ok["before"] != "nan")]
    return resnet.groupby("before")["dev"].agg(["median", "mean", "count"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    root = f"results/cross_family/sitting_source/{args.platform}"
    rows, beside = load_sittings(args.platform)
    lat = sitting_latency(rows)
    ids = lat.index
    dev = deviations(lat)
    corr = dev.corr()
    meta = rows["alone"].set_index("config_id").loc[ids]
    feats = {"batch": meta["batch"], "resolution": meta["resolution"],
             "fp16": (meta["precision"].astype(str) == "fp16").astype(float),
             "width": meta["width"], "flops": meta["flops"].astype(float)}
    groups = {True: [k for k in rows if beside[k]], False: [k for k in rows if not beside[k]]}
    sig = beside_signature(dev, beside)
    within = {g: [corr.loc[a, b] for i, a in enumerate(ks) for b in ks[i + 1:]]
              for g, ks in groups.items()}
    across = [corr.loc[a, b] for a in groups[True] for b in groups[False]]
    lines = [f"# python scripts/sitting_signature.py {args.platform} --out {args.out}",
             f"{len(ids)} configs, sittings {', '.join(rows)} (beside depthwise configs: "
             f"{', '.join(groups[True])}); independent noise gives about "
             f"{-1 / (len(rows) - 1):+.2f}", "",
             "correlation of per-config deviations:", corr.round(2).to_string(), "",
             f"mean within the beside sittings {np.mean(within[True]):+.2f}, within the others "
             f"{np.mean(within[False]):+.2f}, across {np.mean(across):+.2f}", "",
             "the signature (mean deviation beside - the others), Spearman with:"]
    lines += [f"  {k}: {spearmanr(v.to_numpy(float), sig.to_numpy())[0]:+.3f}" for k, v in feats.items()]
    lines.append(f"  sd of the signature {sig.std():.3f} (log)")
    for name in groups[True]:
        path = Path(SITTINGS[name][0].format(p=args.platform, root=root)).parent / "pass_rows.parquet"
        if path.exists():
            tab = by_predecessor(pd.read_parquet(path))
            lines += ["", f"{name}: ResNet rows by the family timed just before them (log "
                          "deviation from the config's median over the passes):",
                      tab.round(4).to_string()]
    args.out.write_text("\n".join(lines) + "\n")
    print(args.out.read_text(), end="")


if __name__ == "__main__":
    main()
