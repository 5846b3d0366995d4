"""Do the anchor operators measure the host speed that a draw's operators see?

``carb kernels --anchor-every N`` times the fixed anchor set (:mod:`carb_lib.anchors`) before,
every N operators during, and after a draw. If the anchors measure the host's speed, an
operator's time divided by the anchors' relative time at its moment
(:func:`carb_lib.anchors.relative_time_at`) should be closer to what the operator's shape
predicts. This script checks that on a draw timed that way (a file apart from the platform's
benchmark) against the kernel model of the platform's benchmark (``KernelModel()``, its
defaults; it never saw the draw):

* per operator, the log residual ``r = log(measured / predicted)`` and the anchors' log
  relative time ``a`` at its ``measured_at``; their Pearson correlation, and the slope of ``r``
  on ``a`` (1 if the operators slow down exactly as the anchors do);
* MAPE after one scale factor (the median residual removed: the draw's own host speed) of the
  raw times and of the anchored times (``r - a``);
* a placebo: ``a`` permuted among the chunks between sittings (200 permutations), which keeps
  its spread and breaks its timing; the anchored MAPE should beat every placebo if the timing
  is what carries the information.

``python scripts/anchor_check.py results/measurement/anchor_check_cpu_epyc_zen3_2c.parquet
data/kernels/cpu_epyc_zen3_2c.parquet --out results/measurement/anchor_check_cpu_epyc_zen3_2c``
"""

from __future__ import annotations

import argparse
import io
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib import anchors, kernels


def _mape(r: np.ndarray) -> float:
    """MAPE (%) of ``exp(r)`` against 1 after the median of ``r`` is removed."""
    return float(100 * np.mean(np.abs(np.exp(r - np.median(r)) - 1)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("draw", type=Path, help="a draw timed with --anchor-every")
    ap.add_argument("bench", type=Path, help="the platform's benchmark (the kernel model's)")
    ap.add_argument("--placebos", type=int, default=200)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    draw, bench = kernels.read_bench(args.draw), kernels.read_bench(args.bench)
    anc = kernels.read_bench(anchors.anchors_path(args.draw))
    sp = anchors.anchor_speeds(anc)
    model = kernels.KernelModel(random_state=0).fit(bench)
    pred = model.predict(draw)
    r = np.log(draw["time_ms"].to_numpy(float) / pred)
    a = np.log(anchors.relative_time_at(anc, draw["measured_at"]))
    slope, _ = np.polyfit(a, r, 1)
    corr = float(np.corrcoef(a, r)[0, 1])
    raw, anchored = _mape(r), _mape(r - a)
    # chunks: the operators between two sittings
    cuts = pd.to_datetime(sp["sitting"]).to_numpy()
    chunk = np.searchsorted(cuts, pd.to_datetime(draw["measured_at"]).to_numpy())
    rng = np.random.default_rng(0)
    ids = np.unique(chunk)
    placebo = []
    for _ in range(args.placebos):
        perm = dict(zip(ids, rng.permutation(ids), strict=True))
        a_p = np.empty_like(a)
        for c in ids:  # chunk c gets chunk perm[c]'s anchor values, in its own order
            src = a[chunk == perm[c]]
            a_p[chunk == c] = np.resize(src, int((chunk == c).sum()))
        placebo.append(_mape(r - a_p))
    placebo = np.asarray(placebo)
    g = pd.DataFrame({"chunk": chunk, "r": r, "a": a}).groupby("chunk")
    per_chunk = pd.DataFrame({"n": g.size(),
                              "median_measured_over_predicted": np.exp(g["r"].median()),
                              "anchor_relative_time": np.exp(g["a"].median())}).round(3)
    buf = io.StringIO()
    buf.write(f"# python scripts/anchor_check.py {args.draw} {args.bench} --placebos "
              f"{args.placebos} --out {args.out}\n")
    buf.write(f"{len(draw)} operators of the draw, {len(sp)} anchor sittings "
              f"({draw['measured_at'].min()} - {draw['measured_at'].max()}); kernel model: "
              f"{len(bench):,} operators of {args.bench}\n\n")
    buf.write("anchor sittings:\n" + sp.round(3).to_string(index=False) + "\n\n")
    buf.write("per chunk (operators between two sittings):\n" + per_chunk.to_string() + "\n\n")
    buf.write(f"log residual vs anchors' log relative time: Pearson r = {corr:.3f}, slope "
              f"{slope:.3f} (1: operators slow down as the anchors do)\n")
    buf.write(f"MAPE after one scale factor: raw {raw:.2f} %, anchored {anchored:.2f} %; "
              f"placebo (anchor values permuted among chunks) median {np.median(placebo):.2f} %, "
              f"5-95 % {np.quantile(placebo, 0.05):.2f}-{np.quantile(placebo, 0.95):.2f} %, "
              f"anchored below {np.mean(anchored < placebo) * 100:.0f} % of placebos\n")
    args.out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"measured_at": draw["measured_at"], "kind": draw["kind"],
                  "precision": draw["precision"], "log_residual": r,
                  "anchor_log_time": a, "chunk": chunk}).to_csv(args.out / "operators.csv",
                                                                index=False)
    (args.out / "anchor_check.txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
