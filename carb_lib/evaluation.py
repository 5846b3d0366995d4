"""Evaluate CARB (:mod:`carb_lib.ensemble`) against baselines, ablations and held-out regimes.

* Split: the paper's 70/15/15, stratified by batch tier (<=4, <=16, <=128, above) x stress flag
  (SM or memory utilisation > 65 %; False without telemetry, e.g. on CPU) x depth tier
  (shallow <= 14, medium <= 34, deep <= 101, very deep; the tiers of :mod:`carb_lib.space`,
  the paper does not give its own).
* Baselines: B1 FLOPs-only linear regression (log-log and raw), B2 measured latency as an
  energy proxy (linear; only where energy was measured).
* Ablations: each base learner alone (no cascade, no regime correction), NNLS vs fixed blend,
  blend without cascade, without regime correction, static vs static+telemetry features.
* Held-out regimes: leave-one-batch-tier-out (train batch > 8, test batch <= 8) and
  leave-one-depth-out.
* Metrics per target and platform: R2 (original and log scale), MAE, MAPE, share within
  +-10 %, Spearman rho; latency errors next to the measured noise floor (median latency_cv).
* Conformal interval coverage on held-out rows.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.claims import CLAIM_COLUMNS, merge_claims
from carb_lib.ensemble import (
    STATIC_FEATURES,
    TARGETS,
    TELEMETRY_FEATURES,
    CARBRegressor,
    MissingTargetWarning,
)

__all__ = [
    "CLAIM_COLUMNS",
    "MAIN_VARIANTS",
    "QUICK_PARAMS",
    "STRESS_UTIL_PCT",
    "ablation_reference_name",
    "batch_tier",
    "blend_winner",
    "claim_rows",
    "compare_models",
    "depth_tier",
    "evaluate_platform",
    "flops_baseline",
    "interval_coverage",
    "latency_proxy_baseline",
    "leave_one_batch_tier_out",
    "leave_one_depth_out",
    "merge_claims",
    "metrics_table",
    "noise_floor_cv",
    "prepare_dataset",
    "regression_metrics",
    "stratified_split",
    "stress_flag",
    "variant_specs",
]

STRESS_UTIL_PCT = 65.0
#: Small models for quick runs and tests (minutes on 2 cores, not the paper's sizes).
QUICK_PARAMS: dict[str, Any] = {
    "n_estimators_xgb": 50,
    "max_depth_xgb": 6,
    "learning_rate_xgb": 0.15,
    "n_estimators_lgbm": 50,
    "num_leaves_lgbm": 31,
    "learning_rate_lgbm": 0.15,
    "n_estimators_et": 50,
    "n_estimators_regime": 50,
    "cv": 3,
    # one thread: on a shared, loaded 2-core machine the OpenMP threads of XGBoost / LightGBM
    # contend and small fits get 10-100x slower with n_jobs=2
    "n_jobs": 1,
}


# ---------------------------------------------------------------------------------------------
# data preparation and split
# ---------------------------------------------------------------------------------------------
def prepare_dataset(df: pd.DataFrame, platform: str | None = None) -> pd.DataFrame:
    """Keep ``status == "ok"`` rows (of ``platform`` if given) and make sure static features exist.

    Static feature columns missing from the file are computed with
    ``carb_lib.features.static_features`` (``ImportError`` if that stage is not there yet).
    """
    out = df
    if "status" in out.columns:
        out = out[out["status"] == "ok"]
    if platform is not None:
        if "platform" not in out.columns:
            raise ValueError(
                f"platform={platform!r} requested but the data has no 'platform' column"
            )
        out = out[out["platform"] == platform]
        if out.empty:
            raise ValueError(
                f"no status=='ok' rows for platform {platform!r}; "
                f"platforms in the data: {sorted(df['platform'].dropna().unique())}"
            )
    missing = [c for c in STATIC_FEATURES if c not in out.columns]
    if missing:
        from carb_lib.features import static_features  # the lead's stage

        feats = static_features(out)
        out = out.assign(**{c: feats[c].to_numpy() for c in missing})
    return out.copy()


def batch_tier(batch: pd.Series) -> pd.Series:
    """The paper's batch tiers (:func:`carb_lib.space.batch_tier`: ``b<=4`` ... ``b>128``)."""
    from carb_lib.space import batch_tier as tiers

    return pd.Series(
        tiers(pd.to_numeric(batch).to_numpy(dtype=float)), index=batch.index, name="batch_tier"
    )


def depth_tier(df: pd.DataFrame) -> pd.Series:
    """Depth tier of ResNet rows (:func:`carb_lib.space.depth_tier`); ``nb201`` without depth."""
    from carb_lib.space import depth_tier as tiers

    d = pd.to_numeric(df["depth"], errors="coerce") if "depth" in df.columns else None
    if d is None:
        return pd.Series("nb201", index=df.index, name="depth_tier", dtype=object)
    d = d.to_numpy(dtype=float, na_value=np.nan)
    return pd.Series(np.where(np.isnan(d), "nb201", tiers(d)), index=df.index, name="depth_tier")


def stress_flag(df: pd.DataFrame, threshold_pct: float = STRESS_UTIL_PCT) -> pd.Series:
    """True where SM or memory utilisation exceeds ``threshold_pct`` (False without telemetry)."""
    flag = pd.Series(False, index=df.index, name="stress")
    for col in ("sm_util_pct", "mem_util_pct"):
        if col in df.columns:
            flag |= pd.to_numeric(df[col], errors="coerce").gt(threshold_pct).fillna(False)
    return flag


def stratified_split(
    df: pd.DataFrame,
    fractions: Sequence[float] = (0.7, 0.15, 0.15),
    random_state: int = 0,
) -> pd.Series:
    """Assign each row to ``train`` / ``val`` / ``test``, stratified like the paper.

    Strata are batch tier x stress flag x depth tier. Rows are shuffled within each stratum
    and laid end to end; position ``p`` gets the split whose cumulative fraction interval
    contains ``frac(p x golden ratio)``, a low-discrepancy sequence, so every stratum (even a
    small one) and the whole set are split close to ``fractions``.

    Returns
    -------
    pandas.Series
        ``"train"``/``"val"``/``"test"``, index of ``df``.
    """
    f = np.asarray(fractions, dtype=float)
    if len(f) != 3 or (f < 0).any() or not np.isclose(f.sum(), 1.0):
        raise ValueError(
            f"fractions must be three non-negative numbers summing to 1, got {fractions!r}"
        )
    strata = (
        batch_tier(df["batch"]) + "|" + stress_flag(df).astype(str) + "|" + depth_tier(df)
    ).to_numpy()
    rng = np.random.default_rng(random_state)
    order = np.lexsort((rng.random(len(df)), strata))
    u = np.modf(np.arange(len(df)) * 0.6180339887498949 + rng.random())[0]
    labels = np.select([u < f[0], u < f[0] + f[1]], ["train", "val"], "test")
    out = np.empty(len(df), dtype=object)
    out[order] = labels
    return pd.Series(out, index=df.index, name="split")


# ---------------------------------------------------------------------------------------------
# metrics
# ---------------------------------------------------------------------------------------------
def regression_metrics(y_true: Iterable[float], y_pred: Iterable[float]) -> dict[str, float]:
    """R2 (original and log1p scale), MAE, MAPE (%), share within +-10 %, Spearman rho.

    Rows where either value is not finite are ignored; ``n`` counts the rest.
    """
    from scipy.stats import spearmanr
    from sklearn.metrics import mean_absolute_error, r2_score

    y = np.asarray(y_true, dtype=float)
    p = np.asarray(y_pred, dtype=float)
    m = np.isfinite(y) & np.isfinite(p)
    y, p = y[m], p[m]
    nan = float("nan")
    if len(y) < 2:
        return {
            "n": int(len(y)),
            "r2": nan,
            "r2_log": nan,
            "mae": nan,
            "mape_pct": nan,
            "within_10pct": nan,
            "spearman": nan,
        }
    rel = np.abs(p - y) / np.abs(y)
    with np.errstate(invalid="ignore"):
        return {
            "n": int(len(y)),
            "r2": float(r2_score(y, p)),
            "r2_log": float(r2_score(np.log1p(y), np.log1p(np.clip(p, 0.0, None)))),
            "mae": float(mean_absolute_error(y, p)),
            "mape_pct": float(100.0 * np.mean(rel)),
            "within_10pct": float(np.mean(rel <= 0.10)),
            "spearman": float(spearmanr(y, p).statistic),
        }


def noise_floor_cv(df: pd.DataFrame) -> float | None:
    """Median ``latency_cv`` (run-to-run coefficient of variation) or None if not measured."""
    if "latency_cv" not in df.columns:
        return None
    cv = pd.to_numeric(df["latency_cv"], errors="coerce").dropna()
    return float(cv.median()) if len(cv) else None


def metrics_table(
    truth: pd.DataFrame,
    pred: pd.DataFrame,
    model: str,
    platform: str | None = None,
    noise_cv: float | None = None,
    **extra: Any,
) -> pd.DataFrame:
    """Tidy metrics, one row per target column present in both ``truth`` and ``pred``.

    Latency rows get ``noise_floor_cv_pct`` (the median run-to-run CV in %) and
    ``mape_over_noise`` (MAPE divided by it: ~1 means errors at the measurement noise).
    """
    rows = []
    for t in pred.columns:
        if t not in truth.columns:
            continue
        row = {"model": model, "platform": platform, "target": t, **extra}
        row.update(regression_metrics(truth[t], pred[t].reindex(truth.index)))
        if t == "latency_ms" and noise_cv:
            row["noise_floor_cv_pct"] = 100.0 * noise_cv
            row["mape_over_noise"] = row["mape_pct"] / (100.0 * noise_cv)
        rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# baselines and variants
# ---------------------------------------------------------------------------------------------
def _has_values(df: pd.DataFrame, col: str) -> bool:
    return col in df.columns and pd.to_numeric(df[col], errors="coerce").notna().any()


def flops_baseline(
    train: pd.DataFrame, test: pd.DataFrame, target: str, mode: str = "loglog"
) -> pd.Series:
    """B1: linear regression of ``target`` on FLOPs alone.

    ``mode="loglog"`` fits log1p(target) on log1p(FLOPs) and returns expm1; ``"raw"`` fits the
    raw values.
    """
    from sklearn.linear_model import LinearRegression

    if mode not in ("loglog", "raw"):
        raise ValueError(f"mode must be 'loglog' or 'raw', got {mode!r}")
    tr = train[np.isfinite(pd.to_numeric(train[target], errors="coerce"))]
    x_tr = tr[["flops"]].to_numpy(float)
    x_te = test[["flops"]].to_numpy(float)
    y_tr = tr[target].to_numpy(float)
    if mode == "loglog":
        lr = LinearRegression().fit(np.log1p(x_tr), np.log1p(y_tr))
        pred = np.expm1(lr.predict(np.log1p(x_te)))
    else:
        pred = LinearRegression().fit(x_tr, y_tr).predict(x_te)
    return pd.Series(pred, index=test.index, name=target)


def latency_proxy_baseline(train: pd.DataFrame, test: pd.DataFrame) -> pd.Series:
    """B2: energy predicted from the *measured* latency by a linear fit (needs energy)."""
    from sklearn.linear_model import LinearRegression

    m = np.isfinite(pd.to_numeric(train["energy_j"], errors="coerce")) & np.isfinite(
        train["latency_ms"]
    )
    tr = train[m]
    lr = LinearRegression().fit(tr[["latency_ms"]].to_numpy(float), tr["energy_j"].to_numpy(float))
    return pd.Series(
        lr.predict(test[["latency_ms"]].to_numpy(float)), index=test.index, name="energy_j"
    )


def variant_specs(telemetry: bool, feature_set: str = "static") -> dict[str, dict[str, Any]]:
    """CARBRegressor parameter overrides of each compared variant.

    Every variant uses ``feature_set`` except the feature-set ablation, added when telemetry is
    available: ``carb_nnls_telemetry`` (if ``feature_set`` is static) or ``carb_nnls_static``.
    """
    alone = {"cascade": False, "regime_shrink": 0.0}
    specs: dict[str, dict[str, Any]] = {
        "carb_nnls": {"blend": "nnls"},
        "carb_fixed": {"blend": "fixed"},
        "blend_no_cascade": {"blend": "nnls", "cascade": False},
        "carb_no_regime": {"blend": "nnls", "regime_shrink": 0.0},
        "xgb_alone": {"learners": ("xgb",), **alone},
        "lgbm_alone": {"learners": ("lgbm",), **alone},
        "et_alone": {"learners": ("et",), **alone},
    }
    if telemetry:
        if feature_set == "static":
            specs["carb_nnls_telemetry"] = {"blend": "nnls", "feature_set": "static+telemetry"}
        else:
            specs["carb_nnls_static"] = {"blend": "nnls", "feature_set": "static"}
    return specs


def _fit_quiet(params: Mapping[str, Any], train: pd.DataFrame) -> CARBRegressor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingTargetWarning)
        warnings.filterwarnings("ignore", message=".*status is not 'ok'.*")
        return CARBRegressor(**params).fit(train)


#: Variants fitted with the main model size even when ablations use a smaller preset: the main
#: model, the blend choice (NNLS vs fixed, a headline result) and the feature-set variants
#: (their R2 is a paper claim).
MAIN_VARIANTS: tuple[str, ...] = (
    "carb_nnls",
    "carb_fixed",
    "carb_nnls_telemetry",
    "carb_nnls_static",
)


def ablation_reference_name(ablation_preset: str | None) -> str:
    """Name of the CARB-NNLS model refitted at the ablation size (``carb_nnls_<preset>``)."""
    return f"carb_nnls_{ablation_preset or 'ablation'}"


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
    params : mapping
        CARBRegressor parameters of the main model and of :data:`MAIN_VARIANTS`.
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
    targets = [t for t in params.get("targets", TARGETS) if _has_values(train, t)]
    telemetry = all(_has_values(train, c) and _has_values(test, c) for c in TELEMETRY_FEATURES)
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
    if "energy_j" in targets and _has_values(test, "energy_j"):
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
        model = _fit_quiet({**base, **({} if main else fixed), **over}, train)
        models[name] = model
        label = preset if main else ablation_preset
        tables.append(metrics_table(test, model.predict(test), name, **{**kw, "preset": label}))
    return pd.concat(tables, ignore_index=True), models


def interval_coverage(
    model: CARBRegressor, test: pd.DataFrame, coverage: float = 0.9
) -> pd.DataFrame:
    """Empirical coverage and median width (hi/lo ratio) of the conformal intervals.

    One row per target and batch regime (``all``, ``small_batch``, ``large_batch``).
    """
    iv = model.predict_interval(test, coverage=coverage)
    small = pd.to_numeric(test["batch"], errors="coerce").le(model.regime_batch_max).to_numpy()
    rows = []
    for t in model.targets_:
        y = pd.to_numeric(test[t], errors="coerce").to_numpy(float)
        lo, hi = iv[f"{t}_lo"].to_numpy(), iv[f"{t}_hi"].to_numpy()
        for regime, rows_mask in (
            ("all", np.ones(len(y), bool)),
            ("small_batch", small),
            ("large_batch", ~small),
        ):
            m = rows_mask & np.isfinite(y)
            if not m.any():
                continue
            rows.append(
                {
                    "target": t,
                    "regime": regime,
                    "nominal": coverage,
                    "coverage": float(np.mean((y[m] >= lo[m]) & (y[m] <= hi[m]))),
                    "median_hi_over_lo": float(np.median(hi[m] / np.maximum(lo[m], 1e-12))),
                    "n": int(m.sum()),
                }
            )
    return pd.DataFrame(rows)


def leave_one_batch_tier_out(
    df: pd.DataFrame,
    params: Mapping[str, Any],
    batch_max: int = 8,
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
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*no regime correction.*")
        model = _fit_quiet(params, train)
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
        model = _fit_quiet(params, train)
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


def evaluate_platform(
    df: pd.DataFrame,
    params: Mapping[str, Any],
    platform: str | None = None,
    random_state: int = 0,
    coverage: float = 0.9,
    lodo_depths: Iterable[int] | None = None,
    run_lodo: bool = True,
    progress: bool = False,
    ablation_params: Mapping[str, Any] | None = None,
    preset: str | None = None,
    ablation_preset: str | None = None,
) -> dict[str, Any]:
    """The whole evaluation of one platform's data (already :func:`prepare_dataset`-ed).

    ``params`` size the main model, the NNLS-vs-fixed blend comparison, the feature-set
    variants and leave-one-batch-tier-out; ``ablation_params`` (default: ``params``), e.g.
    :data:`carb_lib.ensemble.PRESETS` ``["fast"]``, size the learner-alone / no-cascade /
    no-regime ablations (with a CARB-NNLS reference of the same size) and the
    leave-one-depth-out fits (one per depth). ``preset`` / ``ablation_preset`` label them in
    every table's ``preset`` column.

    Returns
    -------
    dict
        ``split`` (Series), ``val_metrics`` and ``test_metrics`` (tidy, all models),
        ``blend_winner`` (decided on validation, shown with test), ``coverage``, ``lobto``,
        ``lodo``, ``model`` (the CARB-NNLS model fitted on train), ``test`` (test rows),
        ``test_pred`` (its predictions), ``models`` (every variant).
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
    test_tables = []
    for name, model in models.items():
        test_tables.append(
            metrics_table(
                test,
                model.predict(test),
                name,
                platform,
                noise_floor_cv(train),
                split="test",
                preset=preset_of.get(name),
            )
        )
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
    winner = winner.merge(test_w, on="target")
    model = models["carb_nnls"]
    out: dict[str, Any] = {
        "split": split,
        "val_metrics": val_metrics,
        "test_metrics": test_metrics,
        "blend_winner": winner,
        "coverage": interval_coverage(model, test, coverage),
        "lobto": leave_one_batch_tier_out(df, params, platform=platform, preset=preset),
        "lodo": leave_one_depth_out(
            df, ablation_params, lodo_depths, platform, progress, preset=ablation_preset
        )
        if run_lodo
        else pd.DataFrame(),
        "presets": {"main": preset, "ablation": ablation_preset},
        "model": model,
        "models": models,
        "test": test,
        "test_pred": model.predict(test),
    }
    return out


# ---------------------------------------------------------------------------------------------
# claims
# ---------------------------------------------------------------------------------------------
# merge_claims: one implementation for every notebook, carb_lib.claims.merge_claims(path,
# rows) (imported above; the argument order is (path, rows) like carb_lib.scaling's).


#: Paper-reported R2 values (reference notes; "reported", never ours), by claim id.
PAPER_R2: dict[str, tuple[str, float]] = {
    "carb_r2_peak_mem_mib": ("CARB test-set R2, peak memory", 0.997),
    "carb_r2_energy_j": ("CARB test-set R2, energy", 0.993),
    "carb_r2_latency_ms": ("CARB test-set R2, latency", 0.992),
    "b1_flops_r2_peak_mem_mib": ("B1 FLOPs-only linear regression R2, peak memory", 0.379),
    "b1_flops_r2_energy_j": ("B1 FLOPs-only linear regression R2, energy", 0.279),
    "b1_flops_r2_latency_ms": ("B1 FLOPs-only linear regression R2, latency", 0.233),
    "b2_latency_proxy_r2_energy_j": ("B2 latency as energy proxy R2", 0.993),
    "lobto_r2_peak_mem_mib": (
        "Leave-one-batch-tier-out (train batch>8, test <=8) R2, memory",
        0.956,
    ),
    "lobto_r2_energy_j": ("Leave-one-batch-tier-out R2, energy", 0.991),
    "lobto_r2_latency_ms": ("Leave-one-batch-tier-out R2, latency", 0.968),
    "static_r2_peak_mem_mib": ("CARB without telemetry features R2, memory", 0.9963),
    "static_r2_energy_j": ("CARB without telemetry features R2, energy", 0.9892),
    "static_r2_latency_ms": ("CARB without telemetry features R2, latency", 0.9904),
}


def claim_rows(
    result: Mapping[str, Any], platform: str | None, synthetic: bool = False
) -> pd.DataFrame:
    """Claim rows (:data:`CLAIM_COLUMNS`) from :func:`evaluate_platform`'s result.

    Our values are test-set R2 on the original scale (the full-model claim uses telemetry
    where available). A claim is untestable where the data lack what it needs (energy on
    CPU). With ``synthetic`` the reason says so: SYNTHETIC rows belong in
    ``claims_synthetic.csv``, never in ``claims.csv``.
    """
    test = result["test_metrics"]
    lobto = result["lobto"]
    models = set(test["model"])
    full = "carb_nnls_telemetry" if "carb_nnls_telemetry" in models else "carb_nnls"
    static = "carb_nnls_static" if "carb_nnls_static" in models else "carb_nnls"
    full_has_telemetry = full == "carb_nnls_telemetry" or static == "carb_nnls_static"

    def value(frame: pd.DataFrame, model: str, target: str) -> tuple[float | None, int | None]:
        if frame is None or frame.empty:
            return None, None
        hit = frame[(frame["model"] == model) & (frame["target"] == target)]
        return (float(hit["r2"].iloc[0]), int(hit["n"].iloc[0])) if len(hit) else (None, None)

    rows = []
    for cid, (text, paper) in PAPER_R2.items():
        target = next(t for t in TARGETS if cid.endswith(t))
        reason = "test-set R2 on the original scale; different hardware than the paper's RTX GPUs"
        if cid.startswith("carb_r2"):
            model, frame = full, test
            if not full_has_telemetry:
                reason += "; static features only (no telemetry here)"
        elif cid.startswith("b1_"):
            model, frame = "b1_flops_raw", test
        elif cid.startswith("b2_"):
            model, frame = "b2_latency_proxy", test
        elif cid.startswith("lobto"):
            model, frame = "carb_nnls", lobto
            reason = "R2 on batch<=8 rows of a model trained on batch>8"
        else:
            model, frame = static, test
            reason = "test-set R2 of CARB with static features only"
        ours, n = value(frame, model, target)
        testable = ours is not None
        if not testable:
            reason = (
                f"{target} not measured on this platform"
                if target == "energy_j"
                else "not computable on this data"
            )
        if synthetic:
            reason = "SYNTHETIC demo data, not evidence; " + reason
        rows.append(
            {
                "claim_id": cid,
                "claim": text,
                "paper_value": paper,
                "our_value": ours,
                "platform": platform,
                "n": n,
                "testable": testable,
                "reason": reason,
            }
        )
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)
