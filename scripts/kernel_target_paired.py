"""The kernel model's target, roofline or FLOPs: a paired comparison on held-out operators.

Session 15's choice script (``scripts/kernel_model_choice.py``) scored ``target="flops"`` 0.5
below the default ``target="roofline"`` on its criterion (24.97 against 25.48; draws aligned),
within the spread of its 3 split seeds, and left the choice open. This script asks whether the
gap is more than noise: both targets (``features="all"``, ``draws="aligned"``) on the same
random 20 % hold-outs (``kernels.holdout_check``, ``--seeds`` split seeds, paired), the paired
gap's mean and standard error, and the largest-15 % hold-out of the choice script beside it.
Only operators are read (no network row).

The rule, fixed before the run: FLOPs replaces the roofline target if it is ahead on the
random hold-outs by more than one standard error of the paired gap *and* not behind on the
largest operators; otherwise the default stays.

``python scripts/kernel_target_paired.py data/kernels/cpu_epyc_zen3_2c.parquet --seeds 10
--out results/carb/kernel_target_paired``
"""

from __future__ import annotations

import argparse
import io
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib import kernels

TARGETS = ("roofline", "flops")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench", type=Path)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    bench = kernels.read_bench(args.bench).reset_index(drop=True)
    rows = []
    for seed in range(args.seeds):
        for target in TARGETS:
            chk = kernels.holdout_check(bench, random_state=seed, target=target,
                                        features="all", draws="aligned")
            rows.append({"seed": seed, "target": target, "mape_pct": chk.metrics["mape_pct"],
                         "spearman": chk.metrics["spearman"]})
    scores = pd.DataFrame(rows)
    wide = scores.pivot(index="seed", columns="target", values="mape_pct")
    gap = wide["flops"] - wide["roofline"]  # < 0: FLOPs ahead
    se = float(gap.std(ddof=1) / np.sqrt(len(gap)))
    # the choice script's largest-15 % hold-out (per kind and precision, by nominal time)
    big = {}
    for target in TARGETS:
        largest, ratio = kernels.largest_holdout(bench, target=target, features="all",
                                                 draws="aligned")
        big[target] = float(100 * np.mean(np.abs(ratio - 1)))
    switch = bool(gap.mean() < -se and big["flops"] <= big["roofline"])
    buf = io.StringIO()
    buf.write(f"# python scripts/kernel_target_paired.py {args.bench} --seeds {args.seeds} "
              f"--out {args.out}\n")
    buf.write(f"{len(bench):,} operators; random 20 % held out, {args.seeds} paired split "
              f"seeds; largest 15 % per kind and precision ({int(largest.sum()):,} operators)\n\n")
    buf.write("held-out MAPE % per seed:\n" + wide.round(3).to_string() + "\n\n")
    for target in TARGETS:
        buf.write(f"{target:>8}: random {wide[target].mean():.2f} ± {wide[target].std():.2f} %, "
                  f"largest {big[target]:.2f} %\n")
    buf.write(f"paired gap flops - roofline: {gap.mean():+.3f} ± {se:.3f} (SE over seeds; "
              f"{gap.mean() / se:+.2f} SE); flops ahead on {int((gap < 0).sum())} of "
              f"{len(gap)} seeds\n")
    buf.write(f"rule (FLOPs if ahead by > 1 SE on random and not behind on the largest): "
              f"{'switch to flops' if switch else 'keep roofline'}\n")
    args.out.mkdir(parents=True, exist_ok=True)
    scores.to_csv(args.out / "scores.csv", index=False)
    (args.out / "kernel_target_paired.txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
