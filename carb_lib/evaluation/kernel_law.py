"""The kernel latency law against the roofline law, on the splits that test extrapolation.

:func:`kernel_law_comparison` fits the CARB model (one preset, several model seeds) with each
latency law on one platform's network rows and reports held-out latency (and peak memory) per
split, law and seed. It was the loop behind the kernel law's extrapolation test (the Zen 3
rows) and its blind replications on other CPUs (``docs/experiments.md``), kept
here so that both run the same comparison.

Laws:

* ``roofline``: the roofline latency law (the model's default);
* ``kernel``: the kernel law, its kernel model (:class:`carb_lib.kernels.law.KernelModel`) fitted on
  every timed operator of the platform;
* ``kernel_strict`` (batch splits only): the kernel model refitted on the operators timed at the
  training side's batch sizes, so that nothing at all was timed at a held-out batch.

Splits: ``random`` (the stratified 70/15/15 split, :func:`~carb_lib.evaluation.splits.stratified_split`,
one split seed per model seed, scored on its test part), ``batch_small`` and ``batch_large``
(:func:`~carb_lib.evaluation.splits.extrapolation_splits`: batch <= 8 and batch >= 64 held out).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from carb_lib.core.metrics import regression_metrics
from carb_lib.ensemble import preset as model_preset
from carb_lib.evaluation.models import fit_quiet
from carb_lib.evaluation.splits import extrapolation_splits, stratified_split
from carb_lib.kernels import law as kernels

logger = logging.getLogger(__name__)

#: Targets the compared models are fitted on (latency is compared; memory is reported beside).
COMPARISON_TARGETS: tuple[str, str] = ("peak_mem_mib", "latency_ms")
#: Metric columns of :attr:`KernelLawComparison.scores` (held-out latency).
COMPARISON_METRICS: tuple[str, ...] = ("r2", "mape_pct", "within_10pct", "spearman")
COMPARISON_SPLITS: tuple[str, ...] = ("random", "batch_small", "batch_large")
#: The latency targets a comparison can judge: (split, metric, operator, goal).
LATENCY_TARGETS: tuple[tuple[str, str, str, float], ...] = (
    ("random", "within_10pct", ">=", 0.95), ("batch_small", "r2", ">=", 0.95))


@dataclass
class KernelLawComparison:
    """Result of :func:`kernel_law_comparison`.

    Attributes
    ----------
    scores : pandas.DataFrame
        One row per split, law and seed: ``split``, ``held_out``, ``train_batches`` (``lo-hi``),
        ``law``, ``seed``, ``n_train``, ``n_test``, held-out latency ``r2``, ``mape_pct``,
        ``within_10pct`` (a fraction), ``spearman``, and ``memory_mape_pct``.
    n_rows, n_operators : int
        Network rows and timed operators the comparison used.
    preset : str
        The model preset (:data:`carb_lib.ensemble.PRESETS`).
    """

    scores: pd.DataFrame
    n_rows: int
    n_operators: int
    preset: str

    def summary(self) -> pd.DataFrame:
        """Mean and sd (``<metric>_sd``) over seeds per split and law, with the row counts."""
        g = self.scores.groupby(["split", "law"], sort=False)
        m = list(COMPARISON_METRICS)
        return (pd.concat([g[m].mean(), g[m].std().add_suffix("_sd")], axis=1)
                .join(g[["held_out", "train_batches", "n_train", "n_test"]].first())
                .reset_index())

    def latency_targets(self, law: str = "kernel") -> pd.DataFrame:
        """The latency targets (:data:`LATENCY_TARGETS`) for ``law``, judged on the mean
        over seeds: one row per target with ``split``, ``metric``, ``goal``, ``mean``, ``sd``,
        ``n_seeds`` and ``met``. A split the comparison did not run gives NaN, not met."""
        out = []
        for split, metric, op, goal in LATENCY_TARGETS:
            v = self.scores.loc[(self.scores["split"] == split) & (self.scores["law"] == law),
                                metric].to_numpy(dtype=float)
            mean = float(v.mean()) if len(v) else float("nan")
            sd = float(v.std(ddof=1)) if len(v) > 1 else float("nan")
            met = (mean >= goal) if op == ">=" else (mean <= goal)
            out.append({"split": split, "law": law, "metric": metric, "goal": f"{op} {goal:g}",
                        "mean": mean, "sd": sd, "n_seeds": len(v),
                        "met": bool(met and np.isfinite(mean))})
        return pd.DataFrame(out)

    def table(self, decimals: int = 3) -> pd.DataFrame:
        """``mean ± sd`` strings per split and law (the printed table of the scripts)."""
        g = self.scores.groupby(["split", "law"], sort=False)[list(COMPARISON_METRICS)]
        return (g.mean().round(decimals).astype(str) + " ± "
                + g.std().round(decimals).astype(str))


def kernel_law_comparison(
    df: pd.DataFrame,
    bench: pd.DataFrame,
    *,
    splits: Sequence[str] = COMPARISON_SPLITS,
    seeds: int = 3,
    preset: str = "default",
    n_jobs: int = 1,
    kernel_model: kernels.KernelModel | None = None,
) -> KernelLawComparison:
    """Fit the CARB model with the roofline and the kernel latency law on extrapolation splits.

    Parameters
    ----------
    df : pandas.DataFrame
        One platform's network rows, prepared (:func:`~carb_lib.evaluation.splits.prepare_dataset`).
    bench : pandas.DataFrame
        The same platform's timed operators (:func:`carb_lib.kernels.law.read_bench`).
    splits : sequence of str, default ("random", "batch_small", "batch_large")
        Which splits to run (see the module docstring).
    seeds : int, default 3
        Model seeds (and split seeds of ``random``); every split is fitted once per seed and law.
    preset : str, default "default"
        Model preset of every fit.
    n_jobs : int, default 1
        Threads of the kernel model's predictions (:func:`carb_lib.kernels.law.with_kernel_column`).
    kernel_model : carb_lib.kernels.law.KernelModel, optional
        The (unfitted) kernel model whose parameters every fit here uses; default
        ``KernelModel()``.

    Returns
    -------
    KernelLawComparison

    Examples
    --------
    >>> from carb_lib import kernels
    >>> from carb_lib.dataset.schema import read_dataset
    >>> from carb_lib.evaluation import prepare_dataset
    >>> df = prepare_dataset(read_dataset("data/cpu_epyc_zen3_2c/design/rows.parquet"))  # doctest: +SKIP
    >>> bench = kernels.read_bench("data/cpu_epyc_zen3_2c/design/kernels.parquet")  # doctest: +SKIP
    >>> res = kernel_law_comparison(df, bench, splits=["batch_small"])  # doctest: +SKIP
    >>> res.table()  # doctest: +SKIP
    """
    unknown = sorted(set(splits) - set(COMPARISON_SPLITS))
    if unknown:
        raise ValueError(f"unknown split(s) {unknown}; known {list(COMPARISON_SPLITS)}")
    if seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {seeds}")
    plats = sorted(set(df["platform"].astype(str)) | set(bench["platform"].astype(str)))
    if len(plats) != 1:
        raise ValueError(f"the network rows and the operators must be one platform, got {plats}")
    df = df.reset_index(drop=True)
    full = kernels.with_kernel_column(df, kernels.fit_kernel_model(bench, kernel_model),
                                      n_jobs=n_jobs)
    rows: list[dict] = []

    def score(split, held, law, seed, train, test):
        params = {**model_preset(preset, targets=COMPARISON_TARGETS, random_state=seed),
                  "latency_law": "roofline" if law == "roofline" else "kernel"}
        pred = fit_quiet(params, train).predict(test)
        lat = regression_metrics(test["latency_ms"].to_numpy(dtype=float),
                                 np.asarray(pred["latency_ms"], dtype=float))
        mem = regression_metrics(test["peak_mem_mib"].to_numpy(dtype=float),
                                 np.asarray(pred["peak_mem_mib"], dtype=float))
        b = train["batch"].astype(int)
        rows.append({"split": split, "held_out": held, "train_batches": f"{b.min()}-{b.max()}",
                     "law": law, "seed": seed, "n_train": len(train), "n_test": len(test),
                     "r2": lat.r2, "mape_pct": lat.mape_pct, "within_10pct": lat.within_10pct,
                     "spearman": lat.spearman, "memory_mape_pct": mem.mape_pct})

    if "random" in splits:
        for seed in range(seeds):
            part = stratified_split(full, random_state=seed).to_numpy()
            tr, te = full[part == "train"], full[part == "test"]
            for law in ("roofline", "kernel"):
                score("random", "test part", law, seed, tr, te)
    batch_kinds = [k for k in ("batch_small", "batch_large") if k in splits]
    for kind, held, test in extrapolation_splits(df, batch_kinds):
        test = np.asarray(test, dtype=bool)
        train_b = set(df.loc[~test, "batch"].astype(int))
        strict_model = kernels.fit_kernel_model(
            bench[bench["batch"].astype(int).isin(train_b)], kernel_model)
        strict = kernels.with_kernel_column(df, strict_model, n_jobs=n_jobs)
        logger.info("%s (%s held out): %d train, %d test rows", kind, held, (~test).sum(),
                    test.sum())
        for seed in range(seeds):
            score(kind, held, "roofline", seed, full[~test], full[test])
            score(kind, held, "kernel", seed, full[~test], full[test])
            score(kind, held, "kernel_strict", seed, strict[~test], strict[test])
    return KernelLawComparison(scores=pd.DataFrame(rows), n_rows=len(df),
                               n_operators=len(bench), preset=preset)
