"""What sequencing adds to operators timed alone: short chains against their parts, on this CPU.

The kernel law predicts a network as the sum of its operators timed alone. Eager PyTorch runs a
convolution's batch norm and activation as separate calls on the tensor the convolution has
just written; this benchmark measures what that sequence costs beyond its parts
(:mod:`carb_lib.kernels.chains`): the chains (convolution or depthwise convolution, batch norm,
activation) of the design families' networks (ResNet, MobileNetV2, EfficientNet: the operator
lists, ``network_ops``, of every catalogued design config), a seeded sample of at most
``--per-pattern`` distinct chains of each pattern, each timed as one call and operator by
operator, alternated over ``--rounds`` rounds, at batches 1 and 16, fp32, under the protocol of
the zoo rows and the kept-heap benchmarks: one thread, the heap kept, denormals flushed.

Writes ``results/benchmarks/chain_overhead_<platform>.csv`` (one row per chain and batch) and
``chain_overhead_<platform>_summary.csv`` (per pattern and batch: chains, median ratio chain /
sum of parts with its 10th-90th percentiles, and the share of time the sum of parts misses;
on the AMD EPYC Zen 4: ``chain_overhead_cpu_epyc_zen4_2c.csv`` and
``chain_overhead_cpu_epyc_zen4_2c_summary.csv``).
One run per CPU kind, reported as it comes; ``--score-only`` recomputes the summary.

``python benchmarks/chain_overhead.py`` (about 10 min on 2 cores; nothing else heavy meanwhile).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import _once  # noqa: E402 - benchmarks/, the script's folder
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: The design families whose networks' chains are timed.
FAMILIES = ("resnet", "mobilenetv2", "efficientnet")


def chains_of(per_pattern: int, seed: int) -> pd.DataFrame:
    """A seeded sample of the distinct chains of the design families' networks: the configs of
    every catalogued design campaign (a network's operators do not depend on where it ran)."""
    from carb_lib.dataset.catalog import load_catalog
    from carb_lib.kernels.chains import find_chains
    from carb_lib.kernels.op_lists import network_ops

    cat = load_catalog()
    rows = pd.concat([pd.read_parquet(p) for plat in cat.platforms()
                      for p in cat.files(plat, "design", "rows")], ignore_index=True)
    rows = rows[rows["status"].eq("ok") & rows["family"].isin(FAMILIES)]
    rows = rows.drop_duplicates("config_id").reset_index(drop=True)
    ops, _ = network_ops(rows)
    chains = find_chains(ops)
    keep = []
    for _, cids in chains.groupby("pattern")["chain_id"].unique().items():
        keep += pd.Series(sorted(cids)).sample(min(per_pattern, len(cids)),
                                               random_state=seed).tolist()
    return chains[chains["chain_id"].isin(keep)].reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-pattern", type=int, default=12, help="chains of each pattern")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 16])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    _once.add_options(ap, "a platform measured on this CPU kind (default: found by cpu_id)")
    args = ap.parse_args(argv)

    from carb_lib.kernels.chains import chain_summary, time_chains

    begun = _once.begin(args, "chain_overhead", "design")
    if begun is None:
        return 0
    platform, out, summary_out, rows = begun
    if rows is None:
        chains = chains_of(args.per_pattern, args.seed)
        print(f"{platform}: {chains['chain_id'].nunique()} chains "
              f"({', '.join(f'{k} {v}' for k, v in chains.groupby('pattern')['chain_id'].nunique().items())}), "
              f"batches {args.batches}, fp32, 1 thread, heap kept")
        t0 = time.perf_counter()
        rows = time_chains(chains, batches=args.batches, rounds=args.rounds, threads=1,
                           keep_heap=True).assign(platform=platform)
        print(f"timed in {time.perf_counter() - t0:.0f} s")
        args.results_dir.mkdir(parents=True, exist_ok=True)
        rows.to_csv(out, index=False)
    summary = chain_summary(rows)
    overall = chain_summary(rows.assign(pattern="all"))
    table = pd.concat([summary, overall], ignore_index=True).assign(platform=platform)
    _once.finish(table, out, summary_out, width=140)
    return 0


if __name__ == "__main__":
    sys.exit(main())
