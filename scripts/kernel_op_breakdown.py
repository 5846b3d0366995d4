"""Which operators does the kernel model get wrong in a family's networks? Timed, per kind.

Times a sample of measured rows now, each network whole and each of its distinct operators
alone (:func:`carb_lib.kernel_checks.operator_breakdown`), with the heap kept as the profiler
now does (``--default-heap`` for glibc's default), and writes:

* ``networks.csv``: per network, the stored latency, the network now, its operators alone and
  the kernel model's sum;
* ``ops.csv``: per network and distinct operator, timed alone and predicted;
* ``breakdown.txt``: per group the additivity and model ratios, then per operator
  kind its share of the operator time and predicted / timed alone.

The sample takes ``--per-group`` rows of each family, precision and batch group
(:data:`BATCH_GROUPS`: ``small``, batch <= 2; ``large``, batch >= 8), and the summaries are
per group. A measurement: run it on a quiet machine, nothing else running.

``python scripts/kernel_op_breakdown.py ROWS.parquet [ROWS2 ...] --bench B1 [B2 ...]
--families efficientnet mobilenetv2 --per-group 6 --out results/carb/op_breakdown_<platform>``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib import kernels
from carb_lib.dataset import read_dataset
from carb_lib.heap import keep_heap
from carb_lib.kernel_checks import OperatorBreakdown, operator_breakdown

#: Batch groups of the sample: (name, smallest batch, largest batch).
BATCH_GROUPS: tuple[tuple[str, int, int], ...] = (("small", 1, 2), ("large", 8, 1 << 30))


def batch_group(batch: pd.Series) -> pd.Series:
    """``small``/``large`` per :data:`BATCH_GROUPS`; other batches are ``None``."""
    out = pd.Series(None, index=batch.index, dtype=object)
    for name, lo, hi in BATCH_GROUPS:
        out[(batch >= lo) & (batch <= hi)] = name
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("datasets", type=Path, nargs="+", help="measured rows of this platform")
    ap.add_argument("--bench", type=Path, nargs="+", required=True,
                    help="this platform's timed operators (carb kernels), one or more files")
    ap.add_argument("--families", nargs="+", required=True)
    ap.add_argument("--per-group", type=int, default=6,
                    help="rows per family x precision x batch group")
    ap.add_argument("--max-ms", type=float, default=300.0)
    ap.add_argument("--resolutions", type=int, nargs="+", default=None,
                    help="only rows at these resolutions, sampled and summarised per resolution")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--default-heap", action="store_true",
                    help="time with glibc's default heap (default: kept, as the profiler)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    for p in [*args.datasets, *args.bench]:
        if not p.is_file():
            raise SystemExit(f"no such file {p}")
    df = pd.concat([read_dataset(p) for p in args.datasets], ignore_index=True)
    unknown = sorted(set(args.families) - set(df["family"].astype(str)))
    if unknown:
        raise SystemExit(f"--families: no rows of {unknown} in the datasets")
    df = df[(df["status"] == "ok") & (df["latency_ms"] <= args.max_ms)
            & df["family"].isin(args.families)].copy()
    df["group"] = batch_group(df["batch"])
    df = df[df["group"].notna()]
    keys = ["family", "precision", "group"]
    if args.resolutions:
        df = df[df["resolution"].isin(args.resolutions)]
        keys = ["family", "precision", "resolution", "group"]
    sample = (df.sample(frac=1.0, random_state=args.seed).groupby(keys).head(args.per_group)
              .sort_values(keys, kind="stable").reset_index(drop=True))
    if not args.default_heap:
        keep_heap()
    model = kernels.KernelModel().fit(kernels.read_bench(list(map(str, args.bench))))
    bd = operator_breakdown(sample, model, window_s=0.01, n_windows=3)
    nets = bd.networks.assign(group=sample["group"].to_numpy())
    ops = bd.ops.merge(nets[["net", *(k for k in keys if k not in bd.ops.columns)]], on="net")
    r = nets.assign(additivity=nets["ops_alone_ms"] / nets["network_ms"],
                    model=nets["kernel_ms"] / nets["ops_alone_ms"],
                    law_input=nets["kernel_ms"] / nets["network_ms"],
                    repeat=nets["network_ms"] / nets["latency_ms"])
    ratios = r.groupby(keys)[["additivity", "model", "law_input", "repeat"]].agg(
        lambda x: float(np.exp(np.median(np.log(x)))))
    ratios.insert(0, "n", r.groupby(keys).size())
    by_kind = OperatorBreakdown(nets, ops).by_kind(tuple(keys))
    heap = "default heap" if args.default_heap else "heap kept"
    cmd = ("python scripts/kernel_op_breakdown.py " + " ".join(map(str, args.datasets))
           + " --bench " + " ".join(map(str, args.bench)) + " --families "
           + " ".join(args.families) + f" --per-group {args.per_group} --max-ms {args.max_ms}"
           + f" --seed {args.seed}" + (" --default-heap" if args.default_heap else "")
           + (" --resolutions " + " ".join(map(str, args.resolutions)) if args.resolutions else "")
           + f" --out {args.out}")
    text = (f"# {cmd}\n{len(sample)} networks ({heap}), {model.n_ops_} operators in the kernel "
            "model; one thread, median of 3 windows >= 10 ms; batch groups "
            + ", ".join(f"{n} {lo}-{hi if hi < 1 << 20 else 'max'}" for n, lo, hi in BATCH_GROUPS)
            + "\n\nper network, medians: additivity = operators alone / network, model = kernel "
            "model / operators alone, law_input = kernel model / network, repeat = network now "
            "/ stored\n" + ratios.round(3).to_string()
            + "\n\nper operator kind: share_alone = its share of the group's operator time, "
            "model = predicted / timed alone (sums), model_median = median per operator\n"
            + by_kind.round(3).to_string() + "\n")
    args.out.mkdir(parents=True, exist_ok=True)
    nets.to_csv(args.out / "networks.csv", index=False)
    ops.to_csv(args.out / "ops.csv", index=False)
    (args.out / "breakdown.txt").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
