"""Does the kernel model's tap-share feature (``KernelModel(features="taps")``) help networks?

Session 14 found that PyTorch runs a depthwise conv whose kernel is larger than its input map
(a 5 x 5 conv on a 1 x 1 or 2 x 2 map, where most taps read padding) at ~0.1 GFLOP/s, and that
the kernel model, which had no feature for it, predicted such operators up to 80x too fast:
EfficientNet at 32 px, whose last stages run on 1 x 1 maps, came out 2.3-2.7x slower than
the kernel law predicted on both AVX-512 CPUs. The feature was judged on held-out *operators*
first (all four CPUs improve; README). This script measures what it does to the networks of
each CPU given: held-out operators (20 %, 3 seeds), then the cross-family evaluation of
notebook 05 (kernel law, ResNet source, zero-shot and ``offset`` with k = 10, ``--seeds``
seeds), once per kernel-model feature set. Nothing here is tuned.

``python scripts/kernel_taps_check.py --out results/carb/kernel_taps_check PLATFORM ...``
(a platform's ResNet rows, new-family rows and operator benchmark are found under ``data/``).
"""

from __future__ import annotations

import argparse
import io
import warnings
from pathlib import Path

import pandas as pd

from carb_lib import kernels
from carb_lib.dataset import read_dataset
from carb_lib.evaluation.cross_family import cross_family_evaluation

FEATURES = ("all", "taps")


def paths(platform: str) -> tuple[Path, Path, Path]:
    root = Path("data") if platform == "cpu_epyc_zen3_2c" else Path("data/other_cpus")
    return (root / f"{platform}.parquet", root / "new_families" / f"{platform}.parquet",
            Path("data/kernels") / f"{platform}.parquet")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platforms", nargs="+")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    ops_rows, net_rows = [], []
    for plat in args.platforms:
        src_p, tgt_p, bench_p = paths(plat)
        bench = kernels.read_bench(bench_p)
        src, tgt = read_dataset(src_p), read_dataset(tgt_p)
        for feats in FEATURES:
            for seed in range(3):
                chk = kernels.holdout_check(bench, random_state=seed, features=feats)
                ops_rows.append({"platform": plat, "features": feats, "seed": seed,
                                 "mape_pct": chk.metrics["mape_pct"],
                                 "spearman": chk.metrics["spearman"]})
            km = kernels.KernelModel(random_state=0, features=feats).fit(bench)
            res = cross_family_evaluation(
                kernels.with_kernel_column(src, km), kernels.with_kernel_column(tgt, km),
                ks=(10,), n_seeds=args.seeds, targets=("latency_ms",),
                methods=("offset",), default_method="offset", own_model=False,
                latency_law="kernel", progress=False)
            net_rows.append(res.summary.assign(platform=plat, features=feats))
    ops = pd.DataFrame(ops_rows).groupby(["platform", "features"])[["mape_pct", "spearman"]]
    ops = ops.agg(["mean", "std"]).round(3)
    nets = pd.concat(net_rows, ignore_index=True)
    table = nets.pivot_table(index=["platform", "model", "k"], columns=["family", "features"],
                             values="mape_pct_mean").round(2)
    buf = io.StringIO()
    buf.write(f"# python scripts/kernel_taps_check.py {' '.join(args.platforms)} "
              f"--seeds {args.seeds} --out {args.out}\n\n")
    buf.write("held-out operators (20 %, 3 seeds), mean and sd:\n" + ops.to_string() + "\n\n")
    buf.write("cross-family latency MAPE % (kernel law, held-out architectures, mean over "
              f"{args.seeds} seeds):\n" + table.to_string() + "\n")
    args.out.mkdir(parents=True, exist_ok=True)
    nets.to_csv(args.out / "cross_family.csv", index=False)
    ops.to_csv(args.out / "operators.csv")
    (args.out / "kernel_taps_check.txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
