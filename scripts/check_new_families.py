"""Check analytic static features of the mobilenetv2, vgg and efficientnet families against
measured ones, on a stratified sample of each family's grid plus its extremes.

Usage: ``python scripts/check_new_families.py [--n 200] [--out results/feature_check_new_families.csv] [--bench]``

For each family: the 16 extremes of ``carb_lib.families._config.check_sample`` (every
architecture column at its minimum or every one at its maximum, at 32 and 224 px, batch 1 and
256, fp32 and fp16) and ``--n`` further grid rows stratified over architecture x precision are
measured on the ``meta`` device (FlopCounterMode, parameter count, forward hooks; nothing is
allocated) and compared with the analytic features on every exact column. Writes a
per-family, per-column summary and exits non-zero on any mismatch. ``--bench`` also times
``static_features`` on 100,000 random configs of each family (one core, cold caches, median of
3; resolutions 32..384 in steps of 16).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pandas as pd  # noqa: E402
import torch  # noqa: E402

from carb_lib.families import _config, efficientnet, mobilenetv2, vgg  # noqa: E402

FAMILIES = (mobilenetv2, vgg, efficientnet)


def bench(n: int = 100_000, repeats: int = 3) -> pd.DataFrame:
    """Median seconds of ``static_features`` on ``n`` configs of each family (cold caches)."""
    rows = []
    for mod in FAMILIES:
        df = mod.sample_configs(n, seed=0, resolutions=tuple(range(32, 385, 16)))
        times = []
        for _ in range(repeats):
            mod._unit.cache_clear()
            t0 = time.perf_counter()
            mod.static_features(df)
            times.append(time.perf_counter() - t0)
        rows.append({"family": mod.FAMILY, "n_configs": n, "median_s": statistics.median(times),
                     "min_s": min(times)})
    return pd.DataFrame(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="stratified configs per family")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("results/feature_check_new_families.csv"))
    ap.add_argument("--bench", action="store_true", help="also time static_features on 100k")
    args = ap.parse_args()
    torch.set_num_threads(1)
    parts, failed = [], False
    for mod in FAMILIES:
        sample = _config.check_sample(mod.FAMILY, mod.SPACE, args.n, seed=args.seed)
        t0 = time.perf_counter()
        cmp = mod.compare_features(sample)
        elapsed = time.perf_counter() - t0
        summary = (cmp.groupby("column", sort=False)
                   .agg(n_configs=("match", "size"), n_match=("match", "sum")).reset_index())
        summary.insert(0, "family", mod.FAMILY)
        summary["all_match"] = summary["n_configs"] == summary["n_match"]
        summary["elapsed_s"] = round(elapsed, 1)
        parts.append(summary)
        bad = cmp[~cmp["match"]]
        flops = mod.static_features(sample)["flops"] / sample["batch"]
        print(f"{mod.FAMILY}: {len(sample)} configs, {len(bad)} mismatches, "
              f"FLOPs per sample {flops.min():.3g}..{flops.max():.3g} ({elapsed:.0f} s)")
        if len(bad):
            failed = True
            print(bad.head(20).to_string(), file=sys.stderr)
    out = pd.concat(parts, ignore_index=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(args.out, index=False)
    print(out.to_string(index=False))
    if args.bench:
        print(bench().to_string(index=False))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
