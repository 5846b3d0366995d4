"""Did sampler v4's operators teach the kernel model the depthwise and SE regime? Operators only.

Session 14 located efficientnet's cross-family gap in depthwise convolutions whose kernel
overhangs a tiny map (PyTorch runs a 5x5 one on a 1x1 map at ~0.1 GFLOP/s; the kernel model
predicted such operators up to 80x too fast) and asked for a sampler that times many more of
them at batches 16-256: sampler v4 (:func:`carb_lib.operators.sample_kernels`). This script
judges what v4's operators changed on held-out *operators* of one benchmark (no network row is
read), by operator *shape* (the same subsets for every sampler version's operators):

* ``dw_overhang``: depthwise convolutions whose kernel is larger than the map (h_in < k);
* ``dw_other``: the other depthwise convolutions;
* ``conv_1x1_1px``: 1x1 convolutions on a 1x1 map (the SE's reduce and expand convs);
* ``se_memory``: multiply, global pool, sigmoid and SiLU (the SE's memory-bound operators);
* ``other``: every other operator.

The draws were timed in different sessions at different host speeds (session 15: up to 1.5x
apart), so a model that has not seen the sampler-4 draw cannot know its host's speed. Where it
has not, its predictions are put on that draw's speed by the median measured / predicted ratio
of the draw's ``other`` operators (shapes every sampler draws): what is left is what the
model misses *of the shapes*. Two checks, each for ``KernelModel(features="all")`` (the
default) and ``features="taps"``, both with ``draws="aligned"`` (the default):

1. **blind**: a model fitted on the operators of samplers 1-3 predicts every sampler-4
   operator (what the old benchmark knew of the new regime; MAPE and median predicted /
   measured), on the draw's speed from all its ``other`` operators;
2. **held out**: 20 % of each part (samplers 1-3, sampler 4) held out (``--seeds`` split
   seeds); a model fitted on the rest of samplers 1-3 alone (on the sampler-4 draw's speed from
   its *training* ``other`` operators), and on the rest of both (aligned, at each draw's speed),
   scored on both held-out parts: whether v4's operators help the new regime and cost the old
   one nothing.

``python scripts/sampler_v4_check.py data/kernels/cpu_epyc_zen3_2c.parquet --out
results/carb/sampler_v4_check``; where the sampler-v4 draw is a file of its own, both files
(read as one benchmark): ``python scripts/sampler_v4_check.py data/kernels/cpu_xeon_gnr_2c.parquet
data/kernels/cpu_xeon_gnr_2c_sampler4.parquet --out results/carb/sampler_v4_check_cpu_xeon_gnr_2c``
"""

from __future__ import annotations

import argparse
import io
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib import kernels

FEATURES = ("all", "taps")
SUBSETS = ("dw_overhang", "dw_other", "conv_1x1_1px", "se_memory", "other")


def subset(ops: pd.DataFrame) -> np.ndarray:
    """Each operator's shape subset (:data:`SUBSETS`)."""
    kind = ops["kind"].astype(str).to_numpy()
    k, h = ops["k"].to_numpy(int), ops["h_in"].to_numpy(int)
    dw = kind == "dwconv"
    return np.select([dw & (h < k), dw, (kind == "conv") & (k == 1) & (h == 1),
                      np.isin(kind, ("mul", "avgpool", "sigmoid", "silu"))],
                     SUBSETS[:4], SUBSETS[4])


def scores(ops: pd.DataFrame, pred: np.ndarray) -> pd.DataFrame:
    """MAPE %, median predicted / measured and count, per subset and over all operators."""
    ratio = pred / ops["time_ms"].to_numpy(float)
    df = pd.DataFrame({"subset": subset(ops), "ape": 100 * np.abs(ratio - 1), "ratio": ratio})
    whole = df.assign(subset="all")
    return (pd.concat([df, whole]).groupby("subset")
            .agg(n=("ape", "size"), mape_pct=("ape", "mean"), median_ratio=("ratio", "median"))
            .reset_index())


def draw_speed(model: kernels.KernelModel, ops: pd.DataFrame) -> float:
    """A draw the model did not see: its host's speed relative to the model's reference, the
    median measured / predicted time of ``ops`` (the draw's operators of shared shapes)."""
    return float(np.median(ops["time_ms"].to_numpy(float) / model.predict(ops)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench", type=Path, nargs="+",
                    help="the benchmark file, or several to read as one (kernels.read_bench)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    files = " ".join(map(str, args.bench))
    bench = kernels.read_bench(args.bench).reset_index(drop=True)
    new = bench["sampler"].to_numpy(int) >= 4
    if not new.any() or new.all():
        raise SystemExit(f"{files}: needs operators of samplers 1-3 and of sampler 4")
    old_ops, new_ops = bench[~new], bench[new]
    shared = subset(bench) == "other"
    blind = []
    for feats in FEATURES:
        for seed in range(args.seeds):
            m = kernels.KernelModel(features=feats, random_state=seed).fit(old_ops)
            pred = m.predict(new_ops) * draw_speed(m, bench[new & shared])
            blind.append(scores(new_ops, pred).assign(features=feats, seed=seed))
    held = []
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        test = rng.random(len(bench)) < 0.2
        for feats in FEATURES:
            for fit_on, train in (("samplers 1-3", ~test & ~new), ("samplers 1-4", ~test)):
                m = kernels.KernelModel(features=feats, random_state=seed).fit(bench[train])
                for part, rows in (("1-3", test & ~new), ("4", test & new)):
                    pred = m.predict(bench[rows], at_draw_speed=True)
                    if part == "4" and fit_on == "samplers 1-3":
                        pred = pred * draw_speed(m, bench[~test & new & shared])
                    held.append(scores(bench[rows], pred).assign(
                        features=feats, fit_on=fit_on, test_part=part, seed=seed))
    blind_df, held_df = pd.concat(blind), pd.concat(held)

    def table(df: pd.DataFrame, index: list[str]) -> pd.DataFrame:
        g = df.groupby([*index, "subset"])
        t = g.agg(n=("n", "first"), mape=("mape_pct", "mean"), sd=("mape_pct", "std"),
                  ratio=("median_ratio", "mean"))
        t["mape_pct"] = t["mape"].map("{:.1f}".format) + " ± " + t["sd"].map("{:.1f}".format)
        return t[["n", "mape_pct", "ratio"]].round(3).unstack(index)

    buf = io.StringIO()
    buf.write(f"# python scripts/sampler_v4_check.py {files} --seeds {args.seeds} "
              f"--out {args.out}\n")
    buf.write(f"{len(old_ops):,} operators of samplers 1-3, {len(new_ops):,} of sampler 4; "
              "MAPE % mean ± sd over seeds, ratio = median predicted / measured\n\n")
    buf.write("1. blind: fitted on samplers 1-3, every sampler-4 operator predicted (on the "
              "draw's speed from its 'other' operators)\n")
    with pd.option_context("display.width", 250):
        buf.write(table(blind_df, ["features"]).to_string() + "\n\n")
        buf.write("2. held out: 20 % of each part; fitted on the rest of samplers 1-3 (on the "
                  "sampler-4 draw's speed from its training 'other' operators) or of 1-4 "
                  "(aligned)\n")
        for part in ("1-3", "4"):
            buf.write(f"\nheld-out operators of sampler(s) {part}:\n")
            sub = held_df[held_df["test_part"] == part]
            buf.write(table(sub, ["features", "fit_on"]).to_string() + "\n")
    args.out.mkdir(parents=True, exist_ok=True)
    blind_df.to_csv(args.out / "blind.csv", index=False)
    held_df.to_csv(args.out / "held_out.csv", index=False)
    (args.out / "sampler_v4_check.txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
