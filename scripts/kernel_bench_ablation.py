"""What do sampler v4's operators and draw alignment each do to the *networks*? One platform.

The operator-level choices were made on held-out operators (``scripts/kernel_model_choice.py``,
``scripts/sampler_v4_check.py``); this script only reports what they do to network rows,
nothing here is chosen. Four kernel models, from the same benchmark:

* ``v1-3 pooled``: the operators of samplers 1-3 as timed (the model before session 15);
* ``v1-3 aligned``: the same operators, each draw's host speed removed
  (``KernelModel(draws="aligned")``);
* ``v1-4 pooled`` and ``v1-4 aligned`` (the default): with sampler v4's operators.

For each, the kernel law on the platform's ResNet rows (:func:`~carb_lib.evaluation.kernel_law.
kernel_law_comparison`: random split, small and large batches held out; ``--seeds`` model
seeds) and on the new families (notebook 05's cross-family evaluation: ResNet source, zero-shot
and ``offset`` with k = 10, ``--seeds`` seeds).

``python scripts/kernel_bench_ablation.py data/cpu_epyc_zen3_2c.parquet
data/new_families/cpu_epyc_zen3_2c.parquet data/kernels/cpu_epyc_zen3_2c.parquet --out
results/carb/kernel_bench_ablation``; a platform whose sampler-v4 draw is a file of its own
passes both files (read as one benchmark), e.g. ``data/kernels/cpu_xeon_gnr_2c.parquet
data/kernels/cpu_xeon_gnr_2c_sampler4.parquet``.
"""

from __future__ import annotations

import argparse
import io
import warnings
from pathlib import Path

import pandas as pd

from carb_lib import kernels
from carb_lib.dataset import read_dataset
from carb_lib.evaluation import prepare_dataset
from carb_lib.evaluation.cross_family import cross_family_evaluation
from carb_lib.evaluation.kernel_law import KernelLawComparison, kernel_law_comparison

VARIANTS = (("v1-3", "pooled"), ("v1-3", "aligned"), ("v1-4", "pooled"), ("v1-4", "aligned"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("target", type=Path)
    ap.add_argument("bench", type=Path, nargs="+",
                    help="the benchmark file, or several to read as one (kernels.read_bench)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    bench = kernels.read_bench(args.bench)
    src, tgt = read_dataset(args.source), read_dataset(args.target)
    resnet = prepare_dataset(src)
    law_rows, fam_rows = [], []
    for samplers, draws in VARIANTS:
        ops = bench if samplers == "v1-4" else bench[bench["sampler"].astype(int) <= 3]
        template = kernels.KernelModel(draws=draws)
        res = kernel_law_comparison(resnet, ops, splits=("random", "batch_small", "batch_large"),
                                    seeds=args.seeds, kernel_model=template, n_jobs=2)
        law_rows.append(res.scores.assign(operators=samplers, draws=draws))
        km = kernels.KernelModel(draws=draws).fit(ops)
        fam = cross_family_evaluation(
            kernels.with_kernel_column(src, km, n_jobs=2),
            kernels.with_kernel_column(tgt, km, n_jobs=2), ks=(10,), n_seeds=args.seeds,
            targets=("latency_ms",), methods=("offset",), default_method="offset",
            own_model=False, latency_law="kernel", progress=False)
        fam_rows.append(fam.summary.assign(operators=samplers, draws=draws))
        print(f"done: {samplers} {draws}", flush=True)
    scores = pd.concat(law_rows, ignore_index=True)
    # the roofline law does not read the operators: one variant's fits stand for all four
    roof = (scores["law"] == "roofline") & (scores["operators"] == "v1-3") & (
        scores["draws"] == "pooled")
    laws = scores[roof | (scores["law"] != "roofline")].assign(
        variant=lambda d: d["law"].where(d["law"] == "roofline",
                                         d["operators"] + " " + d["draws"] + " " + d["law"]))
    # the comparison's own mean ± sd table, one "law" per variant
    lt = KernelLawComparison(scores=laws.assign(law=laws["variant"]), n_rows=len(resnet),
                             n_operators=len(bench), preset="default").table()
    fams = pd.concat(fam_rows, ignore_index=True)
    fams["variant"] = fams["operators"] + " " + fams["draws"]
    ft, fs = (fams.pivot_table(index=["model", "k", "variant"], columns="family", values=v,
                               sort=False) for v in ("mape_pct_mean", "spearman_mean"))
    buf = io.StringIO()
    buf.write(f"# python scripts/kernel_bench_ablation.py {args.source} {args.target} "
              f"{' '.join(map(str, args.bench))} --seeds {args.seeds} --out {args.out}\n")
    buf.write(f"{len(resnet):,} ResNet rows, {len(tgt):,} new-family rows; operators: "
              f"{int((bench['sampler'] <= 3).sum()):,} of samplers 1-3, "
              f"{int((bench['sampler'] >= 4).sum()):,} of sampler 4\n\n")
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        buf.write("ResNet rows, held-out latency (mean ± sd over seeds; within_10pct a "
                  "fraction; kernel_strict: the kernel model fitted on the training batches' "
                  "operators only):\n")
        buf.write(lt.to_string() + "\n\n")
        buf.write("new families, latency MAPE % (kernel law, ResNet source, mean over seeds):\n")
        buf.write(ft.round(2).to_string() + "\n\n")
        buf.write("new families, latency Spearman:\n" + fs.round(3).to_string() + "\n")
    args.out.mkdir(parents=True, exist_ok=True)
    laws.to_csv(args.out / "resnet_kernel_law.csv", index=False)
    fams.to_csv(args.out / "cross_family.csv", index=False)
    (args.out / "kernel_bench_ablation.txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
