"""Does the kernel law hold on a CPU it was never designed on? A blind replication.

Everything about the kernel law (the operator sampler, the kernel model's target and features,
the law's terms, the default preset) was chosen on the Zen 3 VM's data, and its gains there are
not blind (README, *How the kernel model got here*). This script takes another CPU's measured
networks and operator benchmark and runs the same comparison **with every choice frozen**: no
parameter, feature or split is tuned here. Reported, latency on held-out rows:

* ``random``: the stratified 70/15/15 split (:func:`carb_lib.evaluation.splits.stratified_split`),
  ``--seeds`` split and model seeds, test part: roofline law (the default) against kernel law;
* ``batch_small`` / ``batch_large``: small batches held out (train > 8, test <= 8), large held
  out (train < 64, test >= 64), ``--seeds`` model seeds, roofline, kernel and ``kernel_strict``
  (the kernel model refitted on operators at the training side's batches only);
* the kernel model on held-out *operators* of this CPU (:func:`carb_lib.kernels.holdout_check`);
* peak memory of the same fits (the allocator law, which learns this CPU's oneDNN block);
* the held-out operators among sampler v3's wide convolutions past the L3 (<= 8 px, weights
  > 32 MB): predicted / measured.

R², MAPE, share within +-10 % and Spearman, mean ± sd over seeds. Writes ``replication.csv``
(one row per split, law and seed), ``replication_summary.csv`` and ``replication.txt`` (the
printed tables) under ``--out``. The fits are
:func:`carb_lib.evaluation.kernel_law.kernel_law_comparison`, the loop of
``scripts/kernel_law_extrapolation.py``.

``python scripts/kernel_law_replication.py data/other_cpus/cpu_epyc_zen4_2c.parquet
data/kernels/cpu_epyc_zen4_2c.parquet --out results/carb/replication_cpu_epyc_zen4_2c``

``--traffic`` (session 32) says how: ``sum`` (the default since pre-registration AG) adds the
weights' read time to the operator's time alone, ``max`` takes the larger of the two (the
composition of sessions 20-31; their outputs' command lines say ``--traffic max``).

``--same-configs-as OTHER.parquet`` keeps the rows of configs that ``OTHER`` holds (two
sittings compared on the same configs). ``--cache-probe FILE.csv`` (session 20): the kernel law's operators read their weights from
memory in networks whose weights exceed the cache, as that CPU's read-bandwidth probe says
(:class:`carb_lib.kernels.KernelModel`'s ``cache``; ``scripts/kernel_cold_weights.py --evict
weights`` writes the probe).
"""

from __future__ import annotations

import argparse
import io
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib import kernels
from carb_lib.cache_probe import cache_knee
from carb_lib.dataset import read_dataset
from carb_lib.evaluation import prepare_dataset
from carb_lib.evaluation.kernel_law import kernel_law_comparison
from carb_lib.families._alloc import parse_variant


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("bench", type=Path)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cache-probe", type=Path, default=None,
                    help="this CPU's read-bandwidth probe (.csv): weights past its cache are "
                         "read from memory (KernelModel(cache=...))")
    ap.add_argument("--traffic", default="sum", choices=("max", "sum"),
                    help="with --cache-probe: an operator's weights read from memory add to its "
                         "time alone (sum, KernelModel's default since session 32) or overlap it "
                         "(max)")
    ap.add_argument("--same-configs-as", type=Path, default=None,
                    help="another dataset: keep only the rows whose config_id it holds (compare "
                         "two sittings on the same configs)")
    ap.add_argument("--faults", default=None, choices=("8", "16", "16+fp16"),
                    help="KernelModel(faults=VARIANT): a page-fault term per MiB of buffers past "
                         "32 MiB (the allocator model's on a CPU of that variant), fitted on the "
                         "operators")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    df = prepare_dataset(read_dataset(args.dataset)).reset_index(drop=True)
    if args.same_configs_as is not None:
        other = set(read_dataset(args.same_configs_as)["config_id"].astype(str))
        df = df[df["config_id"].astype(str).isin(other)].reset_index(drop=True)
    bench = kernels.read_bench(args.bench)
    faults = False if args.faults is None else parse_variant(args.faults)
    template = kernels.KernelModel(faults=faults)
    probe_note = f"; KernelModel(faults={faults!r})" if args.faults else ""
    try:
        if args.cache_probe is not None:
            if not args.cache_probe.is_file():
                raise ValueError(f"--cache-probe: no such file {args.cache_probe}")
            knee = cache_knee(pd.read_csv(args.cache_probe))
            template = kernels.KernelModel(faults=faults, cache=knee, traffic=args.traffic)
            probe_note += (f"; weights past {knee.cache_mib:.0f} MiB read from memory at "
                          f"{knee.memory_gb_per_s:.1f} GB/s ({args.cache_probe}, "
                          f"traffic='{template.traffic}')")
        comp = kernel_law_comparison(df, bench, seeds=args.seeds, kernel_model=template)
    except ValueError as e:
        raise SystemExit(str(e)) from None
    plats = sorted(set(df["platform"].astype(str)))
    res = comp.scores
    res["split"] = np.where(res["split"] == "random", "random (test part)",
                            res["split"] + " (" + res["held_out"] + " held out)")
    summary = comp.summary()
    checks = [kernels.holdout_check(bench, random_state=s) for s in range(args.seeds)]
    buf = io.StringIO()
    buf.write(f"# python scripts/kernel_law_replication.py {args.dataset} {args.bench} "
              f"--seeds {args.seeds} --out {args.out}"
              + (f" --cache-probe {args.cache_probe}" if args.cache_probe else "")
              + (f" --traffic {args.traffic}" if args.cache_probe else "")
              + (f" --faults {args.faults}" if args.faults else "")
              + (f" --same-configs-as {args.same_configs_as}" if args.same_configs_as else "")
              + "\n")
    buf.write(f"platform {plats[0]}: {len(df):,} network rows, {len(bench):,} timed operators; "
              "every choice frozen as made on cpu_epyc_zen3_2c (default preset, KernelModel "
              f"defaults){probe_note}\n\nheld-out latency, mean ± sd over seeds:\n")
    with pd.option_context("display.width", 200, "display.max_colwidth", 60):
        buf.write(comp.table().to_string() + "\n\n")
    worst = res.groupby("split", sort=False)["memory_mape_pct"].max()
    buf.write("peak memory (same fits), worst MAPE over laws and seeds: "
              + "; ".join(f"{k}: {v:.2g} %" for k, v in worst.items()) + "\n")
    # sampler v3's wide operators: 3x3/5x5 convolutions at <= 8 px with weights past 32 MB
    _, _, w_bytes = kernels._byte_parts(bench)
    wide = ((bench["kind"] == "conv") & (bench["h_in"] <= 8)).to_numpy() & (w_bytes > 32e6)
    fp32 = wide & (bench["precision"] == "fp32").to_numpy() & (bench["batch"] >= 2).to_numpy()
    gbs = np.median(w_bytes[fp32] / 1e9 / (bench["time_ms"].to_numpy()[fp32] / 1e3))
    buf.write(f"operators past the L3 (conv, <= 8 px, weights > 32 MB): {int(wide.sum())}; fp32 at "
              f">= 2 images stream weights at a median {gbs:.2f} GB/s\n")
    for s in range(args.seeds):
        held = np.random.default_rng(s).random(len(bench)) < 0.2  # holdout_check's split
        sel = held & wide
        if sel.any():
            r = (kernels.KernelModel(random_state=s).fit(bench[~held]).predict(bench[sel])
                 / bench["time_ms"].to_numpy()[sel])
            buf.write(f"  seed {s}: {int(sel.sum())} held out, predicted / measured median "
                      f"{np.median(r):.2f}, MAPE {100 * np.mean(np.abs(r - 1)):.1f} %\n")
    mape = [c.metrics.mape_pct for c in checks]
    rho = [c.metrics.spearman for c in checks]
    buf.write(f"kernel model on held-out operators (20 %, {args.seeds} split seeds): MAPE "
              f"{np.mean(mape):.2f} ± {np.std(mape, ddof=1):.2f} %, Spearman "
              f"{np.mean(rho):.4f} ± {np.std(rho, ddof=1):.4f}\n")
    args.out.mkdir(parents=True, exist_ok=True)
    res.to_csv(args.out / "replication.csv", index=False)
    summary.to_csv(args.out / "replication_summary.csv", index=False)
    (args.out / "replication.txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
