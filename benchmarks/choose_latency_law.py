"""Choose ``carb fit``'s default latency law on validation rows of every CPU platform in data/.

For each CPU platform with network rows and an operator benchmark in ``data/``
(:data:`carb_lib.transfer.cpus.CPU_FILES`: AMD EPYC Zen 3, Zen 4, Zen 5; Intel Xeon models 207
and 167), two laws are compared on the same rows:

* ``auto``: what ``carb fit`` does by default (:func:`carb_lib.ensemble.latency_default.choose_latency_law`:
  the kernel law with the benchmark, and the read-bandwidth probe where one sits beside it,
  found by platform in the catalog);
* ``roofline``: the roofline law (``carb fit --latency-law roofline``).

Rows: the platform's file read and prepared as ``carb fit`` reads it. Per seed, the random
70/15/15 split of notebook 03 (:func:`carb_lib.evaluation.stratified_split`, the same seeds):
each law is fitted on the ``train`` part and scored on the **validation** part only; the
``test`` part (what notebook 03 reports) is never fitted nor scored here. ``r2_small_batch``:
a second fit on the train part's rows of batch > ``SMALL_BATCH_MAX``, scored on the train
part's small batches (held out, still no test row). Models: the ``--preset`` sizes (default:
``default``, the screening-sized constructor defaults the notebooks evaluate), latency only
(the memory law does not depend on the latency law).

Writes ``results/benchmarks/latency_law_choice.csv`` (one row per platform, law and seed:
``mape_pct``, ``within_10pct``, ``spearman``, ``r2``, ``r2_small_batch``, fit seconds, the
benchmark and probe used) and prints a summary: per platform the mean over seeds of each law and which
is lower in validation MAPE. Run on a quiet machine (no measurement campaign):

``python benchmarks/choose_latency_law.py`` (five CPUs, two seeds; a few minutes on 2 cores)
``python benchmarks/choose_latency_law.py --platforms cpu_epyc_zen4_2c --seeds 1`` (a check)
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from carb_lib.core.metrics import regression_metrics  # noqa: E402
from carb_lib.core.vocab import KERNEL_FEATURE  # noqa: E402
from carb_lib.dataset.schema import read_dataset  # noqa: E402
from carb_lib.ensemble import PRESETS, CARBRegressor  # noqa: E402
from carb_lib.ensemble.latency_default import choose_latency_law  # noqa: E402
from carb_lib.evaluation import prepare_dataset, stratified_split  # noqa: E402
from carb_lib.evaluation.splits import SMALL_BATCH_MAX  # noqa: E402
from carb_lib.kernels import law as kernels  # noqa: E402
from carb_lib.kernels.cache_probe import cache_knee  # noqa: E402
from carb_lib.transfer.cpus import CPU_FILES  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "benchmarks" / "latency_law_choice.csv"
TARGET = "latency_ms"


def _fit(params: dict, train: pd.DataFrame) -> tuple[CARBRegressor, float]:
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = CARBRegressor(**params).fit(train)
    return model, time.perf_counter() - t0


def _scores(model: CARBRegressor, rows: pd.DataFrame) -> dict:
    m = regression_metrics(rows[TARGET], model.predict(rows)[TARGET].reindex(rows.index))
    return {"n_val": m.n, "mape_pct": m.mape_pct, "within_10pct": m.within_10pct,
            "spearman": m.spearman, "r2": m.r2}


def platform_rows(plat: str, files: tuple[str, ...]) -> tuple[pd.DataFrame, object]:
    """The platform's prepared rows (as ``carb fit`` prepares them) and ``carb fit``'s choice."""
    path = ROOT / files[0]
    raw = read_dataset(path)
    ok = raw[raw["status"].astype(str).eq("ok")] if "status" in raw.columns else raw
    choice = choose_latency_law(ok, plat, data_dir=ROOT / "data", rows_file=path)
    return prepare_dataset(raw, plat), choice


def run(platforms: list[str], seeds: int, preset: str, n_jobs: int, small_batch: bool) -> pd.DataFrame:
    out = []
    for plat in platforms:
        t_plat = time.perf_counter()
        rows, choice = platform_rows(plat, CPU_FILES[plat])
        print(f"[{plat}] {len(rows)} rows; auto: {choice.reason}", flush=True)
        if choice.law != "kernel":
            print(f"[{plat}] auto is the roofline law here: nothing to compare", flush=True)
            continue
        knee = None
        if choice.cache_probe is not None:
            knee = cache_knee(pd.read_csv(choice.cache_probe))
        # the kernel model carb fit learns (KernelModel(cache=knee) on the whole benchmark),
        # learned once per platform: its column is what the estimator adds itself
        km = kernels.KernelModel(cache=knee).fit(kernels.read_bench(choice.kernel_bench))
        with_k = kernels.with_kernel_column(rows, km, n_jobs=n_jobs)
        bench, probe = choice.metadata()["kernel_bench"], choice.metadata()["cache_probe"] or ""
        for seed in range(seeds):
            split = stratified_split(rows, random_state=seed)
            for law in ("auto", "roofline"):
                d = with_k if law == "auto" else rows.drop(columns=KERNEL_FEATURE, errors="ignore")
                params = {**PRESETS[preset], "n_jobs": n_jobs, "random_state": seed,
                          "targets": (TARGET,),
                          "latency_law": "kernel" if law == "auto" else "roofline"}
                train, val = d[split == "train"], d[split == "val"]
                model, fit_s = _fit(params, train)
                rec = {"platform": plat, "law": law, "seed": seed, "n_train": len(train),
                       **_scores(model, val), "fit_s": fit_s,
                       "kernel_bench": bench if law == "auto" else "",
                       "cache_probe": probe if law == "auto" else ""}
                if small_batch:
                    small = train["batch"] <= SMALL_BATCH_MAX
                    sb, _ = _fit(params, train[~small])
                    rec["r2_small_batch"] = _scores(sb, train[small])["r2"]
                    rec["n_small_batch"] = int(small.sum())
                out.append(rec)
                print(f"[{plat}] seed {seed} {law:8s} val MAPE {rec['mape_pct']:.2f} %, within "
                      f"±10 % {100 * rec['within_10pct']:.1f} %, Spearman {rec['spearman']:.3f}"
                      + (f", small-batch R² {rec['r2_small_batch']:.3f}" if small_batch else "")
                      + f" (fit {fit_s:.1f} s)", flush=True)
        print(f"[{plat}] {time.perf_counter() - t_plat:.0f} s", flush=True)
    return pd.DataFrame(out)


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per platform and law, the mean over seeds; per platform, the law lower in val MAPE."""
    cols = [c for c in ("mape_pct", "within_10pct", "spearman", "r2", "r2_small_batch")
            if c in table.columns]
    mean = table.groupby(["platform", "law"], sort=False)[cols].mean().reset_index()
    wide = mean.pivot(index="platform", columns="law", values="mape_pct")
    mean["lower_mape"] = mean["platform"].map(wide.idxmin(axis=1))
    return mean


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--platforms", nargs="*", default=list(CPU_FILES),
                    help="CPU platforms (default: the five of carb_lib.transfer.cpus.CPU_FILES)")
    ap.add_argument("--seeds", type=int, default=2, help="split and model seeds 0..N-1")
    ap.add_argument("--preset", default="default", help="model sizes (carb_lib.ensemble.PRESETS)")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--no-small-batch", action="store_true",
                    help="skip the second fit (small batches of the train part held out)")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    unknown = sorted(set(a.platforms) - set(CPU_FILES))
    if unknown:
        raise SystemExit(f"error: --platforms {unknown}: not among {sorted(CPU_FILES)}")
    if a.preset not in PRESETS:
        raise SystemExit(f"error: --preset {a.preset!r}: not among {sorted(PRESETS)}")
    if a.seeds < 1:
        raise SystemExit(f"error: --seeds must be >= 1, got {a.seeds}")
    t0 = time.perf_counter()
    table = run(a.platforms, a.seeds, a.preset, a.n_jobs, not a.no_small_batch)
    if table.empty:
        raise SystemExit("error: no platform with an operator benchmark to compare")
    table["preset"] = a.preset
    table["part"] = "val"
    table["run_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(a.out, index=False)
    s = summary(table)
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(s.round(4).to_string(index=False))
    per = s.pivot(index="platform", columns="law", values="mape_pct")
    wins = int((per["auto"] < per["roofline"]).sum())
    print(f"auto lower in validation MAPE on {wins}/{len(per)} platforms; mean validation MAPE "
          f"auto {per['auto'].mean():.2f} % vs roofline {per['roofline'].mean():.2f} % "
          f"({a.seeds} seed(s), preset {a.preset}); wrote {a.out.relative_to(ROOT) if a.out.is_relative_to(ROOT) else a.out} "
          f"in {time.perf_counter() - t0:.0f} s")
    if not np.isfinite(per.to_numpy()).all():
        print("warning: a platform's MAPE is not finite")


if __name__ == "__main__":
    main()
