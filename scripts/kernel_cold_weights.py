"""Do networks with hundreds of MiB of weights run at the speed of their operators timed *cold*?

Session 19 (README, *Why those ten*): the wide ResNets that the kernel law misses at batch 1-2
take ~1.8x the sum of their operators timed alone, call after call, with warm caches. The
hypothesis: in the network each operator's weights were evicted by the other layers since its
last call, so they stream from memory. This script times every distinct weighted operator
(conv, depthwise conv, linear) of each named row twice, with the same harness as
:func:`carb_lib.kernels.bench_kernels`: warm (median of 3 windows >= 10 ms) and cold (the
median of ``--reps`` single calls, each after writing a ``--flush-mib`` buffer, larger than the
L3, that evicts the operator's weights and input); the other operators (BN, activations, adds,
pools: no or tiny weights) count warm in both sums. It also times the network whole. Per row:
``warm_ms``, ``cold_ms`` (operators summed with their multiplicity), ``network_ms``.

``python scripts/kernel_cold_weights.py data/other_cpus/cpu_xeon_gnr_2c.parquet --config-ids
results/carb/replication_cpu_xeon_gnr_2c/additivity_list.csv --out
results/carb/replication_cpu_xeon_gnr_2c/cold_weights``

Cold calls also pay for code, oneDNN's primitive cache and the TLB (session 19: 10x on the
smallest networks). ``--evict weights`` (session 20) evicts the weights only: each weighted
operator is timed warm through ``torch.nn.functional`` with one weight tensor, then rotating
through copies of its weights spread over a ``--pool-mib`` buffer (larger than any cache, at
most :data:`MAX_SLOTS` copies), input and output staying in cache; ``cold_ms`` then sums each
operator's warm time plus its rotation's extra. It first probes one core's read bandwidth by
working set (:func:`carb_lib.cache_probe.read_bandwidth`, ``<out>_probe.csv``) and writes every
operator's three timings and its minor page faults per call (``<out>_ops.csv``).

A measurement: run it on a quiet machine, nothing else running.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_additivity import _chosen_rows  # noqa: E402

from carb_lib.cache_probe import cache_knee, read_bandwidth  # noqa: E402
from carb_lib.dataset import read_dataset  # noqa: E402
from carb_lib.kernel_checks import _network_call  # noqa: E402
from carb_lib.kernels import (  # noqa: E402
    OP_COLUMNS,
    _module,
    _time_call,
    faults_per_call,
    network_ops,
)

WEIGHTED = ("conv", "dwconv", "linear")
#: Most weight copies one operator rotates through (smaller weights rotate through less than
#: the pool: 65,536 copies of 32 KiB fill 2 GiB).
MAX_SLOTS = 65536


def _weight_calls(op: dict, dtype, pool):
    """Two no-argument calls of weighted operator ``op`` through ``torch.nn.functional``: with
    one weight tensor (warm), and rotating through copies of its weights spread over ``pool``
    (a flat tensor of ``dtype``); the input is the same for both."""
    import torch
    import torch.nn.functional as F

    b, cin, cout = int(op["batch"]), int(op["cin"]), int(op["cout"])
    if op["kind"] == "linear":
        shape, x = (cout, cin), torch.randn(b, cin).to(dtype)
        bias = torch.zeros(cout, dtype=dtype)

        def run(w):
            return F.linear(x, w, bias)
    else:
        groups = int(op["groups"]) if op["kind"] == "dwconv" else 1
        shape = (cout, cin // groups, int(op["k"]), int(op["k"]))
        x = torch.randn(b, cin, int(op["h_in"]), int(op["h_in"])).to(dtype)
        s, p = int(op["stride"]), int(op["pad"])

        def run(w):
            return F.conv2d(x, w, None, s, p, 1, groups)
    n = int(np.prod(shape))
    if 2 * n > pool.numel():
        raise SystemExit(f"an operator's weights ({n} elements) need --pool-mib of at least "
                         f"twice their size")
    slots = min(MAX_SLOTS, pool.numel() // n)
    step = pool.numel() // slots
    views = [pool.narrow(0, j * step, n).view(shape) for j in range(slots)]
    state = {"j": 0}

    def rotate():
        state["j"] = (state["j"] + 1) % slots
        return run(views[state["j"]])

    return (lambda: run(views[0])), rotate, n * pool.element_size()


def _cold_call_s(call, flush, reps: int) -> float:
    """Median seconds of one call, each after ``flush()`` evicted the caches."""
    import torch

    times = []
    with torch.inference_mode():
        call()
        for _ in range(reps):
            flush()
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("datasets", type=Path, nargs="+")
    ap.add_argument("--config-ids", type=Path, required=True,
                    help="CSV with config_id (and optionally group): the rows to time")
    ap.add_argument("--out", type=Path, required=True, help="output stem (.csv and .txt)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--flush-mib", type=int, default=1024)
    ap.add_argument("--max-ms", type=float, default=400.0)
    ap.add_argument("--evict", choices=("caches", "weights"), default="caches",
                    help="caches: single calls after a --flush-mib write (session 19); weights: "
                         "windows rotating through copies of the weights (session 20)")
    ap.add_argument("--pool-mib", type=int, default=2048,
                    help="--evict weights: the buffer the weight copies are spread over")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    import torch
    from tqdm.auto import tqdm

    torch.set_num_threads(1)
    df = pd.concat([read_dataset(p) for p in args.datasets], ignore_index=True)
    df = df[(df["status"] == "ok") & (df["latency_ms"] <= args.max_ms)]
    rows = _chosen_rows(df, args.config_ids)
    ops, arch_id = network_ops(rows)
    if args.evict == "weights":
        probe = read_bandwidth()
        knee = cache_knee(probe)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        probe.to_csv(f"{args.out}_probe.csv", index=False)
        print(probe.round(3).to_string(index=False))
        print(knee)
        pools = {}
        buf = None
    else:
        buf = torch.zeros(args.flush_mib * 2**20 // 4)

    def flush() -> None:
        buf.add_(1.0)

    out, per_op = [], []
    for i in tqdm(range(len(rows)), desc="networks"):
        row = rows.iloc[i].to_dict()
        net_s = _time_call(_network_call(row), 0.01, 3)[0]
        mine = ops[ops["arch_id"] == arch_id[i]]
        count = mine.groupby(list(OP_COLUMNS), sort=False).size().rename("count").reset_index()
        dtype = torch.float16 if row["precision"] == "fp16" else torch.float32
        warm = cold = 0.0
        for _, op in count.iterrows():
            r = {**op.to_dict(), "batch": int(row["batch"])}
            call = _module(r, dtype)
            w = _time_call(call, 0.01, 3)[0]
            if op["kind"] not in WEIGHTED:
                c = w
            elif args.evict == "caches":
                c = _cold_call_s(call, flush, args.reps)
            else:
                if dtype not in pools:
                    pools[dtype] = torch.rand(args.pool_mib * 2**20 // (2 if dtype ==
                                              torch.float16 else 4)).to(dtype)
                fixed, rotate, wbytes = _weight_calls(r, dtype, pools[dtype])
                fw = _time_call(fixed, 0.01, 3)[0]
                rw = _time_call(rotate, 0.01, 3)[0]
                c = w + rw - fw
                per_op.append({"config_id": row["config_id"], "group": row.get("group"),
                               **r, "count": int(op["count"]), "weight_bytes": wbytes,
                               "warm_ms": 1e3 * w, "fn_warm_ms": 1e3 * fw,
                               "fn_rotated_ms": 1e3 * rw,
                               "faults_per_call": faults_per_call(call)})
            warm += w * int(op["count"])
            cold += c * int(op["count"])
        out.append({"config_id": row["config_id"], "group": row.get("group"),
                    "depth": row.get("depth"), "width": row.get("width"),
                    "batch": int(row["batch"]), "precision": row["precision"],
                    "latency_ms": row["latency_ms"], "network_ms": 1e3 * net_s,
                    "warm_ms": 1e3 * warm, "cold_ms": 1e3 * cold})
    res = pd.DataFrame(out).assign(warm_over_network=lambda d: d["warm_ms"] / d["network_ms"],
                                   cold_over_network=lambda d: d["cold_ms"] / d["network_ms"],
                                   cold_over_warm=lambda d: d["cold_ms"] / d["warm_ms"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    res.to_csv(args.out.with_suffix(".csv"), index=False)
    if per_op:
        pd.DataFrame(per_op).to_csv(f"{args.out}_ops.csv", index=False)
    by = "group" if res["group"].notna().all() else "precision"
    summary = res.groupby(by)[["warm_over_network", "cold_over_network", "cold_over_warm"]].median()
    if args.evict == "caches":
        how = (f"--reps {args.reps} --flush-mib {args.flush_mib}\n{len(res)} networks; weighted "
               f"operators timed warm (median of 3 windows >= 10 ms) and cold (median of "
               f"{args.reps} single calls, each after writing {args.flush_mib} MiB)")
    else:
        how = (f"--evict weights --pool-mib {args.pool_mib}\n{len(res)} networks; weighted "
               f"operators timed warm (median of 3 windows >= 10 ms) and with their weights "
               f"evicted (cold: warm + the extra of rotating through copies of the weights over "
               f"{args.pool_mib} MiB); read bandwidth: {knee.cache_gb_per_s:.1f} GB/s in cache, "
               f"{knee.memory_gb_per_s:.1f} GB/s from memory, knee at {knee.cache_mib:.0f} MiB")
    text = (f"# python scripts/kernel_cold_weights.py {' '.join(map(str, args.datasets))} "
            f"--config-ids {args.config_ids} --out {args.out} {how}; medians per {by}:\n\n"
            f"{summary.round(3).to_string()}\n")
    args.out.with_suffix(".txt").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
