"""Which kernel model? Chosen on held-out *operators* only (no network row is read).

Variants of :class:`carb_lib.kernels.KernelModel` (``target`` x ``features``) are scored on
two operator hold-outs of a kernel benchmark:

* ``random``: a random 20 % of the operators (3 split seeds; MAPE mean +- sd);
* ``largest``: the largest 15 % of each operator kind and precision (by nominal roofline time)
  held out, the rest fitted (MAPE and the median predicted / measured ratio): how the model
  extrapolates to operators bigger than any it saw, which networks at large batch, width or
  resolution contain.

The rule: the lowest mean of the two MAPEs. On the 7,000 operators of session 9 it picked
``target="roofline", features="all"``, the default until session 17, when a paired check
(``scripts/kernel_paired.py target``) made ``target="flops"`` the default;
``features="taps"`` (session 14) is scored beside it since sampler v4 timed the operators that feature describes, and so is
``draws="aligned"`` (session 15: the benchmark's draws were timed at host speeds up to 1.5x
apart). Held-out operators are predicted at their draw's speed (``at_draw_speed=True``; the
same as the reference speed for ``draws="pooled"``).

``python scripts/kernel_model_choice.py data/kernels/cpu_epyc_zen3_2c.parquet``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib import kernels

VARIANTS = [("time", "shape", "pooled"), ("time", "all", "pooled"), ("flops", "all", "pooled"),
            ("roofline", "shape", "pooled"), ("roofline", "all", "pooled"),
            ("roofline", "taps", "pooled"), ("flops", "all", "aligned"), ("roofline", "all", "aligned"),
            ("roofline", "taps", "aligned")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench", type=Path)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    bench = kernels.read_bench(args.bench).reset_index(drop=True)
    rows = []
    for target, features, draws in VARIANTS:
        params = {"target": target, "features": features, "draws": draws}
        rand = [kernels.holdout_check(bench, random_state=s, **params).metrics.mape_pct
                for s in range(args.seeds)]
        largest, ratio = kernels.largest_holdout(bench, **params)
        big = float(100 * np.mean(np.abs(ratio - 1)))
        rows.append({"target": target, "features": features, "draws": draws,
                     "random_mape_pct": f"{np.mean(rand):.2f} ± {np.std(rand, ddof=1):.2f}",
                     "largest_mape_pct": round(big, 2),
                     "largest_median_ratio": round(float(np.median(ratio)), 3),
                     "criterion": round((np.mean(rand) + big) / 2, 2)})
    out = pd.DataFrame(rows)
    best = out.loc[out["criterion"].idxmin()]
    print(f"# python scripts/kernel_model_choice.py {args.bench}")
    print(f"{len(bench):,} timed operators; random: {args.seeds} split seeds, 20 % held out; "
          f"largest: {int(largest.sum()):,} operators held out\n")
    print(out.to_string(index=False))
    print(f"\nchosen (lowest criterion = mean of the two MAPEs): target={best['target']!r}, "
          f"features={best['features']!r}, draws={best['draws']!r}")


if __name__ == "__main__":
    main()
