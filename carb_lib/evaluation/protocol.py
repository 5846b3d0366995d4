"""The evaluation protocol of CARB (:func:`evaluate_protocol`): seeds, grouped and
extrapolation splits, ablation, conformal coverage per regime, base-law constants.

* Random 70/15/15 split (:func:`~carb_lib.evaluation.stratified_split`), one per seed: every
  variant of :data:`~carb_lib.evaluation.ABLATION_VARIANTS` and the FLOPs-only baseline B1
  fitted on train, scored on validation (for choices) and test (for reporting).
* Grouped-by-architecture split (:func:`~carb_lib.evaluation.grouped_split`): unseen
  architectures.
* Extrapolation splits (:func:`~carb_lib.evaluation.extrapolation_splits`).
* Metrics per target: R² (original and log scale), MAE, MAPE, share within ±10 %, Spearman rho
  (:mod:`carb_lib.core.metrics`); conformal coverage on held-out rows at the requested level.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import DEFAULT_COVERAGE
from carb_lib.ensemble import CASCADE_ORDER
from carb_lib.ensemble.base_models import fit_base_law
from carb_lib.evaluation.intervals import coverage_rows
from carb_lib.evaluation.models import ABLATION_VARIANTS, fit_quiet, flops_baseline
from carb_lib.evaluation.scoring import (
    METRIC_COLUMNS,
    mean_sd,
    metric_rows,
    noise_floor_cv,
    remeasurement_noise,
)
from carb_lib.evaluation.splits import (
    EXTRAPOLATION_KINDS,
    extrapolation_splits,
    grouped_split,
    has_values,
    stratified_split,
)

__all__ = ["ProtocolResult", "choose_default", "compare_presets", "evaluate_protocol"]


@dataclass
class ProtocolResult:
    """Everything :func:`evaluate_protocol` measured, tidy, plus the summaries.

    Attributes
    ----------
    runs : pandas.DataFrame
        One row per (split kind, seed or held-out value, part, model, target, subset) with
        ``n``, ``r2``, ``r2_log``, ``mae``, ``mape_pct``, ``within_10pct``, ``spearman``.
    coverage : pandas.DataFrame
        Conformal coverage and median interval width (hi/lo) per run, target and batch regime.
    constants : pandas.DataFrame
        Base-law constants fitted on all rows, with bootstrap CIs.
    params : dict
        The evaluated CARBRegressor parameters.
    platform : str or None
    noise_cv : float or None
        Median measured run-to-run CV of latency (the noise floor), if the data have it.
    """

    runs: pd.DataFrame
    coverage: pd.DataFrame
    constants: pd.DataFrame
    params: dict[str, Any]
    platform: str | None = None
    noise_cv: float | None = None

    def summary(self, subset: str = "all") -> pd.DataFrame:
        """Mean ± sd over seeds for the random and grouped splits (test and val parts)."""
        r = self.runs[self.runs["kind"].isin(["random", "grouped"]) &
                      (self.runs["subset"] == subset)]
        return mean_sd(r, ["kind", "part", "model", "target"], METRIC_COLUMNS[1:])

    def ablation(self, part: str = "test") -> pd.DataFrame:
        """Random split, every variant and the FLOPs-only baseline: mean ± sd over seeds."""
        s = self.summary()
        return s[(s["kind"] == "random") & (s["part"] == part)].drop(columns=["kind", "part"])

    def extrapolation(self) -> pd.DataFrame:
        """Per extrapolation split and held-out value: metrics of each fitted model."""
        r = self.runs[~self.runs["kind"].isin(["random", "grouped"]) &
                      (self.runs["subset"] == "all")]
        return r.drop(columns=["seed", "part", "subset"]).reset_index(drop=True)

    def extrapolation_summary(self) -> pd.DataFrame:
        """Per extrapolation kind, model and target: mean and worst MAPE, worst R²."""
        r = self.extrapolation()
        if r.empty:
            return r
        g = r.groupby(["kind", "model", "target"], sort=False)
        return pd.DataFrame({
            "splits": g.size(),
            "mape_pct_mean": g["mape_pct"].mean(),
            "mape_pct_max": g["mape_pct"].max(),
            "worst_held_out": g.apply(lambda x: x.loc[x["mape_pct"].idxmax(), "held_out"],
                                      include_groups=False),
            "r2_min": g["r2"].min(),
            "within_10pct_mean": g["within_10pct"].mean(),
        }).reset_index()

    def coverage_summary(self) -> pd.DataFrame:
        """Coverage and width per split kind, target and regime: mean ± sd over runs."""
        c = self.coverage
        if c.empty:
            return c
        return mean_sd(c, ["kind", "target", "regime", "nominal"],
                        ["coverage", "median_hi_over_lo", "n"])

    def against_noise_floor(self, audit_rows: pd.DataFrame, kind: str = "random",
                            model: str = "carb") -> pd.DataFrame:
        """Deprecated: :meth:`against_remeasurement_noise` (the same table)."""
        import warnings

        warnings.warn("against_noise_floor is deprecated; use against_remeasurement_noise",
                      DeprecationWarning, stacklevel=2)
        return self.against_remeasurement_noise(audit_rows, kind, model)

    def against_remeasurement_noise(self, audit_rows: pd.DataFrame, kind: str = "random",
                                    model: str = "carb") -> pd.DataFrame:
        """The model's test metrics beside the data's own re-measurement agreement.

        ``audit_rows`` are an audit's rows (:func:`carb_lib.measure.audit.audit`); each stored row's
        re-measurement is scored as a prediction (:func:`~carb_lib.evaluation.scoring.
        remeasurement_noise`). One row per target and subset (``all``, ``clean``) present in
        both: ``n_audit`` and the re-measurement's ``*_remeasure`` metrics, the model's
        ``*_mean`` / ``*_sd`` over seeds on the test part of the ``kind`` split, and
        ``mape_ratio`` = model MAPE / re-measurement MAPE (~1: the model reproduces a stored
        row as closely as measuring it again does).
        """
        floor = remeasurement_noise(audit_rows)
        metrics = ["r2", "mape_pct", "within_10pct", "spearman"]
        summaries = {sub: self.summary(sub) for sub in floor["subset"].unique()}
        rows = []
        for _, f in floor.iterrows():
            s = summaries[f["subset"]]
            m = s[(s["kind"] == kind) & (s["part"] == "test") & (s["model"] == model) &
                  (s["target"] == f["target"])]
            if m.empty:
                continue
            m = m.iloc[0]
            row = {"platform": self.platform, "kind": kind, "model": model,
                   "target": f["target"], "subset": f["subset"], "n_audit": int(f["n"])}
            row.update({f"{k}_remeasure": float(f[k]) for k in metrics})
            row.update({f"{k}_{st}": float(m[f"{k}_{st}"]) for k in metrics
                        for st in ("mean", "sd")})
            row["runs"] = int(m["runs"])
            row["mape_ratio"] = (row["mape_pct_mean"] / row["mape_pct_remeasure"]
                                 if row["mape_pct_remeasure"] > 0 else float("nan"))
            rows.append(row)
        return pd.DataFrame(rows)

    def write(self, out_dir, suffix: str = "") -> dict[str, Any]:
        """Write every table as CSV to ``out_dir``; returns {name: path}."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        tables = {
            "protocol_runs": self.runs,
            "protocol_summary": self.summary(),
            "ablation_test": self.ablation("test"),
            "ablation_val": self.ablation("val"),
            "default_choice": choose_default(self),
            "extrapolation": self.extrapolation(),
            "extrapolation_summary": self.extrapolation_summary(),
            "coverage_runs": self.coverage,
            "coverage_summary": self.coverage_summary(),
            "base_constants": self.constants,
        }
        paths = {}
        for name, table in tables.items():
            p = out / f"{name}{suffix}.csv"
            table.to_csv(p, index=False)
            paths[name] = p
        return paths


def evaluate_protocol(
    df: pd.DataFrame,
    params: Mapping[str, Any],
    *,
    seeds: Sequence[int] = (0, 1, 2, 3, 4),
    variants: Mapping[str, Mapping[str, Any]] | None = None,
    grouped: bool = True,
    extrapolation: Iterable[str] = EXTRAPOLATION_KINDS,
    extrapolation_variants: Sequence[str] = ("carb", "no_base", "bytes_law"),
    extrapolation_values: Mapping[str, Iterable[Any]] | None = None,
    coverage: float = DEFAULT_COVERAGE,
    n_boot: int = 200,
    platform: str | None = None,
    progress: bool = False,
) -> ProtocolResult:
    """The evaluation protocol of one platform's data (already :func:`prepare_dataset`-ed).

    * Random 70/15/15 split (:func:`stratified_split`), one per seed: every variant of
      ``variants`` (default :data:`ABLATION_VARIANTS`) and the FLOPs-only baseline B1 fitted on
      train, scored on val (for choices) and test (for reporting); conformal coverage of
      ``carb`` on test.
    * Grouped-by-architecture 70/15/15 split (:func:`grouped_split`), one per seed: ``carb`` and
      B1 (unseen architectures), with coverage.
    * Extrapolation splits (:func:`extrapolation_splits`): ``extrapolation_variants`` and B1,
      fitted on everything outside the held-out part (no seeds: the split is deterministic).
    * Base-law constants on all rows with ``n_boot`` bootstrap CIs.

    ``params`` are CARBRegressor parameters (e.g. ``PRESETS["default"]`` with ``n_jobs``);
    ``coverage`` is passed to the model and honoured in every interval.
    """
    variants = dict(ABLATION_VARIANTS if variants is None else variants)
    if "carb" not in variants:
        variants = {"carb": {}, **variants}
    params = {**params, "coverage": float(coverage)}
    targets = [t for t in params.get("targets", CASCADE_ORDER) if has_values(df, t)]
    if not targets:
        raise ValueError(f"none of the targets {list(params.get('targets', CASCADE_ORDER))} has values")
    runs: list[dict[str, Any]] = []
    cov: list[dict[str, Any]] = []

    def b1(train, test):
        return pd.DataFrame({t: flops_baseline(train, test, t, "loglog") for t in targets})

    jobs: list[tuple[str, Any, Any]] = []
    for seed in seeds:
        jobs.append(("random", seed, None))
        if grouped:
            jobs.append(("grouped", seed, None))
    jobs += [(k, None, (h, m)) for k, h, m in
             extrapolation_splits(df, extrapolation, values=extrapolation_values)]
    if progress:
        from tqdm.auto import tqdm

        jobs = tqdm(jobs, desc="protocol")
    for kind, seed, held in jobs:
        if kind in ("random", "grouped"):
            split = (stratified_split if kind == "random" else grouped_split)(
                df, random_state=int(seed))
            train, parts = df[split == "train"], {p: df[split == p] for p in ("val", "test")}
            names = list(variants) if kind == "random" else ["carb"]
            held_out = None
        else:
            held_out, mask = held
            train, parts = df[~mask], {"test": df[mask]}
            names = [v for v in extrapolation_variants if v in variants]
            seed = None
        labels = {"kind": kind, "seed": seed, "held_out": held_out}
        for part, rows in parts.items():
            runs += metric_rows(rows, b1(train, rows), targets, **labels, part=part,
                                 model="b1_flops")
        for name in names:
            p = {**params, **variants[name]}
            if "random_state" not in params and seed is not None:
                p["random_state"] = int(seed)
            model = fit_quiet(p, train)
            for part, rows in parts.items():
                runs += metric_rows(rows, model.predict(rows), model.targets_, **labels,
                                     part=part, model=name)
            if name == "carb":
                cov += coverage_rows(model, parts["test"], coverage, **labels)
    w = None
    consts = []
    for t in targets:
        sub = df[np.isfinite(pd.to_numeric(df[t], errors="coerce"))]
        if params.get("noise_weighting", True) and "latency_window_cv" in sub.columns and \
                t in ("latency_ms", "energy_j"):
            cv = pd.to_numeric(sub["latency_window_cv"], errors="coerce").to_numpy(float)
            med = float(np.nanmedian(cv)) if np.isfinite(cv).any() else 0.0
            cv = np.where(np.isfinite(cv), cv, med)
            w = 1.0 / (cv**2 + max(med, 1e-4) ** 2)
        else:
            w = None
        law = fit_base_law(sub, t, sample_weight=w, n_boot=n_boot)
        consts.append(law.constants().assign(platform=platform))
    return ProtocolResult(
        runs=pd.DataFrame(runs),
        coverage=pd.DataFrame(cov),
        constants=pd.concat(consts, ignore_index=True) if consts else pd.DataFrame(),
        params=dict(params),
        platform=platform,
        noise_cv=noise_floor_cv(df),
    )


def choose_default(result: ProtocolResult, metric: str = "mape_pct") -> pd.DataFrame:
    """Per target, the CARB variant with the lowest mean validation ``metric`` (never test).

    The default preset should follow this table; ``carb_rank`` says where the evaluated model
    (``carb``) stands among the variants (1 = best on validation).
    """
    val = result.ablation("val")
    val = val[val["model"] != "b1_flops"]
    rows = []
    for t, g in val.groupby("target", sort=False):
        g = g.sort_values(f"{metric}_mean")
        carb = g[g["model"] == "carb"]
        rows.append({
            "target": t,
            "best_on_val": g["model"].iloc[0],
            f"best_val_{metric}": float(g[f"{metric}_mean"].iloc[0]),
            f"carb_val_{metric}": float(carb[f"{metric}_mean"].iloc[0]) if len(carb) else np.nan,
            "carb_rank": int(np.flatnonzero(g["model"].to_numpy() == "carb")[0]) + 1
            if len(carb) else -1,
            "variants": len(g),
        })
    return pd.DataFrame(rows)


def compare_presets(
    df: pd.DataFrame,
    presets: Mapping[str, Mapping[str, Any]],
    *,
    seeds: Sequence[int] = (0,),
    coverage: float = DEFAULT_COVERAGE,
    part: str = "test",
) -> pd.DataFrame:
    """Metrics of several parameter sets on the same random splits (mean ± sd over seeds).

    Parameters
    ----------
    df : pandas.DataFrame
        Prepared rows (:func:`~carb_lib.evaluation.prepare_dataset`).
    presets : mapping
        Name -> :class:`~carb_lib.ensemble.CARBRegressor` parameters.
    seeds : sequence of int, default=(0,)
        One 70/15/15 split (:func:`~carb_lib.evaluation.stratified_split`) and model seed each.
    coverage : float, default=DEFAULT_COVERAGE
    part : {"test", "val"}, default="test"
        Where the fitted models are scored: ``"val"`` to *choose* among parameter sets (e.g.
        the screening default, ``benchmarks/choose_default.py``), ``"test"`` to *report* the
        chosen one beside the largest preset (within 10 % relative MAPE is the target).

    Returns
    -------
    pandas.DataFrame
        One row per preset and target: ``r2``, ``mape_pct``, ``within_10pct``, ``spearman``
        and ``fit_s`` (seconds), each as ``_mean``/``_sd``, and ``runs``.

    Examples
    --------
    >>> from carb_lib.ensemble import PRESETS
    >>> from carb_lib.evaluation import compare_presets, prepare_dataset
    >>> from carb_lib.dataset.synthetic import make_synthetic_dataset
    >>> df = prepare_dataset(make_synthetic_dataset(240, 0, with_energy=False))
    >>> out = compare_presets(df, {"test": {**PRESETS["test"], "conformal": "oof"}}, part="val")
    >>> sorted(out["target"])
    ['latency_ms', 'peak_mem_mib']
    """
    if part not in ("test", "val"):
        raise ValueError(f"part must be 'test' or 'val', got {part!r}")
    rows = []
    for seed in seeds:
        split = stratified_split(df, random_state=int(seed))
        train, scored = df[split == "train"], df[split == part]
        for name, p in presets.items():
            t0 = time.perf_counter()
            model = fit_quiet({**p, "coverage": coverage, "random_state": int(seed)}, train)
            fit_s = time.perf_counter() - t0
            for r in metric_rows(scored, model.predict(scored), model.targets_, preset=name,
                                  seed=seed, part=part):
                if r["subset"] == "all":
                    rows.append({**r, "fit_s": fit_s})
    runs = pd.DataFrame(rows)
    return mean_sd(runs, ["preset", "part", "target"],
                   ["r2", "mape_pct", "within_10pct", "spearman", "fit_s"])


