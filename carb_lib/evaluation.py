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
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.claims import CLAIM_COLUMNS, merge_claims
from carb_lib.ensemble import (
    PRESETS,
    STATIC_FEATURES,
    TARGETS,
    TELEMETRY_FEATURES,
    CARBRegressor,
    MissingTargetWarning,
)

__all__ = [
    "ABLATION_VARIANTS",
    "EXTRAPOLATION_KINDS",
    "ProtocolResult",
    "architecture_key",
    "choose_default",
    "compare_presets",
    "evaluate_protocol",
    "extrapolation_splits",
    "grouped_split",
    "protocol_claim_rows",
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
QUICK_PARAMS: dict[str, Any] = dict(PRESETS["quick"])  # one place: carb_lib.ensemble.PRESETS


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


# ---------------------------------------------------------------------------------------------
# the evaluation protocol (issue 14): seeds, grouped and extrapolation splits, ablation,
# conformal coverage per regime, base-law constants
# ---------------------------------------------------------------------------------------------
#: Architecture columns: rows sharing them are one architecture (grouped split).
ARCH_COLUMNS: tuple[str, ...] = ("family", "block", "depth", "width", "early_downsample", "arch")
#: Extrapolation splits: ``batch_small`` trains on batch > 8 and tests batch <= 8;
#: ``batch_large`` trains on batch < 64 and tests batch >= 64; ``depth`` / ``width`` /
#: ``resolution`` hold out each value in turn (ResNet rows).
EXTRAPOLATION_KINDS: tuple[str, ...] = ("batch_small", "batch_large", "depth", "width",
                                        "resolution")
#: Ablation variants: overrides of the evaluated parameters. ``carb`` is the model itself.
ABLATION_VARIANTS: dict[str, dict[str, Any]] = {
    "carb": {},
    "base_only": {"learners": (), "regime_shrink": 0.0},
    "xgb_alone": {"learners": ("xgb",), "cascade": False, "regime_shrink": 0.0},
    "lgbm_alone": {"learners": ("lgbm",), "cascade": False, "regime_shrink": 0.0},
    "et_alone": {"learners": ("et",), "cascade": False, "regime_shrink": 0.0},
    "blend_no_cascade": {"cascade": False},
    "no_corrector": {"regime_shrink": 0.0},
    "no_base": {"base": False},
    "three_learners": {"learners": ("xgb", "lgbm", "et")},
}
_METRIC_COLS = ("n", "r2", "r2_log", "mae", "mape_pct", "within_10pct", "spearman")


def architecture_key(df: pd.DataFrame) -> pd.Series:
    """One string per architecture (the config without resolution, batch and precision)."""
    parts = [df[c].astype(object).fillna("-").astype(str) for c in ARCH_COLUMNS
             if c in df.columns]
    key = parts[0]
    for p in parts[1:]:
        key = key + "|" + p
    return key.rename("arch_key")


def grouped_split(
    df: pd.DataFrame, fractions: Sequence[float] = (0.7, 0.15, 0.15), random_state: int = 0
) -> pd.Series:
    """``train``/``val``/``test`` by architecture: no architecture is in two parts.

    Architectures are shuffled and laid end to end; a row's part is set by where its
    architecture's cumulative row share falls (so parts are close to ``fractions`` in rows).
    """
    f = np.asarray(fractions, dtype=float)
    if len(f) != 3 or (f < 0).any() or not np.isclose(f.sum(), 1.0):
        raise ValueError(
            f"fractions must be three non-negative numbers summing to 1, got {fractions!r}"
        )
    key = architecture_key(df)
    counts = key.value_counts(sort=False)
    rng = np.random.default_rng(random_state)
    order = counts.index[rng.permutation(len(counts))]
    sizes = counts[order].to_numpy(dtype=float)
    mid = (np.cumsum(sizes) - sizes / 2) / sizes.sum()  # centre of each group's row span
    part = np.select([mid < f[0], mid < f[0] + f[1]], ["train", "val"], "test")
    mapping = dict(zip(order, part, strict=True))
    return pd.Series(key.map(mapping).to_numpy(), index=df.index, name="split")


def extrapolation_splits(
    df: pd.DataFrame,
    kinds: Iterable[str] = EXTRAPOLATION_KINDS,
    batch_small_max: int = 8,
    batch_large_min: int = 64,
    values: Mapping[str, Iterable[Any]] | None = None,
) -> list[tuple[str, Any, np.ndarray]]:
    """``(kind, held_out, test_mask)`` of each extrapolation split (train: ``~test_mask``).

    ``values`` restricts the held-out values of ``depth``/``width``/``resolution`` (quick runs).
    Splits with an empty side are left out.
    """
    kinds = list(kinds)
    unknown = sorted(set(kinds) - set(EXTRAPOLATION_KINDS))
    if unknown:
        raise ValueError(f"unknown extrapolation kind(s) {unknown}; known {EXTRAPOLATION_KINDS}")
    values = dict(values or {})
    b = pd.to_numeric(df["batch"], errors="coerce").to_numpy(dtype=float)
    out: list[tuple[str, Any, np.ndarray]] = []
    for kind in kinds:
        if kind == "batch_small":
            out.append((kind, f"batch<={batch_small_max}", b <= batch_small_max))
        elif kind == "batch_large":
            out.append((kind, f"batch>={batch_large_min}", b >= batch_large_min))
        else:
            col = pd.to_numeric(df[kind], errors="coerce").to_numpy(dtype=float)
            vals = values.get(kind)
            vals = sorted(np.unique(col[np.isfinite(col)])) if vals is None else list(vals)
            for v in vals:
                out.append((kind, float(v) if kind == "width" else int(v), col == v))
    return [(k, h, m) for k, h, m in out if m.any() and (~m).any()]


def _fit_variant(params: Mapping[str, Any], train: pd.DataFrame) -> CARBRegressor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingTargetWarning)
        warnings.filterwarnings("ignore", message=".*status is not 'ok'.*")
        warnings.filterwarnings("ignore", message=".*no regime correction.*")
        warnings.filterwarnings("ignore", message=".*calibration fold.*")
        return CARBRegressor(**params).fit(train)


def _metric_rows(truth: pd.DataFrame, pred: pd.DataFrame, targets: Sequence[str],
                 **labels: Any) -> list[dict[str, Any]]:
    rows = []
    subsets = {"all": np.ones(len(truth), bool)}
    if "quality" in truth.columns:  # re-measured data: also the clean rows alone
        subsets["clean"] = (truth["quality"].astype(str) == "clean").to_numpy()
    for t in targets:
        if t not in pred.columns or t not in truth.columns:
            continue
        y = pd.to_numeric(truth[t], errors="coerce").to_numpy(dtype=float)
        p = pred[t].reindex(truth.index).to_numpy(dtype=float)
        for name, m in subsets.items():
            if m.sum() < 2:
                continue
            rows.append({**labels, "target": t, "subset": name,
                         **regression_metrics(y[m], p[m])})
    return rows


def _coverage_rows(model: CARBRegressor, test: pd.DataFrame, coverage: float,
                   **labels: Any) -> list[dict[str, Any]]:
    """Coverage and width per target and batch regime (``all``, ``small_batch``...)."""
    iv = model.predict_interval(test, coverage=coverage)
    small = pd.to_numeric(test["batch"], errors="coerce").le(model.regime_batch_max).to_numpy()
    extrap = iv["extrapolated"].to_numpy(dtype=bool)
    rows = []
    for t in model.targets_:
        y = pd.to_numeric(test[t], errors="coerce").to_numpy(float)
        lo, hi = iv[f"{t}_lo"].to_numpy(), iv[f"{t}_hi"].to_numpy()
        for regime, mask in (("all", np.ones(len(y), bool)), ("small_batch", small),
                             ("large_batch", ~small)):
            m = mask & np.isfinite(y)
            if not m.any():
                continue
            rows.append({
                **labels,
                "target": t,
                "regime": regime,
                "nominal": coverage,
                "coverage": float(np.mean((y[m] >= lo[m]) & (y[m] <= hi[m]))),
                "median_hi_over_lo": float(np.median(hi[m] / np.maximum(lo[m], 1e-12))),
                "n": int(m.sum()),
                "share_extrapolated": float(extrap[m].mean()),
            })
    return rows


def _mean_sd(frame: pd.DataFrame, by: list[str], cols: Sequence[str]) -> pd.DataFrame:
    """Mean, sd and number of runs of ``cols`` per group (sd NaN for one run)."""
    g = frame.groupby(by, dropna=False, sort=False)[list(cols)]
    mean = g.mean().add_suffix("_mean")
    sd = g.std(ddof=1).add_suffix("_sd")
    runs = g.size().rename("runs")
    return pd.concat([mean, sd, runs], axis=1).reset_index()


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
        return _mean_sd(r, ["kind", "part", "model", "target"], _METRIC_COLS[1:])

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
        return _mean_sd(c, ["kind", "target", "regime", "nominal"],
                        ["coverage", "median_hi_over_lo", "n"])

    def write(self, out_dir, suffix: str = "") -> dict[str, Any]:
        """Write every table as CSV to ``out_dir``; returns {name: path}."""
        from pathlib import Path

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
    extrapolation_variants: Sequence[str] = ("carb", "no_base"),
    extrapolation_values: Mapping[str, Iterable[Any]] | None = None,
    coverage: float = 0.9,
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
    from carb_lib.base_models import fit_base_law

    variants = dict(ABLATION_VARIANTS if variants is None else variants)
    if "carb" not in variants:
        variants = {"carb": {}, **variants}
    params = {**params, "coverage": float(coverage)}
    targets = [t for t in params.get("targets", TARGETS) if _has_values(df, t)]
    if not targets:
        raise ValueError(f"none of the targets {list(params.get('targets', TARGETS))} has values")
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
            runs += _metric_rows(rows, b1(train, rows), targets, **labels, part=part,
                                 model="b1_flops")
        for name in names:
            p = {**params, **variants[name]}
            if "random_state" not in params and seed is not None:
                p["random_state"] = int(seed)
            model = _fit_variant(p, train)
            for part, rows in parts.items():
                runs += _metric_rows(rows, model.predict(rows), model.targets_, **labels,
                                     part=part, model=name)
            if name == "carb":
                cov += _coverage_rows(model, parts["test"], coverage, **labels)
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
    coverage: float = 0.9,
) -> pd.DataFrame:
    """Test metrics of several parameter sets on the same random splits (mean ± sd over seeds).

    Used to check that the screening default stays within 10 % (relative MAPE) of the largest
    preset. Returns one row per preset and target with ``mape_pct_mean``/``_sd`` etc. and the
    fit time in seconds.
    """
    import time

    rows = []
    for seed in seeds:
        split = stratified_split(df, random_state=int(seed))
        train, test = df[split == "train"], df[split == "test"]
        for name, p in presets.items():
            t0 = time.perf_counter()
            model = _fit_variant({**p, "coverage": coverage, "random_state": int(seed)}, train)
            fit_s = time.perf_counter() - t0
            for r in _metric_rows(test, model.predict(test), model.targets_, preset=name,
                                  seed=seed):
                if r["subset"] == "all":
                    rows.append({**r, "fit_s": fit_s})
    runs = pd.DataFrame(rows)
    return _mean_sd(runs, ["preset", "target"], ["r2", "mape_pct", "within_10pct", "fit_s"])


def protocol_claim_rows(
    result: ProtocolResult, platform: str | None, synthetic: bool = False
) -> pd.DataFrame:
    """Claim rows (:data:`CLAIM_COLUMNS`) from a protocol result (means over seeds).

    CARB R² = the random split's test R² of ``carb`` (mean over seeds); B1 = the FLOPs-only
    baseline (log-log); leave-one-batch-tier-out = the ``batch_small`` extrapolation split.
    """
    s = result.ablation("test")
    test = pd.DataFrame({
        "model": s["model"].replace({"carb": "carb_nnls", "b1_flops": "b1_flops_raw"}),
        "target": s["target"],
        "r2": s["r2_mean"],
        "n": s["runs"],
    })
    ex = result.extrapolation()
    lobto = ex[(ex["kind"] == "batch_small") & (ex["model"] == "carb")] if len(ex) else ex
    lobto = lobto.assign(model="carb_nnls") if len(lobto) else pd.DataFrame()
    rows = claim_rows({"test_metrics": test, "lobto": lobto}, platform, synthetic=synthetic)
    b1 = rows["claim_id"].str.startswith("b1_")
    rows.loc[b1, "reason"] = rows.loc[b1, "reason"].str.replace(
        "test-set R2", "test-set R2 (log-log FLOPs fit)", regex=False)
    return rows
