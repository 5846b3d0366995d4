"""Cross-family evaluation: predict a network family the model never saw, then with k rows.

A user's network is rarely one of the families a cost model was fitted on. This module asks
how far a model fitted on *source* families (the paper's ResNet grid) carries to *new* families
(MobileNetV2-, VGG- and EfficientNet-style networks), measured on the same machine:

``zero_shot``
    a :class:`~carb_lib.ensemble.CARBRegressor` with ``feature_set="shared"`` (no family
    config encoding: static features with the family-agnostic extras, resolution, batch,
    precision) fitted on the source rows, predicting the new family's test rows unchanged;
few-shot (``blend``, ``ridge``, ``loglinear``, ``offset``)
    the zero-shot predictions recalibrated on ``k`` measured rows of the new family with the
    few-shot methods of the platform transfer (:func:`carb_lib.transfer.pairwise.recalibrate`;
    ``blend`` is the default there, chosen on the HELP devices; ``offset``, one scale factor,
    was chosen for new families on the Zen 3 rows, ``docs/experiments.md``);
baselines with the same ``k`` rows and no source (``target_only``: ridge on static features;
``flops``: log-log on FLOPs);
``own_model``
    the family's own model: ``CARBRegressor`` (``feature_set="static"``) fitted on every row of
    the family's training part (hundreds of rows): what measuring the family fully buys.

Splits are by architecture (:func:`~carb_lib.evaluation.splits.grouped_split`): the test rows'
networks are in neither the k rows nor the own model's training rows. Each seed redraws the
split, the k rows and the models' seeds; :attr:`CrossFamilyResult.summary` gives mean +- sd over
seeds. Metrics (:mod:`carb_lib.core.metrics`): MAPE, share within +-10 %, Spearman, R^2.

Examples
--------
>>> import pandas as pd
>>> from carb_lib.evaluation.cross_family import cross_family_evaluation
>>> res = cross_family_evaluation(source_rows, new_family_rows, ks=(10,), n_seeds=2,
...                               preset="test")  # doctest: +SKIP
>>> res.summary.query("model == 'zero_shot'")  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.metrics import regression_metrics
from carb_lib.core.vocab import TARGET_SHORT
from carb_lib.dataset.features import with_static_features
from carb_lib.ensemble import preset as _preset
from carb_lib.evaluation.models import fit_quiet
from carb_lib.evaluation.splits import grouped_split
from carb_lib.families import get_family
from carb_lib.families.space import add_config_ids
from carb_lib.measure.campaign_parts import drift_table
from carb_lib.transfer.pairwise import METHODS, model_features, recalibrate
from carb_lib.transfer.rows import CROSS_FAMILY_TARGETS, prepare_rows  # (re-exported)

__all__ = [
    "CROSS_FAMILY_TARGETS",
    "FEW_SHOT_METHODS",
    "CrossFamilyResult",
    "cross_family_evaluation",
    "cross_family_targets",
    "fitting_ks",
    "family_candidates",
    "issue_targets",
    "law_comparison",
    "on_reference_scale",
    "prepare_rows",
]

logger = logging.getLogger(__name__)

#: Targets judged where every ok row of both the source and the new families holds them.
MEASURED_ONLY_TARGETS: tuple[str, ...] = ("energy_j",)
#: Few-shot methods of :func:`carb_lib.transfer.pairwise.recalibrate` evaluated, source-based first, then
#: the two baselines that use the k rows alone.
FEW_SHOT_METHODS: tuple[str, ...] = ("blend", "ridge", "loglinear", "offset", "target_only",
                                       "flops")
#: Metric columns of :attr:`CrossFamilyResult.scores`.
METRICS: tuple[str, ...] = ("mape_pct", "within_10pct", "spearman", "r2")


@dataclass
class CrossFamilyResult:
    """What :func:`cross_family_evaluation` found.

    Attributes
    ----------
    scores : pandas.DataFrame
        One row per seed x family x target x model x k: ``n_test``, ``n_train`` (rows of the
        new family the model used), and :data:`METRICS`. ``k`` is 0 for the zero-shot model
        and for the own model (which uses ``n_train`` rows: the family's training part).
    summary : pandas.DataFrame
        Mean and sd over seeds of each metric per family x target x model x k (``*_mean``,
        ``*_sd``, ``n_seeds``).
    predictions : pandas.DataFrame
        Seed 0's test-row predictions (``family``, ``target``, ``model``, ``k``, ``config_id``,
        ``batch``, ``measured``, ``predicted``) of the zero-shot model, the default few-shot
        method and the own model, for plots.
    params : dict
        The arguments (families, ks, seeds, preset, source rows per family) and ``notes``
        (e.g. an own model that could not be fitted on a small training part).
    """

    scores: pd.DataFrame
    summary: pd.DataFrame
    predictions: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)


def cross_family_targets(source: pd.DataFrame, target: pd.DataFrame) -> tuple[str, ...]:
    """:data:`CROSS_FAMILY_TARGETS`, and ``energy_j`` where every ok row of ``source`` and
    ``target`` holds a finite value > 0 (the GPU campaigns; CPU rows carry none)."""
    out = list(CROSS_FAMILY_TARGETS)
    for t in MEASURED_ONLY_TARGETS:
        held = []
        for df in (source, target):
            ok = df["status"].astype(str).eq("ok") if "status" in df.columns else \
                pd.Series(True, df.index)
            y = pd.to_numeric(df[t], errors="coerce")[ok] if t in df.columns else pd.Series([])
            held.append(len(y) > 0 and bool((np.isfinite(y) & (y > 0)).all()))
        if all(held):
            out.append(t)
    return tuple(out)


def fitting_ks(target: pd.DataFrame, ks: Sequence[int], n_seeds: int,
               targets: Sequence[str] = CROSS_FAMILY_TARGETS,
               test_fraction: float = 0.3) -> tuple[list[int], list[str]]:
    """The values of ``ks`` that every family of ``target`` allows under the splits of
    :func:`cross_family_evaluation` (its training part holds at least k rows for every seed),
    and one note per value left out, naming the smallest family's training part."""
    rows = prepare_rows(target, targets)
    smallest: dict[str, int] = {}
    for family, g in rows.groupby(rows["family"].astype(str), sort=True):
        g = g.reset_index(drop=True)
        smallest[family] = min(
            int((grouped_split(g, (1 - test_fraction, 0.0, test_fraction),
                               random_state=seed).to_numpy() == "train").sum())
            for seed in range(max(1, int(n_seeds))))
    if not smallest:
        return [], [f"no ok rows with {', '.join(targets)} in the new families"]
    family, pool = min(smallest.items(), key=lambda kv: (kv[1], kv[0]))
    kept = [int(k) for k in ks if int(k) <= pool]
    notes = [f"k = {int(k)} left out: family {family!r} has {pool} training rows (of "
             f"{int((rows['family'].astype(str) == family).sum())}) in its smallest split"
             for k in ks if int(k) > pool]
    return kept, notes


def _score_rows(seed, family, target, model, k, n_train, y, p) -> dict[str, Any]:
    m = regression_metrics(y, p)
    return {"seed": seed, "family": family, "target": target, "model": model, "k": k,
            "n_train": n_train, "n_test": m.n, **{c: m[c] for c in METRICS}}


def _summarise(scores: pd.DataFrame) -> pd.DataFrame:
    keys = ["family", "target", "model", "k"]
    g = scores.groupby(keys, sort=False)
    out = g[list(METRICS)].agg(["mean", "std"])
    out.columns = [f"{m}_{'sd' if s == 'std' else s}" for m, s in out.columns]
    out["n_seeds"] = g["seed"].nunique()
    out["n_test"] = g["n_test"].median()
    out["n_train"] = g["n_train"].median()
    return out.reset_index()


def cross_family_evaluation(
    source: pd.DataFrame,
    target: pd.DataFrame,
    *,
    families: Sequence[str] | None = None,
    ks: Sequence[int] = (10, 50),
    n_seeds: int = 3,
    targets: Sequence[str] = CROSS_FAMILY_TARGETS,
    methods: Sequence[str] = FEW_SHOT_METHODS,
    preset: str = "default",
    test_fraction: float = 0.3,
    own_model: bool = True,
    default_method: str = "blend",
    latency_law: str = "roofline",
    siblings: bool = False,
    source_params: dict[str, Any] | None = None,
    progress: bool = True,
) -> CrossFamilyResult:
    """Zero-shot, few-shot and own-model accuracy on families the source model never saw.

    Parameters
    ----------
    source : pandas.DataFrame
        Measured rows of the source families (e.g. the ResNet grid), one platform.
    target : pandas.DataFrame
        Measured rows of the new families, same platform.
    families : sequence of str, optional
        New families to evaluate (default: every family in ``target`` not in ``source``).
    ks : sequence of int, default=(10, 50)
        Rows of the new family the few-shot methods get (each >= 2).
    n_seeds : int, default=3
        Seeds: each redraws the architecture split, the k rows and the models' seeds.
    targets : sequence of str, default=("peak_mem_mib", "latency_ms")
    methods : sequence of str, default=FEW_SHOT_METHODS
        Few-shot methods (:func:`carb_lib.transfer.pairwise.recalibrate`).
    preset : str, default="default"
        Model size (:data:`carb_lib.ensemble.PRESETS`) of the source and own models.
    test_fraction : float, default=0.3
        Share of each new family's rows (by architecture) held out for testing.
    own_model : bool, default=True
        Also fit each family's own model on its training part.
    default_method : str, default="blend"
        Few-shot method whose predictions go into ``predictions``.
    latency_law : {"roofline", "kernel"}, default="roofline"
        The latency base law of the source and own models (``CARBRegressor(latency_law=...)``;
        ``"kernel"`` needs :data:`~carb_lib.core.vocab.KERNEL_FEATURE` in both frames).
    siblings : bool, default=False
        Leave one family out: each family's source model is fitted on ``source`` *and* every
        row of the other families in ``target`` (its *siblings*), the situation of a user who
        has measured some families and asks for the next one. The evaluated family's rows stay
        out of its source; its split, k rows and scores are those of ``siblings=False`` with
        the same seed, so the two results pair seed by seed. Needs two or more families in
        ``target``.
    source_params : dict, optional
        :class:`~carb_lib.ensemble.CARBRegressor` parameters that override the preset's in the
        source model only (e.g. ``{"regime_shrink": 0.0}``: no small-batch corrector); the own
        model keeps the preset.
    progress : bool, default=True
        A tqdm bar over seeds x families.

    Returns
    -------
    CrossFamilyResult

    Raises
    ------
    ValueError
        An unknown family or method, a k < 2, a family with fewer training rows than the
        largest k, rows of several platforms, ``siblings=True`` with one family in ``target``.
    """
    from tqdm.auto import tqdm

    ks = sorted({int(k) for k in ks})
    if any(k < 2 for k in ks):
        raise ValueError(f"every k needs >= 2 rows, got ks={ks}")
    bad = [m for m in methods if m not in METHODS]
    if bad or default_method not in methods:
        raise ValueError(f"unknown method(s) {bad or [default_method]}; known: {list(METHODS)}")
    if n_seeds < 1:
        raise ValueError(f"n_seeds must be >= 1, got {n_seeds}")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    plats = set(source.get("platform", pd.Series(dtype=str)).dropna().astype(str)) | set(
        target.get("platform", pd.Series(dtype=str)).dropna().astype(str))
    if len(plats) > 1:
        raise ValueError(f"source and target rows span several platforms {sorted(plats)}; "
                         "cross-family evaluation compares families on one machine")
    src = prepare_rows(source, targets)
    tgt = prepare_rows(target, targets)
    src_fams = set(src["family"].astype(str))
    if families is None:
        families = sorted(set(tgt["family"].astype(str)) - src_fams)
    unknown = [f for f in families if f not in set(tgt["family"].astype(str))]
    if unknown:
        raise ValueError(f"no target rows of family(ies) {unknown}; present: "
                         f"{sorted(set(tgt['family'].astype(str)))}")
    if not families or src.empty:
        raise ValueError("need source rows and at least one new family in the target rows")
    tgt_fams = tgt["family"].astype(str).to_numpy()
    if siblings and len(set(tgt_fams)) < 2:
        raise ValueError(f"siblings=True needs rows of two or more families in the target, got "
                         f"{sorted(set(tgt_fams))}")
    targets = tuple(targets)
    rows: list[dict[str, Any]] = []
    preds: list[pd.DataFrame] = []
    notes: list[str] = []
    bar = tqdm(total=n_seeds * len(families), desc="cross-family", disable=not progress)
    for seed in range(n_seeds):
        params = {**_preset(preset, targets=targets, random_state=seed),
                  "latency_law": latency_law}
        src_params = {**params, **(source_params or {}), "feature_set": "shared"}
        src_model = None if siblings else fit_quiet(src_params, src)
        for family in families:
            if siblings:  # this family's source: the source rows and its siblings' rows
                src_model = fit_quiet(src_params,
                                      pd.concat([src, tgt[tgt_fams != family]], ignore_index=True))
            rows_f = tgt[tgt_fams == family].reset_index(drop=True)
            split = grouped_split(rows_f, (1 - test_fraction, 0.0, test_fraction),
                                  random_state=seed)
            pool = rows_f[split.to_numpy() == "train"].reset_index(drop=True)
            test = rows_f[split.to_numpy() == "test"].reset_index(drop=True)
            if len(pool) < max(ks) or len(test) < 2:
                raise ValueError(f"family {family!r}: {len(pool)} training / {len(test)} test "
                                 f"rows; need >= {max(ks)} and >= 2")
            s_test = src_model.predict(test)
            f_test = model_features(test)
            for t in targets:
                y = test[t].to_numpy(float)
                rows.append(_score_rows(seed, family, t, "zero_shot", 0, 0, y, s_test[t]))
                if seed == 0:
                    preds.append(_pred_frame(test, family, t, "zero_shot", 0, s_test[t]))
            rng = np.random.default_rng([seed, len(family), sum(map(ord, family))])
            for k in ks:
                pick = np.sort(rng.choice(len(pool), size=k, replace=False))
                sample = pool.iloc[pick].reset_index(drop=True)
                s_sample = src_model.predict(sample)
                f_sample = model_features(sample)
                for t in targets:
                    y_s = np.log(sample[t].to_numpy(float))
                    for method in methods:
                        log_p = recalibrate(method, np.log(s_sample[t].to_numpy(float)),
                                            f_sample, y_s, np.log(s_test[t].to_numpy(float)),
                                            f_test)
                        p = np.exp(log_p)
                        rows.append(_score_rows(seed, family, t, method, k, k,
                                                test[t].to_numpy(float), p))
                        if seed == 0 and method == default_method:
                            preds.append(_pred_frame(test, family, t, method, k, p))
            if own_model:
                try:
                    own = fit_quiet({**params, "feature_set": "static"}, pool).predict(test)
                except ValueError as exc:  # e.g. too few rows of a precision for a base law
                    notes.append(f"seed {seed}, {family}: own model not fitted ({exc})")
                    logger.warning(notes[-1])
                    own = None
                for t in targets if own is not None else ():
                    rows.append(_score_rows(seed, family, t, "own_model", 0, len(pool),
                                            test[t].to_numpy(float), own[t]))
                    if seed == 0:
                        preds.append(_pred_frame(test, family, t, "own_model", 0, own[t]))
            bar.update(1)
    bar.close()
    scores = pd.DataFrame(rows)
    return CrossFamilyResult(
        scores=scores,
        summary=_summarise(scores),
        predictions=pd.concat(preds, ignore_index=True),
        params={"families": list(families), "ks": ks, "n_seeds": n_seeds, "preset": preset,
                "targets": list(targets), "methods": list(methods),
                "default_method": default_method, "test_fraction": test_fraction,
                "latency_law": latency_law, "siblings": bool(siblings),
                "source_params": dict(source_params or {}),
                "source_rows": src["family"].astype(str).value_counts().to_dict(),
                "target_rows": tgt["family"].astype(str).value_counts().to_dict(),
                "notes": notes},
    )


def _pred_frame(test: pd.DataFrame, family: str, target: str, model: str, k: int,
                pred: Any) -> pd.DataFrame:
    return pd.DataFrame({
        "family": family, "target": target, "model": model, "k": k,
        "config_id": test["config_id"].to_numpy() if "config_id" in test else np.arange(len(test)),
        "batch": test["batch"].to_numpy(), "measured": test[target].to_numpy(float),
        "predicted": np.asarray(pred, dtype=float),
    })  # fmt: skip


def law_comparison(summaries: dict[str, pd.DataFrame], *, target: str = "latency_ms",
                   models: Sequence[str] = ("zero_shot", "blend", "loglinear", "offset",
                                           "own_model"),
                   ) -> pd.DataFrame:
    """Each base law's cross-family accuracy side by side.

    Parameters
    ----------
    summaries : dict
        Law name -> :attr:`CrossFamilyResult.summary` of a run with that law (same families,
        ks and seeds).
    target : str, default="latency_ms"
    models : sequence of str
        Models (rows) to keep, in this order.

    Returns
    -------
    pandas.DataFrame
        ``family``, ``model``, ``k`` and, per law, ``<law>_mape_pct``, ``<law>_within_10pct``,
        ``<law>_spearman`` (means over seeds) and ``<law>_spearman_sd``.
    """
    if not summaries:
        raise ValueError("give at least one law's summary")
    keys = ["family", "model", "k"]
    out = None
    for law, s in summaries.items():
        part = s[(s["target"] == target) & s["model"].isin(models)]
        part = part[[*keys, "mape_pct_mean", "within_10pct_mean", "spearman_mean",
                     "spearman_sd"]].rename(columns={
                         "mape_pct_mean": f"{law}_mape_pct",
                         "within_10pct_mean": f"{law}_within_10pct",
                         "spearman_mean": f"{law}_spearman", "spearman_sd": f"{law}_spearman_sd"})
        out = part if out is None else out.merge(part, on=keys, how="outer")
    order = {m: i for i, m in enumerate(models)}
    out = out.assign(_o=out["model"].map(order)).sort_values(["family", "_o", "k"])
    return out.drop(columns="_o").reset_index(drop=True)


def issue_targets(result: CrossFamilyResult, k: int = 10) -> pd.DataFrame:
    """The issue's cross-family targets per family, from the mean over seeds, with pass/fail.

    * memory MAPE <= 5 % zero-shot;
    * latency Spearman >= 0.95 and MAPE <= 10 % with ``k`` rows of the family (the default
      few-shot method, :attr:`CrossFamilyResult.params` ``default_method``).
    """
    s = result.summary
    method = result.params.get("default_method", "blend")
    out = []

    def get(family, target, model, kk, col):
        r = s[(s["family"] == family) & (s["target"] == target) & (s["model"] == model)
              & (s["k"] == kk)]
        return float(r[col].iloc[0]) if len(r) else float("nan")

    for family in result.params["families"]:

        checks = [
            ("peak_mem_mib", "zero_shot", 0, "mape_pct", "<=", 5.0),
            ("latency_ms", method, k, "spearman", ">=", 0.95),
            ("latency_ms", method, k, "mape_pct", "<=", 10.0),
        ]
        for t, model, kk, col, op, goal in checks:
            mean = get(family, t, model, kk, f"{col}_mean")
            sd = get(family, t, model, kk, f"{col}_sd")
            met = (mean <= goal) if op == "<=" else (mean >= goal)
            out.append({"family": family, "target": TARGET_SHORT.get(t, t),
                        "model": model, "k": kk, "metric": col, "goal": f"{op} {goal:g}",
                        "mean": mean, "sd": sd, "met": bool(met and np.isfinite(mean))})
    return pd.DataFrame(out)


def family_candidates(families: Sequence[str], n_per_family: int, *, seed: int = 0,
                      max_gflops: float | None = None,
                      precisions: Sequence[str] | None = None) -> pd.DataFrame:
    """Unmeasured candidates of several families in one frame, for one Pareto front across
    families (:func:`carb_lib.screening.screen` takes rows of any registered family).

    Parameters
    ----------
    families : sequence of str
        Registered families with a seeded sampler (``sample_configs`` of the family's module;
        ``resnet`` samples the paper's grid).
    n_per_family : int
        Candidates per family (fewer where the family has fewer distinct configs under the
        cap).
    seed : int, default=0
    max_gflops : float, optional
        Keep configs whose whole-batch FLOPs are at most this (the measured range).
    precisions : sequence of str, optional
        Keep only these precisions.

    Returns
    -------
    pandas.DataFrame
        ``config_id``, config columns and static features, one row per distinct config.
    """
    import importlib

    if n_per_family < 1:
        raise ValueError(f"n_per_family must be >= 1, got {n_per_family}")
    parts = []
    for i, name in enumerate(families):
        get_family(name)  # refuses an unknown family, listing the known ones
        mod = importlib.import_module(f"carb_lib.families.{name}")
        if not hasattr(mod, "sample_configs"):
            raise ValueError(f"family {name!r} has no sampler: give its candidates as rows")
        size, last = 4 * n_per_family, -1
        while True:  # draw more until n_per_family pass the filters or the space is exhausted
            pool = mod.sample_configs(size, seed=seed + 7919 * (i + 1))
            pool = add_config_ids(pool.drop(columns=["config_id"], errors="ignore"))
            pool = pool.drop_duplicates("config_id")
            n_drawn = len(pool)
            if precisions is not None:
                pool = pool[pool["precision"].isin(list(precisions))]
            pool = with_static_features(pool.reset_index(drop=True))
            if max_gflops is not None:
                pool = pool[pool["flops"] <= max_gflops * 1e9]
            if len(pool) >= n_per_family or n_drawn <= last or size >= 256 * n_per_family:
                break
            size, last = 4 * size, n_drawn
        take = np.random.default_rng([seed, i]).permutation(len(pool))[:n_per_family]
        parts.append(pool.iloc[np.sort(take)])
    return pd.concat(parts, ignore_index=True)


def on_reference_scale(rows: pd.DataFrame, reference: pd.DataFrame,
                       scale_ms: float | None = None) -> pd.DataFrame:
    """``rows`` with ``latency_ms`` replaced by the drift-normalised latency on a common scale.

    A campaign times a reference config every N configs; ``latency_norm_ms`` divides each
    row's latency by the reference's speed at that time relative to the campaign's first
    reference ``r0``. Rows of *different* campaigns that timed the same reference config are
    put on one scale by ``latency_norm_ms / r0 * scale_ms``: each row's latency in units of the
    reference config's latency at its time, times ``scale_ms``. The raw value is kept as
    ``latency_raw_ms``.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of one merged campaign folder, with ``latency_norm_ms``.
    reference : pandas.DataFrame
        That campaign's reference rows (``carb merge --reference-out``).
    scale_ms : float, optional
        The common scale, e.g. the first reference latency of the other campaign (default:
        this campaign's own ``r0``, i.e. ``latency_norm_ms`` unchanged).

    Raises
    ------
    ValueError
        No accepted reference row, no ``latency_norm_ms`` column, or a reference of several
        configs.
    """
    if "latency_norm_ms" not in rows.columns:
        raise ValueError("the rows have no 'latency_norm_ms' column (merge their campaign with "
                         "its reference rows)")
    table = drift_table(reference)
    if len(table) == 0:
        raise ValueError("no accepted reference row: nothing to put the latencies on")
    if table["config_id"].nunique() != 1:
        raise ValueError(f"the reference rows time {table['config_id'].nunique()} configs; "
                         "expected one reference config")
    r0 = float(table.sort_values("measured_at")["latency_ms"].iloc[0])
    out = rows.copy()
    out["latency_raw_ms"] = out["latency_ms"]
    scale = r0 if scale_ms is None else float(scale_ms)
    out["latency_ms"] = out["latency_norm_ms"].astype(float) / r0 * scale
    out.attrs["reference_config_id"] = str(table["config_id"].iloc[0])
    out.attrs["reference_r0_ms"] = r0
    return out
