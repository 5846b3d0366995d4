"""Benchmark: campaigns and screening on a Dask LocalCluster of processes (carb_lib.distributed).

Targets (this 2-core machine): a campaign on ``local:2`` >= 1.8x the throughput of
one worker for configs <= 0.2 GFLOP; screening 10,000,000 extended-space candidates on
``local:2`` with peak client memory <= 2 GiB and a throughput per worker within 20 % of the
local path; the per-task overhead (for the README's "what changes for 100 GPUs").

Each part runs in a fresh Python process (so its peak memory is its own):

``campaign``
    ``--n`` configs of at most 0.2 GFLOP (whole batch; a seeded stratified sample), the
    default protocol with one thread, ``ref_every=0``: the local path
    (:func:`carb_lib.measure.campaign.run_campaign` in the process), ``local:1`` and ``local:2``. The
    workers are warmed up first by a 2-config campaign (imports and the first measurement's
    one-off costs are not throughput). Rows are measured on this CPU and thrown away.
``overhead``
    No-op tasks asking for the ``measure`` resource on ``local:2``: the round trip of one task
    at a time (what a worker waits between two measurements: the client dispatches the next
    config when the previous one comes back) and the throughput of 2,000 tasks in flight
    (what the scheduler can dispatch).
``screen``
    ``--screen-n`` candidates of ``--space`` (``extended``: 69,120 distinct configs, so most
    of 10M draws are repeats that each partition drops before predicting; ``extended-dense``:
    94.8 million, ~9.5M distinct in 10M draws) in partitions of ``--partition-size``
    (:func:`carb_lib.distributed.screen_on_cluster`), on ``local:1`` and ``local:2``: wall time,
    the workers' busy (wall) and CPU time (per CPU second is robust to a shared machine), the
    client's peak RSS (``ru_maxrss``; the LocalCluster's scheduler runs in the client process,
    the model is loaded there). ``equal``: ``--equal-n`` candidates of ``--space`` on ``local:2`` in four
    partitions and by the local path on the same candidates: whether counts, front and
    shortlist are identical. ``screen-local``: the local path
    (:func:`carb_lib.screening.load_candidates` + :func:`carb_lib.screening.screen`) on one
    partition's worth of candidates of the same space, in its own process.

The screening model is the small CARBRegressor of ``bench_screening.py`` (one thread) fitted
on SYNTHETIC data: the timings are of the code. Writes ``results/benchmarks/cluster.csv``
(the rows of parts and spaces not run this time are kept); runs below the default sizes are
labelled ``full_size=False``. The machine is shared: the 1-minute
load average is recorded with every row. Do not run during a CPU measurement campaign.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

FULL_N, FULL_SCREEN_N, PARTITION = 40, 10_000_000, 1_000_000
TARGET_SPEEDUP, TARGET_CLIENT_GIB, TARGET_PER_WORKER = 1.8, 2.0, 0.8
BUDGETS = ["energy_j<=5", "latency_ms<=50", "peak_mem_mib<=4096"]
OBJECTIVES = ["energy_j", "peak_mem_mib"]  # + params (capacity proxy): 3 objectives


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def part_campaign(n: int) -> list[dict]:
    from carb_lib.distributed import open_cluster, run_cluster_campaign
    from carb_lib.measure.campaign import run_campaign, sample_configs
    from carb_lib.measure.profiling import Protocol

    proto = Protocol(threads=1)
    cfg = sample_configs(n, seed=11, max_gflops=0.2, sample_under_cap=True)
    warm = sample_configs(2, seed=12, max_gflops=0.02, sample_under_cap=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        run_campaign(warm, Path(tmp) / "w0", "cpu", proto, ref_every=0, progress=False)
        t0 = time.perf_counter()
        run_campaign(cfg, Path(tmp) / "local", "cpu", proto, ref_every=0, progress=False)
        dt = time.perf_counter() - t0
        rows.append({"case": "campaign", "setup": "local path", "n": len(cfg), "seconds": dt,
                     "configs_per_s": len(cfg) / dt})
        for k in (1, 2):
            with open_cluster(f"local:{k}", log=lambda m: None) as client:
                run_cluster_campaign(warm, Path(tmp) / f"w{k}", client, "cpu", proto,
                                     ref_every=0, progress=False)
                t0 = time.perf_counter()
                res = run_cluster_campaign(cfg, Path(tmp) / f"c{k}", client, "cpu", proto,
                                           ref_every=0, progress=False)
                dt = time.perf_counter() - t0
            rows.append({"case": "campaign", "setup": f"local:{k}", "n": len(cfg), "seconds": dt,
                         "configs_per_s": len(cfg) / dt,
                         "task_overhead_ms": res.task_overhead_ms})
    return rows


def _noop(x):
    return x


def part_overhead() -> list[dict]:
    from distributed import wait

    from carb_lib.distributed import open_cluster

    rows = []
    with open_cluster("local:2", log=lambda m: None) as client:
        client.submit(_noop, 0, pure=False).result()
        n_seq = 200
        t0 = time.perf_counter()
        for i in range(n_seq):
            client.submit(_noop, i, pure=False, resources={"measure": 1}).result()
        dt = time.perf_counter() - t0
        rows.append({"case": "overhead", "setup": "local:2", "n": n_seq, "seconds": dt,
                     "task_overhead_ms": dt / n_seq * 1e3, "note": "one task at a time"})
        n_par = 2000
        t0 = time.perf_counter()
        futs = [client.submit(_noop, i, pure=False, resources={"measure": 1})
                for i in range(n_par)]
        wait(futs)
        dt = time.perf_counter() - t0
        rows.append({"case": "overhead", "setup": "local:2", "n": n_par, "seconds": dt,
                     "tasks_per_s": n_par / dt, "note": "all tasks in flight"})
    return rows


def _spec(model):
    from carb_lib import screening as scr

    return scr.DeploymentSpec(platform=model.platform_, budgets=BUDGETS, objectives=OBJECTIVES,
                              k=10)


def part_screen(model_path: str, n: int, partition: int, workers: int, space: str
                ) -> list[dict]:
    from carb_lib.distributed import open_cluster, screen_on_cluster
    from carb_lib.ensemble import load_model

    model = load_model(model_path)
    with open_cluster(f"local:{workers}", log=lambda m: None) as client:
        t0 = time.perf_counter()
        res = screen_on_cluster(model, space, _spec(model), client, n_extended=n, seed=0,
                                partition_size=partition, progress=False)
        dt = time.perf_counter() - t0
    busy, cpu = res.timings_s["workers_busy"], res.timings_s["workers_cpu"]
    return [{"case": "screen", "space": space, "setup": f"local:{workers}", "n": n,
             "partition_size": partition,
             "seconds": dt, "candidates_per_s": n / dt, "workers_busy_s": busy,
             "per_worker_candidates_per_s": n / busy, "cpu_s": cpu,
             "candidates_per_cpu_s": n / cpu, "client_peak_mib": _peak_mib(),
             "distinct_candidates": res.counts["candidates"],
             "survivors": res.counts["survivors"], "stage2_rows": len(res.table)}]


def part_screen_local(model_path: str, partition: int, space: str) -> list[dict]:
    from carb_lib import screening as scr
    from carb_lib.ensemble import load_model

    model = load_model(model_path)
    t0, c0 = time.perf_counter(), time.process_time()
    cands = scr.load_candidates(space, n_extended=partition, seed=0)
    res = scr.screen(model, cands, _spec(model))
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return [{"case": "screen", "space": space, "setup": "local path", "n": partition,
             "seconds": dt,
             "candidates_per_s": partition / dt, "per_worker_candidates_per_s": partition / dt,
             "cpu_s": cpu, "candidates_per_cpu_s": partition / cpu,
             "client_peak_mib": _peak_mib(), "distinct_candidates": res.counts["candidates"]}]


def part_equal(model_path: str, n: int, partition: int, space: str) -> list[dict]:
    """``n`` candidates of ``space`` screened on ``local:2`` in partitions and by the local path
    on the same candidates: are the counts, the front and the shortlist identical?"""
    from carb_lib import screening as scr
    from carb_lib.distributed import extended_partitions, open_cluster, screen_on_cluster
    from carb_lib.ensemble import load_model

    model = load_model(model_path)
    spec = _spec(model)
    with open_cluster("local:2", log=lambda m: None) as client:
        dist = screen_on_cluster(model, space, spec, client, n_extended=n, seed=0,
                                 partition_size=partition, progress=False)
    cands = pd.concat([p.load() for p in extended_partitions(n, 0, partition, space)],
                      ignore_index=True)
    local = scr.screen(model, cands[~cands["config_id"].duplicated()], spec)
    cols = list(local.shortlist.columns)
    same_shortlist = (list(dist.shortlist["config_id"]) == list(local.shortlist["config_id"])
                      and np.allclose(dist.shortlist[cols].select_dtypes("number"),
                                      local.shortlist[cols].select_dtypes("number"),
                                      equal_nan=True))
    return [{"case": "equal", "space": space, "setup": "local:2 vs local path", "n": n,
             "partition_size": partition, "distinct_candidates": local.counts["candidates"],
             "survivors": local.counts["survivors"], "front": local.counts["front"],
             "same_counts": dist.counts == local.counts,
             "same_front": list(dist.front["config_id"]) == list(local.front["config_id"]),
             "same_shortlist": bool(same_shortlist)}]


def fit_model(path: Path) -> None:
    from carb_lib.dataset.synthetic import make_synthetic_dataset  # SYNTHETIC training data
    from carb_lib.ensemble import CARBRegressor, save_model

    df = make_synthetic_dataset(n=2000, seed=0, with_telemetry=False)
    # the learners pinned: this benchmark's model predates the ExtraTrees default
    model = CARBRegressor(learners=("xgb", "lgbm"), n_estimators_xgb=50, max_depth_xgb=6, n_estimators_lgbm=50,
                          num_leaves_lgbm=31, n_estimators_et=10, n_estimators_regime=20, cv=3,
                          n_jobs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(df)
    save_model(model, path)


def _run_part(*args: str) -> list[dict]:
    proc = subprocess.run([sys.executable, __file__, "--part", *args], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"part {args[0]} failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=FULL_N, help="configs of the campaign part")
    ap.add_argument("--screen-n", type=int, default=FULL_SCREEN_N)
    ap.add_argument("--partition-size", type=int, default=PARTITION)
    ap.add_argument("--space", default="extended", choices=["extended", "extended-dense"],
                    help="candidate space of the screen part")
    ap.add_argument("--skip", action="append", default=[],
                    help="campaign | overhead | screen | equal (repeatable)")
    ap.add_argument("--equal-n", type=int, default=1_000_000,
                    help="candidates of the equal part (local:2 vs the local path)")
    ap.add_argument("--part", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks/cluster.csv"))
    args = ap.parse_args()
    if args.part:  # a child process: run one part, print its rows as one JSON line
        name, *rest = args.part
        fn = {"campaign": lambda: part_campaign(int(rest[0])), "overhead": part_overhead,
              "screen": lambda: part_screen(rest[0], int(rest[1]), int(rest[2]), int(rest[3]),
                                            rest[4]),
              "screen-local": lambda: part_screen_local(rest[0], int(rest[1]), rest[2]),
              "equal": lambda: part_equal(rest[0], int(rest[1]), int(rest[2]), rest[3])}[name]
        sys.stdout.write(json.dumps(fn()) + "\n")
        return
    rows: list[dict] = []
    if "campaign" not in args.skip:
        rows += _run_part("campaign", str(args.n))
    if "overhead" not in args.skip:
        rows += _run_part("overhead")
    if "screen" not in args.skip or "equal" not in args.skip:
        with tempfile.TemporaryDirectory() as tmp:
            model = Path(tmp) / "model.joblib"
            fit_model(model)
            if "equal" not in args.skip:
                rows += _run_part("equal", str(model), str(args.equal_n),
                                  str(max(1, args.equal_n // 4)), args.space)
            for k in (1, 2) if "screen" not in args.skip else ():
                rows += _run_part("screen", str(model), str(args.screen_n),
                                  str(args.partition_size), str(k), args.space)
            if "screen" not in args.skip:
                rows += _run_part("screen-local", str(model),
                                  str(min(args.partition_size, args.screen_n)), args.space)
    out = pd.DataFrame(rows)
    out["full_size"] = args.n >= FULL_N and args.screen_n >= FULL_SCREEN_N
    out["cpus"] = os.cpu_count()
    out["load_avg_1min_at_end"] = os.getloadavg()[0]
    out["measured_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    new = out
    if args.out.exists():  # keep the rows of parts (and spaces) not run this time
        old = pd.read_csv(args.out)
        ran = set(out["case"])
        keep = ~old["case"].isin(ran)
        for case in {"screen", "equal"} & ran:  # per space
            keep |= (old["case"] == case) & (old["space"] != args.space)
        out = pd.concat([old[keep], out], ignore_index=True)
    out.to_csv(args.out, index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(new.drop(columns=["measured_at", "cpus"]).to_string(index=False))
    c = new[new["case"] == "campaign"].set_index("setup")
    if len(c) == 3:
        print(f"campaign local:2 / local:1 = {c.loc['local:2', 'configs_per_s'] / c.loc['local:1', 'configs_per_s']:.2f}x "
              f"(target >= {TARGET_SPEEDUP}); local:2 / local path = "
              f"{c.loc['local:2', 'configs_per_s'] / c.loc['local path', 'configs_per_s']:.2f}x")
    s = new[new["case"] == "screen"].set_index("setup")
    if len(s) == 3:
        loc = s.loc["local path"]
        print(f"screen: client peak {s.loc['local:2', 'client_peak_mib'] / 1024:.2f} GiB "
              f"(target <= {TARGET_CLIENT_GIB}); per-worker throughput / local path (wall): "
              + ", ".join(f"{k} {s.loc[k, 'per_worker_candidates_per_s'] / loc['candidates_per_s']:.2f}"
                          for k in ("local:1", "local:2"))
              + "; per CPU second: "
              + ", ".join(f"{k} {s.loc[k, 'candidates_per_cpu_s'] / loc['candidates_per_cpu_s']:.2f}"
                          for k in ("local:1", "local:2"))
              + f" (target >= {TARGET_PER_WORKER})")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
