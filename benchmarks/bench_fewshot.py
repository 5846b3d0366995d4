"""Benchmark: few-shot latency ranking on each HELP device with k = 10 target samples.

For every device setting of the shipped HELP table (``data/external/help_nb201.parquet``:
11 devices, GPUs at batch 1/32/256), the sources are every setting of every *other* device
(leave-one-device-out); k = 10 random NB201 networks are measured on the target and the other
15,615 are predicted. Spearman, MAPE and R^2 are averaged over ``--draws`` random draws
(seeded). Methods: the default ``blend`` and its parts ``ridge`` and ``loglinear``, plus the
FLOPs-alone baseline. Writes ``results/benchmarks/fewshot_k10.csv`` (one row per setting and
method) and prints the per-device table beside HELP's reported Table 3 values (which are for
HELP's own unseen devices, not these).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pandas as pd  # noqa: E402

from carb_lib.dataset.readers import load_measurements  # noqa: E402
from carb_lib.transfer import pairwise as T  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT / "data/external/help_nb201.parquet")
    ap.add_argument("--out", type=Path, default=ROOT / "results/benchmarks/fewshot_k10.csv")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--draws", type=int, default=10)
    ap.add_argument("--methods", default="blend,ridge,loglinear,flops")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    df = load_measurements(args.data)
    methods = tuple(args.methods.split(","))
    curve = T.few_shot_curve(df, ks=(args.k,), n_draws=args.draws, methods=methods,
                             progress=True)
    summary = T.summarise_curve(curve)
    settings = T.settings_table(df)
    prim = set(T.primary_settings(settings))
    summary["primary_setting"] = summary["target"].isin(prim)
    summary["k"] = args.k
    summary["seconds_total"] = round(time.perf_counter() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary.to_csv(args.out, index=False)

    wide = summary.pivot_table(index=["device_kind", "target"], columns="method",
                               values="spearman_mean").round(3)
    mape = summary[summary["method"] == T.DEFAULT_METHOD].set_index("target")["mape_pct_mean"]
    wide[f"mape_pct_{T.DEFAULT_METHOD}"] = wide.index.get_level_values("target").map(mape).round(1)
    pd.set_option("display.width", 160)
    print(f"\nSpearman at k={args.k}, mean of {args.draws} draws, leave-one-device-out:")
    print(wide.to_string())
    cmp = T.help_comparison(summary, settings, k=args.k)
    print("\nBeside HELP Table 3 (reported by HELP, on its own unseen devices):")
    print(cmp[["group", "help_reported", "help_devices", "ours", "our_devices"]].round(3)
          .to_string(index=False))
    print(f"\nwrote {args.out} in {time.perf_counter() - t0:.0f} s")
    return summary


if __name__ == "__main__":
    main()
