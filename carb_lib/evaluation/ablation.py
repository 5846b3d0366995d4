"""One split's model comparison of a platform: :func:`evaluate_platform`.

On one stratified 70/15/15 split: every CARB variant (:func:`~carb_lib.evaluation.variant_specs`:
NNLS vs fixed blend, each learner alone without cascade or regime correction, the blend without
cascade, without regime correction, static vs static+telemetry features) and the baselines B1 /
B2 scored on validation and test; NNLS vs fixed decided on validation; conformal coverage;
leave-one-batch-tier-out (train ``batch > SMALL_BATCH_MAX``) and leave-one-depth-out. The
multi-seed protocol is :func:`carb_lib.evaluation.evaluate_protocol`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.ensemble import CASCADE_ORDER, CARBRegressor
from carb_lib.evaluation.intervals import interval_coverage
from carb_lib.evaluation.models import (
    MAIN_VARIANTS,
    ablation_reference_name,
    fit_quiet,
    flops_baseline,
    latency_proxy_baseline,
    variant_specs,
)
from carb_lib.evaluation.scoring import metrics_table, noise_floor_cv
from carb_lib.evaluation.splits import has_values, stratified_split
from carb_lib.vocab import DEFAULT_COVERAGE, SMALL_BATCH_MAX, TELEMETRY_FEATURES

__all__ = [
    "PlatformEvaluation",
    "blend_winner",
    "compare_models",
    "evaluate_platform",
    "leave_one_batch_tier_out",
    "leave_one_depth_out",
]


def compare_models(
    train: pd.DataFrame,
    test: pd.DataFrame,
    params: Mapping[str, Any],
    variants: Mapping[str, Mapping[str, Any]] | None = None,
    platform: str | None = None,
    split_name: str = "test",
    progress: bool = False,
    ablation_params: Mapping[str, Any] | None = None,
    preset: str | None = None,
    ablation_preset: str | None = None,
) -> tuple[pd.DataFrame, dict[str, CARBRegressor]]:
    """Fit every variant and the baselines on ``train``; metrics on ``test``.

    Parameters
    ----------
    train, test : pandas.DataFrame
    params : mapping
        CARBRegressor parameters of the main model and of :data:`MAIN_VARIANTS`.
    variants : mapping, optional
        Name -> parameter overrides; default :func:`variant_specs` (``{}``: baselines only).
    platform : str, optional
    split_name : str, default="test"
        Written to the ``split`` column.
    progress : bool, default=False
        A progress bar over the variants.
    ablation_params : mapping, optional
        Parameters of the other variants (learner-alone, no cascade, no regime correction),
        e.g. the ``"fast"`` preset. When given, a CARB-NNLS reference is fitted with them too
        (:func:`ablation_reference_name`), so that each ablation can be compared with a model
        of its own size. None: every variant uses ``params``.
    preset, ablation_preset : str, optional
        Labels of the two parameter sets, written to the ``preset`` column (NaN for the
        baselines, which are not CARB models).

    Returns
    -------
    (pandas.DataFrame, dict)
        Tidy metrics (columns ``model``, ``preset``) and the fitted CARB variants by name.
    """
    targets = [t for t in params.get("targets", CASCADE_ORDER) if has_values(train, t)]
    telemetry = all(has_values(train, c) and has_values(test, c) for c in TELEMETRY_FEATURES)
    split_params = ablation_params is not None
    if ablation_params is None:
        ablation_params, ablation_preset = params, preset
    if variants is None:
        variants = variant_specs(telemetry, params.get("feature_set", "static"))
        if split_params:
            variants = {**variants, ablation_reference_name(ablation_preset): {"blend": "nnls"}}
    noise_cv = noise_floor_cv(train)
    tables, models = [], {}
    kw = {"platform": platform, "noise_cv": noise_cv, "split": split_name, "preset": None}
    for t in targets:
        for mode in ("loglog", "raw"):
            pred = flops_baseline(train, test, t, mode).to_frame()
            tables.append(metrics_table(test, pred, f"b1_flops_{mode}", **kw))
    if "energy_j" in targets and has_values(test, "energy_j"):
        tables.append(
            metrics_table(
                test, latency_proxy_baseline(train, test).to_frame(), "b2_latency_proxy", **kw
            )
        )
    items = list(variants.items())
    if progress:
        from tqdm.auto import tqdm

        items = tqdm(items, desc="CARB variants")
    for name, over in items:
        main = name in MAIN_VARIANTS
        base = params if main else ablation_params
        # the ablation size, but the main model's targets / feature set / seed / threads
        fixed = {k: params[k] for k in ("targets", "feature_set", "random_state") if k in params}
        model = fit_quiet({**base, **({} if main else fixed), **over}, train)
        models[name] = model
        label = preset if main else ablation_preset
        tables.append(metrics_table(test, model.predict(test), name, **{**kw, "preset": label}))
    return pd.concat(tables, ignore_index=True), models


def leave_one_batch_tier_out(
    df: pd.DataFrame,
    params: Mapping[str, Any],
    batch_max: int = SMALL_BATCH_MAX,
    platform: str | None = None,
    preset: str | None = None,
) -> pd.DataFrame:
    """Train on ``batch > batch_max``, test on ``batch <= batch_max`` (CARB with NNLS blend).

    With no small-batch training rows the regime corrector is not fitted (it has nothing to
    learn from), exactly as the paper's protocol implies.
    """
    b = pd.to_numeric(df["batch"], errors="coerce")
    train, test = df[b > batch_max], df[b <= batch_max]
    if train.empty or test.empty:
        return pd.DataFrame()
    model = fit_quiet(params, train)
    return metrics_table(
        test,
        model.predict(test),
        "carb_nnls",
        platform,
        noise_floor_cv(train),
        split=f"lobto(batch<={batch_max})",
        preset=preset,
    )


def leave_one_depth_out(
    df: pd.DataFrame,
    params: Mapping[str, Any],
    depths: Iterable[int] | None = None,
    platform: str | None = None,
    progress: bool = False,
    preset: str | None = None,
) -> pd.DataFrame:
    """For each ResNet depth: train on the other depths, test on it (CARB with NNLS blend).

    ``preset`` labels ``params`` in the ``preset`` column.
    """
    d = pd.to_numeric(df["depth"], errors="coerce")
    depths = sorted(d.dropna().unique()) if depths is None else list(depths)
    if progress:
        from tqdm.auto import tqdm

        depths = tqdm(depths, desc="leave-one-depth-out")
    tables = []
    noise_cv = noise_floor_cv(df)
    for depth in depths:
        test = df[d == depth]
        train = df[d != depth]
        if test.empty or len(train) < 20:
            continue
        model = fit_quiet(params, train)
        tables.append(
            metrics_table(
                test,
                model.predict(test),
                "carb_nnls",
                platform,
                noise_cv,
                split="lodo",
                held_out_depth=int(depth),
                preset=preset,
            )
        )
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame()


def blend_winner(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per target: NNLS vs fixed blend, by R2 on the log scale (ties go to fixed, the simpler)."""
    sub = metrics[metrics["model"].isin(["carb_nnls", "carb_fixed"])]
    wide = sub.pivot_table(index="target", columns="model", values="r2_log")
    wide["winner"] = np.where(wide["carb_nnls"] > wide["carb_fixed"], "nnls", "fixed")
    return wide.reset_index()


@dataclass
class PlatformEvaluation:
    """What :func:`evaluate_platform` measured on one platform's split.

    Mapping access (``result["test_metrics"]``, ``result.get("lodo")``, ``result.keys()``) is
    kept for the callers written against the former dict.

    Attributes
    ----------
    split : pandas.Series
        ``train`` / ``val`` / ``test`` per row.
    val_metrics, test_metrics : pandas.DataFrame
        Tidy metrics of every model (variants and baselines) on validation and test.
    blend_winner : pandas.DataFrame
        NNLS vs fixed per target, decided on validation, shown with test.
    coverage : pandas.DataFrame
        Conformal coverage of the CARB-NNLS model on test (:func:`interval_coverage`).
    lobto, lodo : pandas.DataFrame
        Leave-one-batch-tier-out and leave-one-depth-out metrics (empty when not run).
    presets : dict
        ``{"main": preset, "ablation": ablation_preset}`` labels.
    model : CARBRegressor
        The CARB-NNLS model fitted on train.
    models : dict
        Every fitted variant by name.
    test : pandas.DataFrame
        The test rows.
    test_pred : pandas.DataFrame
        ``model``'s predictions on them.
    """

    split: pd.Series
    val_metrics: pd.DataFrame
    test_metrics: pd.DataFrame
    blend_winner: pd.DataFrame
    coverage: pd.DataFrame
    lobto: pd.DataFrame
    lodo: pd.DataFrame
    presets: dict[str, str | None]
    model: CARBRegressor
    models: dict[str, CARBRegressor]
    test: pd.DataFrame
    test_pred: pd.DataFrame

    def keys(self) -> list[str]:
        """Field names (mapping access)."""
        return [f.name for f in fields(self)]

    def __getitem__(self, key: str) -> Any:
        if key not in self.keys():
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        """``self[key]`` or ``default``."""
        return getattr(self, key) if key in self.keys() else default


def evaluate_platform(
    df: pd.DataFrame,
    params: Mapping[str, Any],
    platform: str | None = None,
    random_state: int = 0,
    coverage: float = DEFAULT_COVERAGE,
    lodo_depths: Iterable[int] | None = None,
    run_lodo: bool = True,
    progress: bool = False,
    ablation_params: Mapping[str, Any] | None = None,
    preset: str | None = None,
    ablation_preset: str | None = None,
) -> PlatformEvaluation:
    """The one-split evaluation of one platform's data (already ``prepare_dataset``-ed).

    ``params`` size the main model, the NNLS-vs-fixed blend comparison, the feature-set
    variants and leave-one-batch-tier-out; ``ablation_params`` (default: ``params``), e.g.
    :data:`carb_lib.ensemble.PRESETS` ``["fast"]``, size the learner-alone / no-cascade /
    no-regime ablations (with a CARB-NNLS reference of the same size) and the
    leave-one-depth-out fits (one per depth). ``preset`` / ``ablation_preset`` label them in
    every table's ``preset`` column. ``coverage`` is the nominal level of the coverage table.

    Returns
    -------
    PlatformEvaluation
    """
    split = stratified_split(df, random_state=random_state)
    train, val, test = (df[split == s] for s in ("train", "val", "test"))
    if ablation_params is None:
        ablation_params, ablation_preset = params, preset
    sizes = {"ablation_params": ablation_params, "preset": preset, "ablation_preset": ablation_preset}
    if dict(ablation_params) == dict(params):
        sizes["ablation_params"] = None  # one size for everything: no separate reference
    val_metrics, models = compare_models(
        train, val, params, platform=platform, split_name="val", progress=progress, **sizes
    )
    preset_of = val_metrics.drop_duplicates("model").set_index("model")["preset"]
    test_tables = [
        metrics_table(test, model.predict(test), name, platform, noise_floor_cv(train),
                      split="test", preset=preset_of.get(name))
        for name, model in models.items()
    ]
    # baselines on test (cheap; refit on train)
    base, _ = compare_models(
        train, test, params, variants={}, platform=platform, split_name="test", **sizes
    )
    test_metrics = pd.concat([base] + test_tables, ignore_index=True)
    winner = blend_winner(val_metrics).rename(
        columns={"carb_nnls": "val_r2_log_nnls", "carb_fixed": "val_r2_log_fixed"}
    )
    test_w = blend_winner(test_metrics).rename(
        columns={
            "carb_nnls": "test_r2_log_nnls",
            "carb_fixed": "test_r2_log_fixed",
            "winner": "test_winner",
        }
    )
    model = models["carb_nnls"]
    return PlatformEvaluation(
        split=split,
        val_metrics=val_metrics,
        test_metrics=test_metrics,
        blend_winner=winner.merge(test_w, on="target"),
        coverage=interval_coverage(model, test, coverage),
        lobto=leave_one_batch_tier_out(df, params, platform=platform, preset=preset),
        lodo=leave_one_depth_out(
            df, ablation_params, lodo_depths, platform, progress, preset=ablation_preset
        )
        if run_lodo
        else pd.DataFrame(),
        presets={"main": preset, "ablation": ablation_preset},
        model=model,
        models=models,
        test=test,
        test_pred=model.predict(test),
    )
