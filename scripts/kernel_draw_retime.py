"""Is a kernel benchmark's host speed the same in every draw? Re-time a sample of each draw now.

A benchmark grown with ``carb kernels --append`` holds draws timed in different sessions
(``sample_seed``). On a shared VM the host's speed can differ between sessions. This script
re-times, in one sitting and in one shuffled order, a seeded sample of each draw's operators
(those stored at <= ``--max-ms``) with the benchmark's own protocol
(:func:`carb_lib.kernels.bench_kernels`), and reports per draw the median ratio of the stored
time to today's (paired, the same operator): draws with different ratios were timed at
different host speeds. It writes the paired rows (``--out``, Parquet) and a text summary beside
them.

``python scripts/kernel_draw_retime.py data/kernels/cpu_epyc_zen3_2c.parquet --per-draw 120
--out results/measurement/kernel_draw_retime_cpu_epyc_zen3_2c.parquet``
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib import kernels
from carb_lib.dataset import atomic_write_parquet
from carb_lib.devices import cpu_identity, refuse_other_cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench", type=Path)
    ap.add_argument("--per-draw", type=int, default=120)
    ap.add_argument("--max-ms", type=float, default=100.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    bench = kernels.read_bench(args.bench).reset_index(drop=True)
    try:
        refuse_other_cpu(bench.get("cpu_id", ()), str(args.bench),
                         "re-time a benchmark on the CPU that timed it")
    except ValueError as err:
        raise SystemExit(str(err)) from None
    here = cpu_identity()
    rng = np.random.default_rng(args.seed)
    ok = bench["time_ms"].to_numpy(float) <= args.max_ms
    picks = [rng.choice(np.flatnonzero(ok & (bench["sample_seed"] == d).to_numpy()),
                        size=args.per_draw, replace=False)
             for d in sorted(bench["sample_seed"].unique())]
    idx = rng.permutation(np.concatenate(picks))  # one shuffled order: drift hits every draw
    sample = bench.loc[idx].reset_index(drop=True)
    now = kernels.bench_kernels(sample, platform=str(sample["platform"].iloc[0]))
    pairs = sample[[*kernels.OP_COLUMNS, "batch", "precision", "sample_seed", "sampler",
                    "time_ms", "cv", "measured_at"]].rename(
        columns={"time_ms": "stored_ms", "cv": "stored_cv", "measured_at": "stored_at"})
    pairs = pairs.assign(retimed_ms=now["time_ms"].to_numpy(), retimed_cv=now["cv"].to_numpy(),
                         retimed_at=now["measured_at"].to_numpy(), cpu_id=here,
                         git_commit=now["git_commit"].to_numpy(),
                         git_dirty=now["git_dirty"].to_numpy())
    pairs["ratio"] = pairs["stored_ms"] / pairs["retimed_ms"]
    g = pairs.groupby("sample_seed")
    summary = pd.DataFrame({
        "sampler": g["sampler"].first(), "n": g.size(),
        "stored_at": g["stored_at"].min().astype(str).str[:16],
        "median_stored_over_now": g["ratio"].median().round(3),
        "q25": g["ratio"].quantile(0.25).round(3), "q75": g["ratio"].quantile(0.75).round(3),
    })
    buf = io.StringIO()
    buf.write(f"# python scripts/kernel_draw_retime.py {args.bench} --per-draw {args.per_draw} "
              f"--max-ms {args.max_ms:g} --seed {args.seed} --out {args.out}\n")
    buf.write(f"re-timed {pairs['retimed_at'].min()} - {pairs['retimed_at'].max()} on {here}\n")
    buf.write("stored / re-timed time of the same operator, per draw (< 1: the draw's host was "
              "faster than today's)\n\n" + summary.to_string() + "\n")
    atomic_write_parquet(pairs, args.out)
    args.out.with_suffix(".txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
