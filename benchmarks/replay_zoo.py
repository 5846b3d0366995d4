"""Zoo networks from their own calls: time to time them on first sight, and the sum against the network.

For each network (``--networks``, one of every kind the design families do not hold and of
those they do) at batches 1 and 16, fp32, 224 px, on this CPU, under the protocol of the zoo
rows (one thread, the heap kept, denormals flushed):

1. :func:`carb_lib.kernels.replay.network_time` with an empty cache (a temporary folder of its
   own, not the user's): every distinct aten call timed once (``first_sight_s``: the whole
   look-up, the anchor set's timing included), its sum ``predicted_ms``; then again with a new
   cache object on the same folder (``cached_s``: nothing timed; the anchors, timed once per
   cache object for every network it looks up, excluded);
2. the network itself, timed now by the same harness as each call
   (:func:`carb_lib.kernels.law._time_call`: two warm-up calls, the median of three windows of
   at least 0.5 s): ``measured_now_ms``;
3. the stored zoo row of this CPU kind, where the catalog has one (``stored_ms``, timed by the
   profiler on another VM of the kind, another day);
4. the baseline beside it: the kernel law's operator sum (``kernel_law_ms``: the operators of
   its twelve kinds predicted by the kernel model fitted on the platform's benchmark timed with
   the zoo rows' heap, summed, no fitted scale).

Writes ``results/benchmarks/replay_zoo_<platform>.csv`` (one row per network and batch) and
``replay_zoo_<platform>_summary.csv`` (per batch: median first-sight and cached seconds, the
median and 10th-90th percentiles of sum / network now and sum / stored row, and the
baseline's; on the AMD EPYC Zen 4: ``replay_zoo_cpu_epyc_zen4_2c.csv`` and
``replay_zoo_cpu_epyc_zen4_2c_summary.csv``). One run per CPU
kind, reported as it comes; ``--score-only`` recomputes the summary.

``python benchmarks/replay_zoo.py`` (about 6 min on 2 cores; nothing else heavy meanwhile).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import _once  # noqa: E402 - benchmarks/, the script's folder
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: The networks: AlexNet's large early convolutions, GoogLeNet's branches, ShuffleNet's channel
#: shuffles, ConvNeXt's 7x7 depthwise convolutions and LayerNorm, DenseNet's concatenations,
#: SqueezeNet, RegNet, MobileNetV3's Hardswish, and three of the families' kinds.
NETWORKS = ("alexnet", "googlenet", "shufflenet_v2_x1_0", "convnext_tiny", "densenet121",
            "squeezenet1_1", "regnet_y_400mf", "mobilenet_v3_large", "mnasnet1_0", "resnet50",
            "mobilenet_v2", "efficientnet_b0")


def _stored(platform: str | None) -> pd.DataFrame:
    """The zoo rows of ``platform`` (fp32, 224 px, ok), by network and batch."""
    from carb_lib.dataset.catalog import load_catalog
    from carb_lib.evaluation.zoo import FACTORY_PREFIX

    if platform is None:
        return pd.DataFrame(columns=["network", "batch", "stored_ms"])
    files = [e.path for e in load_catalog().entries(platform, "zoo", "rows") if e.path.is_file()]
    if not files:
        return pd.DataFrame(columns=["network", "batch", "stored_ms"])
    z = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    z = z[(z["precision"] == "fp32") & (z["resolution"] == 224) & (z["status"] == "ok")]
    net = z["module"].astype(str).str.slice(len(FACTORY_PREFIX))  # the zoo rows' own rule
    return (z.assign(network=net).groupby(["network", "batch"])["latency_ms"].median()
            .rename("stored_ms").reset_index())


def kernel_law_ms(rows: pd.DataFrame, platform: str | None) -> pd.Series:
    """The baseline: each row's operators predicted by the kernel model fitted on the
    platform's benchmark timed with the zoo rows' heap (the catalog's first for the zoo
    campaign), summed with no fitted scale (notebook 07's ``operators_summed``)."""
    from carb_lib.core.vocab import KERNEL_FEATURE
    from carb_lib.dataset.catalog import load_catalog
    from carb_lib.families.zoo import zoo_candidates
    from carb_lib.kernels.law import KernelModel, with_kernel_column
    from carb_lib.kernels.operators import read_bench

    benches = load_catalog().benchmarks(platform, "zoo") if platform else []
    if not benches:
        return pd.Series(np.nan, index=rows.index)
    model = KernelModel(random_state=0).fit(read_bench(benches[0].path))
    out = pd.Series(np.nan, index=rows.index)
    for batch, g in rows.groupby("batch"):
        cands = zoo_candidates(list(g["network"]), batches=[int(batch)]).table
        k = with_kernel_column(cands, model).set_index("network")[KERNEL_FEATURE]
        out[g.index] = g["network"].map(k).to_numpy()
    return out


def run(networks: list[str], batches: list[int], cache_dir: Path) -> pd.DataFrame:
    import torch
    from tqdm.auto import tqdm

    from carb_lib.families._torchvision import import_torchvision
    from carb_lib.families.zoo import network_kind
    from carb_lib.kernels.replay import CallCache, network_time

    models = import_torchvision().models
    torch.set_num_threads(1)
    rows = []
    for name, batch in tqdm([(n, b) for n in networks for b in batches], desc="networks"):
        net, x = models.get_model(name).eval(), torch.randn(batch, 3, 224, 224)
        shape = tuple(x.shape)
        folder = cache_dir / f"{name}_b{batch}"  # its own: no shape seen by another network
        t0 = time.perf_counter()
        first = network_time(net, shape, cache=CallCache(folder, keep_heap=True, budget_s=600))
        first_s = time.perf_counter() - t0
        cache = CallCache(folder, keep_heap=True)
        cache.anchor_scale()  # once per cache object, for every network it then looks up
        t0 = time.perf_counter()
        again = network_time(net, shape, cache=cache)
        cached_s = time.perf_counter() - t0
        now_s, cv = _once.time_network(net, x, 0.5)
        rows.append({
            "network": name, "network_kind": network_kind(name), "batch": batch,
            "precision": "fp32", "resolution": 224, "n_calls": first.n_calls,
            "n_distinct": first.n_distinct, "n_view_calls": first.n_view_calls,
            "n_untimed": first.n_untimed, "first_sight_s": first_s,
            "timing_s": first.timing_s, "cached_s": cached_s,
            "cached_timed_now": again.n_timed_now, "predicted_ms": first.predicted_ms,
            "predicted_cached_ms": again.predicted_ms, "measured_now_ms": 1e3 * now_s,
            "measured_now_cv": cv,
            "top_kinds": first.top_kinds(digits=1),
        })
    return pd.DataFrame(rows)


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    def q(s: pd.Series) -> str:
        s = s.dropna()
        return (f"{s.median():.3f} ({s.quantile(0.1):.3f}-{s.quantile(0.9):.3f})"
                if len(s) else "")

    out = []
    for batch, g in [*rows.groupby("batch"), ("all", rows)]:
        ape_now = (g["ratio_now"] - 1).abs() * 100
        ape_law = (g["kernel_law_ms"] / g["measured_now_ms"] - 1).abs() * 100
        out.append({
            "batch": batch, "networks": len(g),
            "first_sight_s_median": g["first_sight_s"].median(),
            "first_sight_s_max": g["first_sight_s"].max(),
            "cached_s_median": g["cached_s"].median(),
            "sum_over_network_now": q(g["ratio_now"]),
            "median_ape_now_pct": ape_now.median(),
            "within_10pct_now": float((ape_now <= 10).mean()),
            "sum_over_stored_row": q(g["ratio_stored"]),
            "kernel_law_over_network_now": q(g["kernel_law_ms"] / g["measured_now_ms"]),
            "kernel_law_median_ape_now_pct": ape_law.median(),
            "kernel_law_within_10pct_now": float((ape_law <= 10).mean()),
            "network_now_over_stored_row": q(g["measured_now_ms"] / g["stored_ms"]),
        })
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--networks", default=",".join(NETWORKS))
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--cache-dir", type=Path, default=None,
                    help="cache folder (default: a new temporary one: every network's first "
                         "sight)")
    _once.add_options(ap, "default: the catalogued platform whose zoo rows were measured on "
                      "this CPU kind (else the CPU model's name)")
    args = ap.parse_args(argv)

    from carb_lib.dataset.catalog import load_catalog
    from carb_lib.measure.devices import cpu_identity

    cpu = cpu_identity()
    platform = args.platform or load_catalog().platform_of_cpu(cpu, "zoo")
    name = platform or "".join(ch if ch.isalnum() else "_" for ch in cpu)[:40]
    out, summary_out, rows = _once.start(args, "replay_zoo", name)
    if rows is not None:
        if "kernel_law_ms" not in rows.columns:  # a column derived from stored files only
            rows["kernel_law_ms"] = kernel_law_ms(rows, platform)
            rows.to_csv(out, index=False)
    else:
        networks = [n for n in args.networks.split(",") if n]
        batches = [int(b) for b in args.batches.split(",") if b]
        print(f"{name}: {len(networks)} networks, batches {batches}, fp32, 224 px, 1 thread, "
              "heap kept")
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            rows = run(networks, batches, args.cache_dir or Path(tmp))
        print(f"timed in {time.perf_counter() - t0:.0f} s")
        rows = rows.merge(_stored(platform), on=["network", "batch"], how="left")
        rows["ratio_now"] = rows["predicted_ms"] / rows["measured_now_ms"]
        rows["ratio_stored"] = rows["predicted_ms"] / rows["stored_ms"]
        rows["kernel_law_ms"] = kernel_law_ms(rows, platform)
        rows = rows.assign(platform=name, cpu_id=cpu)
        args.results_dir.mkdir(parents=True, exist_ok=True)
        rows.to_csv(out, index=False)
    table = summary(rows).assign(platform=name)
    table.to_csv(summary_out, index=False)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(rows[["network", "batch", "first_sight_s", "cached_s", "predicted_ms",
                    "measured_now_ms", "ratio_now", "ratio_stored"]].round(3).to_string(
                        index=False))
        print(table.round(3).to_string(index=False))
    _once.wrote(out, summary_out)
    return 0 if np.isfinite(rows["predicted_ms"]).all() else 1


if __name__ == "__main__":
    sys.exit(main())
