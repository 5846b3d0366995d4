"""Pre-registration T (session 28): do the ResNet configs timed beside depthwise configs take
a different number of minor page faults per call than timed alone?

Session 27 found that pre-registration M's 400 ResNet configs, timed in one list with depthwise
configs, carry a reproducible per-config latency pattern (sd 0.083 in log,
``scripts/sitting_signature.py``) that the same configs timed alone lack. One candidate is the
heap: glibc serves a buffer from its heap or maps it afresh, trims the heap's top or keeps it,
by thresholds that move with what the process freed before; a buffer in fresh pages costs one
minor fault per 4 KiB page on every call.

This script times both lists as the passes campaigns do (``carb_lib.campaign.run_campaign``,
one CPU thread, one window per config, a reference every 50), each in a fresh process, in one
pass (``--seed``): the alone list (M's 400 configs) and the beside list (those and every
config of the platform's new-family passes rows, 837 on the Zen 5). A forward hook on each
network reads ``getrusage``'s minor faults and the wall time around every call; the memory
profile's calls are told apart. Per config it keeps the warm-up's first call, the median and
the maximum faults per timed call, and the median time per timed call.

Then, over the ResNet configs both lists measured: how many fault differently in the two
lists, whether the difference follows session 27's signature (:func:`sitting_signature.
beside_signature`) and this probe's own latency difference. Writes ``OUT/faults.parquet``
(one row per config and list), ``OUT/summary.txt`` and the campaigns' rows under ``runs/``.
Counting faults is not timing, but T3 reads this probe's times: run it ``nice -n -15`` and
nothing else heavy.

``python scripts/list_context_faults.py cpu_epyc_zen5_2c --out results/cross_family/sitting_source/cpu_epyc_zen5_2c/faults``
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_list import resnet_sample, write_lists  # noqa: E402
from sitting_signature import (  # noqa: E402
    beside_signature,
    deviations,
    load_sittings,
    sitting_latency,
)
from sitting_source_list import target_configs  # noqa: E402

from carb_lib.dataset import read_dataset  # noqa: E402

#: 4 KiB pages per MiB: a buffer of 1 MiB in fresh pages costs this many minor faults.
PAGES_PER_MIB = 256
#: The lists the probe times, in this order, each in its own process.
CONTEXTS = ("alone", "beside")
#: Calls before the timed windows (``Protocol.cpu_warmup_iters``' default).
WARMUP = 3


def lists(platform: str, out: Path) -> dict[str, Path]:
    """The alone and beside config lists, drawn as sessions 26-27's campaigns drew them."""
    quiet = read_dataset(f"data/other_cpus/{platform}.parquet")
    resnet = resnet_sample(quiet, 400, max_ms=300.0, seed=1)
    targets = target_configs(read_dataset(f"data/other_cpus/new_families/{platform}_passes.parquet"))
    return {"alone": write_lists(out / "alone", {"resnet": resnet}),
            "beside": write_lists(out / "beside", {"resnet": resnet, "targets": targets})}


def per_config(calls: pd.DataFrame) -> pd.DataFrame:
    """Per config (and list) from the per-call records (``config_id``, ``phase`` of
    ``measure`` or ``memory``, ``faults``, ``seconds``, in call order): the first call's faults,
    the median and maximum faults per call and the median milliseconds per call over the
    timed calls (the ``measure`` calls after :data:`WARMUP`)."""
    out = []
    for (ctx, cid, k), g in calls.groupby(["context", "config_id", "visit"], sort=False):
        meas = g[g["phase"] == "measure"]
        timed = meas.iloc[WARMUP:]
        if timed.empty:
            continue
        out.append({"context": ctx, "config_id": cid, "visit": k, "family": g["family"].iloc[0],
                    "first_faults": int(meas["faults"].iloc[0]),
                    "faults_per_call": float(timed["faults"].median()),
                    "faults_max": int(timed["faults"].max()),
                    "ms_per_call": float(timed["seconds"].median() * 1e3),
                    "timed_calls": len(timed)})
    return pd.DataFrame(out)


def faulting_configs(frame: pd.DataFrame, family: str = "resnet") -> list[str]:
    """The ``family`` configs whose median faults per timed call reach :data:`PAGES_PER_MIB`
    (1 MiB of fresh pages) in either list (first visit), sorted."""
    first = frame[(frame["family"] == family) & (frame["visit"] == 0)]
    return sorted(first.loc[first["faults_per_call"] >= PAGES_PER_MIB, "config_id"].unique())


def compare(frame: pd.DataFrame, signature: pd.Series | None = None) -> dict[str, float]:
    """The pre-registered quantities over the ResNet configs both lists measured (each
    config's first visit): the share whose median faults per timed call differ by at least
    :data:`PAGES_PER_MIB` (1 MiB) between the lists, the shares faulting that much in each,
    Spearman of the difference (beside - alone) with ``signature`` (over the configs it holds)
    and with the probe's log latency difference."""
    res = frame[(frame["family"] == "resnet") & (frame["visit"] == 0)]
    wide = res.pivot(index="config_id", columns="context")
    f = wide["faults_per_call"].dropna()
    ms = wide["ms_per_call"].loc[f.index]
    d_faults = f["beside"] - f["alone"]
    d_log = np.log(ms["beside"]) - np.log(ms["alone"])
    out = {"configs": float(len(f)),
           "share_differ": float((d_faults.abs() >= PAGES_PER_MIB).mean()),
           "share_fault_alone": float((f["alone"] >= PAGES_PER_MIB).mean()),
           "share_fault_beside": float((f["beside"] >= PAGES_PER_MIB).mean()),
           "median_abs_diff_mib": float(d_faults.abs().median() / PAGES_PER_MIB),
           "spearman_latency": float(spearmanr(d_faults, d_log)[0]) if d_faults.std() > 0
           else float("nan")}
    if signature is not None:
        ids = d_faults.index.intersection(signature.index)
        out["signature_configs"] = float(len(ids))
        out["spearman_signature"] = (float(spearmanr(d_faults[ids], signature[ids])[0])
                                     if d_faults[ids].std() > 0 else float("nan"))
    return out


def _child(context: str, config_list: Path, parts: Path, platform: str, seed: int,
           out: Path) -> None:
    """One list in this process: ``run_campaign`` with a CPU device whose networks record the
    faults and wall time of every call."""
    import carb_lib.devices as devices
    from carb_lib.campaign import read_config_list, run_campaign
    from carb_lib.protocol import Protocol

    records: list[tuple] = []
    state = {"phase": "measure", "config": None, "family": None}
    visits: dict[str, int] = {}
    memory = devices.cpu_peak_memory_bytes

    def in_memory_phase(model, x):
        state["phase"] = "memory"
        try:
            return memory(model, x)
        finally:
            state["phase"] = "measure"

    devices.cpu_peak_memory_bytes = in_memory_phase

    class FaultCountingCpu(devices.CpuDevice):
        def prepare(self, model, config, protocol):
            model, x = super().prepare(model, config, protocol)
            cid = config.config_id
            visit = visits.get(cid, 0)
            visits[cid] = visit + 1
            fam = str(config.to_dict().get("family", "resnet"))
            mark: list[float] = []

            def before(_m, _inp):
                mark[:] = [resource.getrusage(resource.RUSAGE_SELF).ru_minflt,
                           time.perf_counter()]

            def after(_m, _inp, _out):
                t = time.perf_counter()
                flt = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                records.append((context, cid, visit, fam, state["phase"], flt - mark[0],
                                t - mark[1]))

            model.register_forward_pre_hook(before)
            model.register_forward_hook(after)
            return model, x

    configs = read_config_list(config_list)
    protocol = Protocol(**{"n_windows": 1, "max_windows": 2, "threads": 1})
    run_campaign(configs, parts, FaultCountingCpu(platform=platform), protocol,
                 platform=platform, seed=seed, ref_every=50, progress=False)
    pd.DataFrame(records, columns=["context", "config_id", "visit", "family", "phase", "faults",
                                   "seconds"]).to_parquet(out, index=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=5, help="the order of both lists' pass")
    ap.add_argument("--child", nargs=5, metavar=("CONTEXT", "LIST", "PARTS", "SEED", "OUT"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        ctx, lst, parts, seed, out = args.child
        _child(ctx, Path(lst), Path(parts), args.platform, int(seed), Path(out))
        return
    if (args.out / "faults.parquet").exists():
        raise SystemExit(f"list_context_faults: {args.out}/faults.parquet exists")
    run = Path("runs") / f"{args.platform}_list_context_faults"
    paths = lists(args.platform, run)
    frames = []
    for ctx in CONTEXTS:
        calls = run / f"{ctx}_calls.parquet"
        if not calls.exists():
            print(f"[faults] {ctx} list {time.strftime('%H:%M:%S', time.gmtime())} UTC",
                  flush=True)
            subprocess.run([sys.executable, __file__, args.platform, "--out", str(args.out),
                            "--child", ctx, str(paths[ctx]), str(run / f"{ctx}_parts"),
                            str(args.seed), str(calls)], check=True)
        frames.append(per_config(pd.read_parquet(calls)))
    frame = pd.concat(frames, ignore_index=True)
    rows, beside = load_sittings(args.platform)
    sig = beside_signature(deviations(sitting_latency(rows)), beside)
    res = compare(frame, sig)
    args.out.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(args.out / "faults.parquet", index=False)
    by = frame[frame["visit"] == 0].groupby(["context", "family"])["faults_per_call"]
    lines = [f"# python scripts/list_context_faults.py {args.platform} --out {args.out}"
             f"{'' if args.seed == 5 else f' --seed {args.seed}'}",
             "minor faults per timed call (median per config), by list and family:",
             by.describe(percentiles=[0.5, 0.9]).round(1).to_string(), "",
             "the ResNet configs both lists measured:", json.dumps(res, indent=1)]
    (args.out / "summary.txt").write_text("\n".join(lines) + "\n")
    print((args.out / "summary.txt").read_text(), end="")


if __name__ == "__main__":
    main()
