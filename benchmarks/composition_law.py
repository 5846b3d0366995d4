"""A composition law for a network's own calls, fitted on design networks, scored once on the zoo.

The sum of a network's calls timed alone (:mod:`carb_lib.kernels.replay`) misses part of the
network's time at small batches (``benchmarks/replay_zoo.py``). This benchmark fits, on
networks of the design families only (ResNet, MobileNetV2, EfficientNet, VGG: configs of every
catalogued design campaign, ``--per-family`` of each, seeded, at batches 1 and 16, fp32, at
their resolution), the law

    network ms = a * (sum of its calls, ms) + b * (calls per forward) + c * (weight MiB)
                 + d * (MiB its calls read and write)

by non-negative least squares on relative errors (each row divided by its measured time): the
sum, a per-call dispatch cost, and memory-traffic terms for weights and activations. Each
design network is timed now: its calls (one cache for all, in a temporary folder) and the
network itself, by the same harness (two warm-up calls, the median of three windows of at
least 0.3 s), one thread, the heap kept.

Scores: the law's error on the design networks out of family (each family predicted by the law
fitted on the others) beside the plain sum's; then, once, on the zoo networks of
``replay_zoo_<platform>.csv`` (the same CPU kind; never used to fit or choose), beside the plain
sum. Writes ``results/benchmarks/composition_law_<platform>.csv`` (one row per design network
and batch) and ``composition_law_<platform>_summary.csv`` (on the AMD EPYC Zen 4:
``composition_law_cpu_epyc_zen4_2c.csv`` and ``composition_law_cpu_epyc_zen4_2c_summary.csv``).
One run per CPU kind; ``--score-only`` refits and rescores from the rows written.

``python benchmarks/composition_law.py`` (about 8 min on 2 cores; nothing else heavy meanwhile).
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

from carb_lib.kernels import composition  # noqa: E402
from carb_lib.kernels.composition import TERMS, traffic_mib  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def run(configs: pd.DataFrame, batches: list[int], cache_dir: Path) -> pd.DataFrame:
    import torch
    from tqdm.auto import tqdm

    from carb_lib.families import get_family
    from carb_lib.kernels.replay import CallCache, network_time

    torch.set_num_threads(1)
    cache = CallCache(cache_dir, keep_heap=True, budget_s=600)
    out = []
    todo = [(r, b) for r in configs.to_dict("records") for b in batches]
    for row, batch in tqdm(todo, desc="design networks"):
        config = get_family(row["family"]).from_row({**row, "batch": batch})
        net = config.build_model().eval()
        shape = (batch, *(getattr(config, "input_shape", None)
                          or (3, config.resolution, config.resolution)))
        t = network_time(net, shape, cache=cache)
        weight_mib, call_mib = traffic_mib(net, shape)
        now_s, cv = _once.time_network(net, torch.randn(*shape), 0.3)
        out.append({"config_id": row["config_id"], "family": row["family"], "batch": batch,
                    "resolution": int(config.resolution), "sum_ms": t.predicted_ms,
                    "n_calls": t.n_calls, "weight_mib": weight_mib, "call_mib": call_mib,
                    "n_untimed": t.n_untimed, "measured_now_ms": 1e3 * now_s,
                    "measured_now_cv": cv})
    return pd.DataFrame(out)


def fit_law(rows: pd.DataFrame) -> np.ndarray:
    """The law's coefficients (:data:`TERMS` order) on rows timed now
    (:func:`carb_lib.kernels.composition.fit_law`)."""
    return np.asarray(composition.fit_law(
        rows.rename(columns={"measured_now_ms": "measured_ms"})).coef)


def predict_law(coef: np.ndarray, rows: pd.DataFrame) -> np.ndarray:
    return composition.CompositionLaw(tuple(coef), 0).predict(rows)


def _scores(name: str, part: str, rows: pd.DataFrame, pred: np.ndarray) -> dict:
    from scipy.stats import spearmanr

    out = []
    for batch, idx in [*rows.groupby("batch").groups.items(), ("all", rows.index)]:
        g, p = rows.loc[idx], pd.Series(pred, index=rows.index).loc[idx]
        ape = (p / g["measured_now_ms"] - 1).abs() * 100
        rho = (spearmanr(p, g["measured_now_ms"]).statistic if batch != "all" and len(g) > 2
               else np.nan)
        out.append({"rows": part, "method": name, "batch": batch, "kind": "all", "n": len(g),
                    "median_ape_pct": ape.median(), "within_10pct": float((ape <= 10).mean()),
                    "median_pred_over_measured": float((p / g["measured_now_ms"]).median()),
                    "spearman": rho})
    return out


def zoo_rows(platform: str) -> pd.DataFrame:
    """The zoo networks of ``replay_zoo_<platform>.csv`` with the law's terms."""
    from carb_lib.families._torchvision import import_torchvision

    path = ROOT / "results" / "benchmarks" / f"replay_zoo_{platform}.csv"
    if not path.is_file():
        return pd.DataFrame()
    z = pd.read_csv(path)
    models = import_torchvision().models
    nets = {n: models.get_model(n).eval() for n in z["network"].unique()}
    mib = [traffic_mib(nets[r["network"]], (int(r["batch"]), 3, int(r["resolution"]),
                                            int(r["resolution"])))
           for r in z.to_dict("records")]
    z["weight_mib"], z["call_mib"] = [m[0] for m in mib], [m[1] for m in mib]
    return z.rename(columns={"predicted_ms": "sum_ms"})


def score(rows: pd.DataFrame, platform: str) -> tuple[pd.DataFrame, np.ndarray]:
    out = []
    # design networks, each family predicted by the law fitted on the others
    oof = pd.Series(np.nan, index=rows.index)
    for fam, g in rows.groupby("family"):
        oof[g.index] = predict_law(fit_law(rows[rows["family"] != fam]), g)
    out += _scores("sum of calls", "design, out of family", rows, rows["sum_ms"].to_numpy())
    out += _scores("composition law", "design, out of family", rows, oof.to_numpy())
    coef = fit_law(rows)
    z = zoo_rows(platform)
    if len(z):
        law = predict_law(coef, z)
        out += _scores("sum of calls", "zoo (scored once)", z, z["sum_ms"].to_numpy())
        out += _scores("composition law", "zoo (scored once)", z, law)
        for name, pred in (("sum of calls", z["sum_ms"].to_numpy()), ("composition law", law)):
            ape = pd.Series(np.abs(pred / z["measured_now_ms"].to_numpy() - 1) * 100)
            for kind, a in ape.groupby(z["network_kind"].to_numpy()):
                out.append({"rows": "zoo (scored once)", "method": name, "batch": "all",
                            "kind": kind, "n": len(a), "median_ape_pct": a.median(),
                            "within_10pct": float((a <= 10).mean())})
    table = pd.DataFrame(out)
    for t, c in zip(TERMS, coef, strict=True):
        table[f"coef_{t}"] = c
    return table, coef


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--per-family", type=int, default=10)
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--seed", type=int, default=0)
    _once.add_options(ap, "default: the catalogued platform whose zoo rows were measured on "
                      "this CPU kind")
    args = ap.parse_args(argv)

    from carb_lib.measure.devices import cpu_identity

    begun = _once.begin(args, "composition_law", "zoo")
    if begun is None:
        return 0
    platform, out, summary_out, rows = begun
    if rows is None:
        configs = composition.design_networks(args.per_family, args.seed)
        batches = [int(b) for b in args.batches.split(",") if b]
        print(f"{platform}: {len(configs)} design networks "
              f"({', '.join(f'{k} {v}' for k, v in configs['family'].value_counts().items())}), "
              f"batches {batches}, fp32, 1 thread, heap kept")
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            rows = run(configs, batches, Path(tmp)).assign(platform=platform,
                                                          cpu_id=cpu_identity())
        print(f"timed in {time.perf_counter() - t0:.0f} s")
        args.results_dir.mkdir(parents=True, exist_ok=True)
        rows.to_csv(out, index=False)
    table, coef = score(rows, platform)
    table = table.assign(platform=platform)
    table.to_csv(summary_out, index=False)
    print("law: ms = " + " + ".join(f"{c:.4g} x {t}" for t, c in zip(TERMS, coef, strict=True)))
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(table[table["kind"] == "all"].drop(
            columns=[c for c in table.columns if c.startswith("coef_")]).round(3).to_string(
                index=False))
    _once.wrote(out, summary_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
