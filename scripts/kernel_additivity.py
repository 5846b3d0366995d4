"""Is a network the sum of its operators timed alone? And is the kernel model right on them?

Draws a sample of measured rows (``--per-group`` per family and precision, stored latency at
most ``--max-ms``), times each network now and each of its operators alone with the same
harness (:func:`carb_lib.kernel_checks.additivity_check`), and writes the per-row table and a
summary: ``additivity`` = operators alone / network (the kernel law's assumption), ``model`` =
kernel model / operators alone (the kernel model's error on real networks' operators),
``law_input`` = both together, ``repeat`` = network now / stored. A measurement: run it on a
quiet machine, nothing else running.

``python scripts/kernel_additivity.py data/kernels/cpu_epyc_zen3_2c.parquet
data/cpu_epyc_zen3_2c.parquet data/new_families/cpu_epyc_zen3_2c.parquet
--out results/carb/kernel_additivity``

``--config-ids FILE.csv`` times the rows it names (its ``config_id`` column; an optional
``group`` column is kept and summarised by) instead of a sample, e.g. the held-out rows that
``scripts/kernel_law_worst_rows.py --csv`` puts first, beside control rows.

``--rescore TABLE.csv`` times nothing: it refits the kernel model on ``bench`` and rescores a
stored per-row table (its networks and operators as they were timed) with it, e.g. after
operators were added to the benchmark (the ``model`` and ``law_input`` columns change; the
``additivity`` and ``repeat`` columns are the stored timings):

``python scripts/kernel_additivity.py data/kernels/cpu_epyc_zen3_2c.parquet
--rescore results/carb/kernel_additivity.csv --out results/carb/kernel_additivity_rescored``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import pandas as pd

from carb_lib import kernels
from carb_lib.dataset import read_dataset
from carb_lib.kernel_checks import AdditivityCheck, additivity_check


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bench", type=Path, help="the platform's timed operators (carb kernels)")
    ap.add_argument("datasets", type=Path, nargs="*", help="measured rows of that platform")
    ap.add_argument("--rescore", type=Path, default=None,
                    help="a stored per-row table (.csv) to rescore with this bench's kernel "
                         "model instead of timing anything")
    ap.add_argument("--out", type=Path, required=True, help="output stem (.csv and .txt)")
    ap.add_argument("--per-group", type=int, default=5)
    ap.add_argument("--max-ms", type=float, default=400.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--config-ids", type=Path, default=None,
                    help="a CSV with a config_id column: time exactly those rows of the datasets "
                         "(in its order) instead of a sample; an optional group column is kept "
                         "and summarised by")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    if args.rescore is not None:
        return rescore(args)
    if not args.datasets:
        raise SystemExit("give the measured rows (datasets) to time, or --rescore TABLE.csv")
    df = pd.concat([read_dataset(p) for p in args.datasets], ignore_index=True)
    df = df[(df["status"] == "ok") & (df["latency_ms"] <= args.max_ms)]
    by: tuple[str, ...] = ("family", "precision")
    if args.config_ids is not None:
        sample = _chosen_rows(df, args.config_ids)
        if "group" in sample.columns:
            by = ("group", "precision")
    else:
        sample = df.groupby(["family", "precision"]).sample(n=args.per_group,
                                                            random_state=args.seed)
    bench = kernels.read_bench(args.bench)
    model = kernels.KernelModel().fit(bench)
    check = additivity_check(sample, model, window_s=0.01, n_windows=3)
    if args.config_ids is not None:  # the named rows keep their id (and group)
        keep = [c for c in ("group", "config_id") if c in sample.columns]
        check = AdditivityCheck(check.rows.assign(**{c: sample[c].to_numpy() for c in keep}))
    chosen = (["--config-ids", str(args.config_ids)] if args.config_ids is not None
              else ["--per-group", str(args.per_group), "--seed", str(args.seed)])
    cmd = "python scripts/kernel_additivity.py " + " ".join(
        [str(args.bench), *map(str, args.datasets), "--out", str(args.out), *chosen,
         "--max-ms", str(args.max_ms)])
    _write(check, args.out, f"# {cmd}\n{len(sample)} measured rows, {model.n_ops_} timed "
           "operators in the kernel model; one thread, median of 3 windows >= 10 ms each", by)


def _chosen_rows(df: pd.DataFrame, path: Path) -> pd.DataFrame:
    """The rows of ``df`` named by ``path``'s config_id column, in its order (and its group)."""
    if not path.is_file():
        raise SystemExit(f"--config-ids: no such file {path}")
    ids = pd.read_csv(path)
    if "config_id" not in ids.columns:
        raise SystemExit(f"--config-ids: {path} has no config_id column")
    missing = sorted(set(ids["config_id"].astype(str)) - set(df["config_id"].astype(str)))
    if missing:
        raise SystemExit(f"--config-ids: {len(missing)} config_id(s) of {path} are not ok rows "
                         f"of the datasets under --max-ms, e.g. {missing[0]}")
    keep = ["config_id", *(["group"] if "group" in ids.columns else [])]
    return ids[keep].astype({"config_id": str}).merge(
        df.astype({"config_id": str}), on="config_id", how="left").reset_index(drop=True)


def _write(check: AdditivityCheck, out: Path, header: str,
           by: tuple[str, ...] = ("family", "precision")) -> None:
    """The per-row table (``out``.csv) and ``header`` with the summary (``out``.txt, printed)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    check.rows.to_csv(out.with_suffix(".csv"), index=False)
    text = f"{header}\n\n{check.summary(by).round(3).to_string()}\n"
    out.with_suffix(".txt").write_text(text)
    print(text)


def rescore(args: argparse.Namespace) -> None:
    """The stored timings of ``--rescore``, with the kernel model of ``bench``."""
    if not args.rescore.is_file():
        raise SystemExit(f"--rescore: no such table {args.rescore}")
    stored = pd.read_csv(args.rescore)
    missing = [c for c in ("network_ms", "ops_alone_ms", "latency_ms", "family", "precision")
               if c not in stored.columns]
    if missing:
        raise SystemExit(f"--rescore: {args.rescore} lacks column(s) {missing}")
    bench = kernels.read_bench(args.bench)
    model = kernels.KernelModel().fit(bench)
    plat = str(bench["platform"].iloc[0])
    rows = kernels.with_kernel_column(stored.assign(status="ok", platform=plat), model,
                                      progress=False)
    check = AdditivityCheck(rows[stored.columns.tolist()])
    _write(check, args.out,
           f"# python scripts/kernel_additivity.py {args.bench} --rescore {args.rescore} "
           f"--out {args.out}\n{len(rows)} networks and their operators as timed in "
           f"{args.rescore} (nothing timed now), rescored with a kernel model of "
           f"{model.n_ops_} timed operators")


if __name__ == "__main__":
    main()
