"""Cross-platform transfer: pairwise platform matrix, slope analysis and few-shot recalibration.

Unit of analysis: a *setting* = ``platform`` x ``batch`` (``"help_titanx@b256"``). Settings are
matched on the *architecture key*: every config column except ``batch`` (and ``config_id``), so
the latency of one network on the 1080 Ti at batch 256 can serve as a feature for the same
network on a phone at batch 1.

* :func:`pairwise_transfer` — a source model (LightGBM on static features, op counts and NB201
  edge codes; log target) trained on setting A and applied unchanged to setting B, against a
  setting-specific model trained and tested on a holdout split of B.
* :func:`slope_table` — OLS of log target on B vs log target on A over shared architectures:
  slope with 95 % CI, R^2, Spearman (statsmodels).
* :func:`few_shot_predict` — predict a target platform from measurements on source platforms
  plus k measured samples on the target. Source predictions for an architecture are the
  measured source values (median per setting) where the source measured it and the source
  model's prediction otherwise. Methods (``method=``):

  ``"blend"`` (default)
      the mean of the ``"ridge"`` and ``"loglinear"`` log predictions (the most accurate at
      k <= 20 on the HELP devices; ridge alone catches up from k ~ 50).
  ``"ridge"``
      ridge regression (alpha by efficient leave-one-out CV) of log target on the log source
      predictions of every source setting plus log static features, fitted to the k samples.
  ``"loglinear"``
      log-linear recalibration ``log y = a + b log s`` of the single source setting whose
      leave-one-out error on the k samples is lowest (a non-positive fitted slope falls back
      to ``b = 1``).
  ``"target_only"``
      ridge on the target's static features only (no transfer; a baseline).
  ``"flops"``
      ``log y = a + b log flops`` (the FLOPs baseline; its ranking is the FLOPs ranking).
  ``"offset"``
      one scale factor: ``log y = a + log s`` with ``a`` the median of ``log y - log s`` over
      the k samples, for the single source setting whose leave-one-out error is lowest. It keeps
      the source's ranking exactly and fits one number, so it adds the least variance at small
      k (the cross-family few-shot method, chosen on the Zen 3 rows:
      ``docs/experiments.md``).

  Log predictions are clipped to the k samples' range widened by a factor 3 either way (a
  guard against extrapolation blow-ups of the linear models at tiny k), except ``"offset"``'s
  (:data:`UNCLIPPED_METHODS`).

* :func:`few_shot_curve` — Spearman, MAPE and R^2 vs k over random draws, leaving the target
  *device* out of the sources (all its batch settings).

HELP's Table 3 (Lee et al., NeurIPS 2021; github.com/HayeonLee/HELP README) is in
:data:`HELP_TABLE3`, labelled "reported by HELP"; its test devices (Titan RTX, Xeon Gold 6226,
Pixel 2, Raspberry Pi 4, Eyeriss, FPGA) are not in the shipped data, so our numbers are the same
protocol (Spearman with 10 target samples) on the devices that are shipped.

Settings, keys and the study's loaders are in :mod:`carb_lib.transfer.data`, the comparison
with HELP and the claims rows in :mod:`carb_lib.transfer.help_benchmark`; every name is importable from
here.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

from carb_lib.core import metrics as _m
from carb_lib.core.vocab import NB201_FEATURE_COLUMNS, STATIC_FEATURES
from carb_lib.dataset.features import static_features
from carb_lib.families import family_names, get_family
from carb_lib.families._common import equals
from carb_lib.transfer.data import (  # noqa: F401  (re-exported: the old home of these names)
    ARCH_KEY_COLUMNS,
    DEFAULT_METHOD,
    KS,
    METHODS,
    SETTING,
    arch_keys,
    clean,
    load_transfer_data,
    log_target_matrix,
    primary_settings,
    representative_settings,
    setting_of,
    settings_table,
    subsample_archs,
)
from carb_lib.transfer.data import families_of as _families
from carb_lib.transfer.help_benchmark import (  # noqa: F401  (re-exported)
    HELP_TABLE3,
    claim_rows,
    heldout_choice,
    help_comparison,
    help_reported_by_kind,
    paper_transfer_claims,
    write_tables,
)

#: Numeric model features (those present are used): the static features, nb201's operation
#: counts, batch and resolution.
FEATURE_COLUMNS: tuple[str, ...] = (*STATIC_FEATURES, *NB201_FEATURE_COLUMNS, "batch",
                                    "resolution")
#: Features entered as logs in the few-shot linear models (not :data:`carb_lib.core.vocab.LOG_FEATURES`,
#: the learners' list: these models also take log batch and leave the rest out).
LINEAR_LOG_FEATURES: tuple[str, ...] = ("flops", "params", "activation_bytes", "peak_act_bytes",
                                        "batch")
#: Count features entered as they are in the few-shot linear models (nb201's op counts).
COUNT_FEATURES: tuple[str, ...] = NB201_FEATURE_COLUMNS
MIN_ROWS_MODEL = 20


# --------------------------------------------------------------------------- features, models
def model_features(df: pd.DataFrame) -> pd.DataFrame:
    """Numeric model features: static features, op counts and each family's
    ``arch_features`` (NB201: per-edge op codes), NaN in rows of other families."""
    feats = static_features(df)
    X = pd.DataFrame(index=df.index)
    for c in FEATURE_COLUMNS:
        if c in feats.columns:
            X[c] = feats[c].astype(np.float64)
        elif c in df.columns:
            X[c] = pd.to_numeric(df[c], errors="coerce").astype(np.float64)
    fams = _families(df)
    for name in family_names():  # each family's own descriptors (NB201: per-edge op codes)
        rows = equals(fams, name)
        if rows.any():
            extra = get_family(name).arch_features(df.loc[rows])
            for c in extra.columns:
                if c not in X.columns:
                    X[c] = np.nan
                X.loc[rows, c] = extra[c].astype(np.float64)
    return X


def make_source_model(n_estimators: int = 200, random_state: int = 0):
    """The fast source regressor: a small LightGBM (single thread) on the log target."""
    from lightgbm import LGBMRegressor

    return LGBMRegressor(
        n_estimators=n_estimators, learning_rate=0.08, num_leaves=31, min_child_samples=10,
        subsample=0.8, subsample_freq=1, colsample_bytree=0.9, n_jobs=1, verbose=-1,
        random_state=random_state, deterministic=True, force_row_wise=True,
    )


def metrics(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    """``spearman`` (NaN with fewer than 3 rows), ``mape_pct`` and ``r2`` (original scale) of
    predictions, from :mod:`carb_lib.core.metrics`."""
    y_true = np.asarray(y_true, dtype=np.float64)
    y_pred = np.asarray(y_pred, dtype=np.float64)
    return {
        "spearman": _m.spearman(y_true, y_pred) if len(y_true) > 2 else np.nan,
        "mape_pct": _m.mape_pct(y_true, y_pred),
        "r2": _m.r2(y_true, y_pred),
    }


# --------------------------------------------------------------------------- pairwise
def pairwise_transfer(
    df: pd.DataFrame, target: str = "latency_ms", test_frac: float = 0.2, seed: int = 0,
    n_estimators: int = 200, settings: Sequence[str] | None = None, progress: bool = False,
) -> pd.DataFrame:
    """Train on setting A, test on setting B, for every ordered pair of the same family.

    For every setting B, a seeded ``test_frac`` of its architectures is held out. Rows
    ``kind="transfer"``: the model trained on all of A's rows predicts B's held-out rows
    unchanged (different hardware, so R^2 and MAPE measure the scale gap; Spearman the ranking
    agreement). Rows ``kind="specific"`` (source == target): a model trained on B's other rows.

    Returns
    -------
    pandas.DataFrame
        ``source``, ``target``, ``kind``, ``family``, ``n_train``, ``n_test``, ``spearman``,
        ``mape_pct``, ``r2``.
    """
    from tqdm.auto import tqdm

    d = clean(df, target).copy()
    d[SETTING] = setting_of(d)
    if settings is not None:
        d = d[d[SETTING].isin(settings)]
    d["_key"] = arch_keys(d)
    d["_fam"] = _families(d)
    X = model_features(d)
    y = np.log(d[target].to_numpy(dtype=np.float64))
    rng = np.random.default_rng(seed)
    names = sorted(d[SETTING].unique())
    pos = {s: np.flatnonzero(d[SETTING].to_numpy() == s) for s in names}
    test_pos, train_pos = {}, {}
    for s in names:
        keys = d["_key"].to_numpy()[pos[s]]
        uniq = np.unique(keys)
        held = set(rng.choice(uniq, size=max(1, int(round(test_frac * len(uniq)))),
                              replace=False))
        is_test = np.array([k in held for k in keys])
        test_pos[s], train_pos[s] = pos[s][is_test], pos[s][~is_test]
    fam = {s: d["_fam"].to_numpy()[pos[s][0]] for s in names}
    rows = []
    it = tqdm(names, desc="pairwise transfer", disable=not progress)
    for a in it:
        if len(pos[a]) < MIN_ROWS_MODEL:
            continue
        model = make_source_model(n_estimators).fit(X.iloc[pos[a]], y[pos[a]])
        spec = make_source_model(n_estimators).fit(X.iloc[train_pos[a]], y[train_pos[a]])
        pred = np.exp(spec.predict(X.iloc[test_pos[a]]))
        rows.append({"source": a, "target": a, "kind": "specific", "family": fam[a],
                     "n_train": len(train_pos[a]), "n_test": len(test_pos[a]),
                     **metrics(np.exp(y[test_pos[a]]), pred)})
        for b in names:
            if b == a or fam[b] != fam[a] or len(test_pos[b]) < 3:
                continue
            pred = np.exp(model.predict(X.iloc[test_pos[b]]))
            rows.append({"source": a, "target": b, "kind": "transfer", "family": fam[a],
                         "n_train": len(pos[a]), "n_test": len(test_pos[b]),
                         **metrics(np.exp(y[test_pos[b]]), pred)})
    return pd.DataFrame(rows, columns=["source", "target", "kind", "family", "n_train",
                                       "n_test", "spearman", "mape_pct", "r2"])



# --------------------------------------------------------------------------- slopes
def slope_table(df: pd.DataFrame, target: str = "latency_ms", min_shared: int = 10) -> pd.DataFrame:
    """OLS ``log y_B = a + b log y_A`` over shared architectures, for every ordered pair.

    Returns
    -------
    pandas.DataFrame
        ``source`` (A), ``target`` (B), ``n``, ``slope``, ``slope_ci_low``, ``slope_ci_high``
        (95 %), ``intercept``, ``r2``, ``spearman``.
    """
    import statsmodels.api as sm

    M = log_target_matrix(df, target)
    rows = []
    cols = list(M.columns)
    for a in cols:
        for b in cols:
            if a == b:
                continue
            m = M[[a, b]].dropna()
            if len(m) < min_shared:
                continue
            xa, yb = m[a].to_numpy(), m[b].to_numpy()
            if np.ptp(xa) == 0:
                continue
            fit = sm.OLS(yb, sm.add_constant(xa)).fit()
            lo, hi = fit.conf_int(0.05)[1]
            rows.append({"source": a, "target": b, "n": len(m), "slope": float(fit.params[1]),
                         "slope_ci_low": float(lo), "slope_ci_high": float(hi),
                         "intercept": float(fit.params[0]), "r2": float(fit.rsquared),
                         "spearman": _m.spearman(xa, yb)})
    return pd.DataFrame(rows, columns=["source", "target", "n", "slope", "slope_ci_low",
                                       "slope_ci_high", "intercept", "r2", "spearman"])


# --------------------------------------------------------------------------- few-shot
def source_predictions(
    source_rows: pd.DataFrame, rows: pd.DataFrame, target: str = "latency_ms",
    n_estimators: int = 200, random_state: int = 0,
) -> pd.DataFrame:
    """Log ``target`` of each of ``rows``' architectures on every source setting.

    Measured (median over repeats) where the source setting measured the architecture; else
    the prediction of a source model trained on that setting (features of the row with the
    setting's batch). Settings of another family than a row give NaN for it.

    Returns
    -------
    pandas.DataFrame
        Index of ``rows``, one column per source setting.
    """
    src = clean(source_rows, target)
    if src.empty:
        raise ValueError(f"no usable source rows for {target!r} (status ok, value > 0)")
    src_set = setting_of(src).to_numpy()
    src_key = arch_keys(src).to_numpy()
    src_fam = _families(src).to_numpy()
    logy = np.log(src[target].to_numpy(dtype=np.float64))
    keys = arch_keys(rows)
    row_fam = _families(rows)
    out = {}
    for s in sorted(set(src_set)):
        m = src_set == s
        med = pd.Series(logy[m]).groupby(src_key[m]).median()
        col = keys.map(med).astype(np.float64)
        miss = col.isna() & row_fam.eq(src_fam[m][0])
        if miss.any() and m.sum() >= MIN_ROWS_MODEL:
            sub = src.loc[m]
            model = make_source_model(n_estimators, random_state).fit(
                model_features(sub), logy[m])
            q = rows.loc[miss].copy()
            q["batch"] = int(sub["batch"].iloc[0])
            col.loc[miss] = model.predict(model_features(q))
        out[s] = col.to_numpy()
    return pd.DataFrame(out, index=rows.index)


def _linear_features(F: pd.DataFrame) -> pd.DataFrame:
    X = pd.DataFrame(index=F.index)
    for c in LINEAR_LOG_FEATURES:
        if c in F.columns:
            X[f"log_{c}"] = np.log(F[c].clip(lower=1e-12))
    for c in COUNT_FEATURES:
        if c in F.columns:
            X[c] = F[c]
    return X


def _ridge(Xs: np.ndarray, y: np.ndarray, Xq: np.ndarray) -> np.ndarray:
    from sklearn.linear_model import RidgeCV

    # a feature missing on every source row has no mean (NaN, no warning): dropped below
    mu = np.full(Xs.shape[1], np.nan)
    seen = ~np.isnan(Xs).all(axis=0)
    mu[seen] = np.nanmean(Xs[:, seen], axis=0)
    keep = np.isfinite(mu)
    Xs, Xq, mu = Xs[:, keep], Xq[:, keep], mu[keep]
    Xs = np.where(np.isnan(Xs), mu, Xs)
    Xq = np.where(np.isnan(Xq), mu, Xq)
    sd = Xs.std(axis=0)
    sd[sd == 0] = 1.0
    Zs, Zq = (Xs - mu) / sd, (Xq - mu) / sd
    model = RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(Zs, y)
    return model.predict(Zq)


def _best_single_source(S: np.ndarray, y: np.ndarray, Sq: np.ndarray, fit) -> np.ndarray:
    """``a + b * Sq[:, j]`` for the source column ``j`` whose leave-one-out error is lowest.

    ``fit(s, y)`` returns ``(a, b, loo_residuals)`` for one column; columns with a non-finite
    value in the samples or the query rows are skipped.
    """
    best, best_err = None, np.inf
    for j in range(S.shape[1]):
        s = S[:, j]
        if not np.all(np.isfinite(s)) or not np.all(np.isfinite(Sq[:, j])):
            continue
        a, b, res = fit(s, y)
        err = float(np.mean(res**2))
        if err < best_err:
            best, best_err = (j, a, b), err
    if best is None:
        raise ValueError("no source setting covers every sample and query row")
    j, a, b = best
    return a + b * Sq[:, j]


def _fit_loglinear(s: np.ndarray, y: np.ndarray):
    k = len(y)
    if k >= 3 and np.ptp(s) > 0:
        A = np.c_[np.ones(k), s]
        coef, *_ = np.linalg.lstsq(A, y, rcond=None)
        H = A @ np.linalg.pinv(A.T @ A) @ A.T
        res = (y - A @ coef) / np.clip(1 - np.diag(H), 1e-6, None)
        if coef[1] > 0:
            return coef[0], coef[1], res
    a = np.mean(y - s)
    return a, 1.0, y - s - a


def _fit_offset(s: np.ndarray, y: np.ndarray):
    d = y - s
    loo = np.array([np.median(np.delete(d, i)) for i in range(len(d))])
    return float(np.median(d)), 1.0, d - loo


def _loglinear(S: np.ndarray, y: np.ndarray, Sq: np.ndarray) -> np.ndarray:
    """Best single source by leave-one-out error of ``y = a + b s``.

    The offset-only model ``y = a + s`` is used when k < 3 or the fitted slope is not positive
    (latency cannot fall as the source latency or the FLOPs grow).
    """
    return _best_single_source(S, y, Sq, _fit_loglinear)


def _offset(S: np.ndarray, y: np.ndarray, Sq: np.ndarray) -> np.ndarray:
    """Best single source by leave-one-out error of ``y = a + s``, ``a`` the median of ``y - s``.

    The median keeps one disturbed sample from moving the scale of every prediction; the
    leave-one-out error compares sources on the samples each one did not see.
    """
    return _best_single_source(S, y, Sq, _fit_offset)


#: Methods that recalibrate source predictions (the others use the k samples alone).
SOURCE_METHODS: tuple[str, ...] = ("blend", "ridge", "loglinear", "offset")
#: Log predictions are clipped to the samples' range widened by this (log 3: a factor 3).
CLIP_LOG_MARGIN = float(np.log(3.0))
#: Methods whose predictions are not clipped: a shift of the source cannot blow up, and a
#: clip would cut every query row beyond the k samples' range (a 10-row sample of a family
#: rarely spans its largest networks).
UNCLIPPED_METHODS: tuple[str, ...] = ("offset",)


def _fit_predict(method: str, S_s, F_s, y_s, S_q, F_q) -> np.ndarray:
    """Log predictions for the query rows, clipped to the samples' range +- a factor 3
    (except :data:`UNCLIPPED_METHODS`)."""
    pred = _fit_predict_raw(method, S_s, F_s, y_s, S_q, F_q)
    if method in UNCLIPPED_METHODS:
        return pred
    return np.clip(pred, y_s.min() - CLIP_LOG_MARGIN, y_s.max() + CLIP_LOG_MARGIN)


def _fit_predict_raw(method: str, S_s, F_s, y_s, S_q, F_q) -> np.ndarray:
    """Log predictions for the query rows (S: source log predictions, F: static features)."""
    if method == "blend":
        return 0.5 * (_fit_predict_raw("ridge", S_s, F_s, y_s, S_q, F_q)
                      + _fit_predict_raw("loglinear", S_s, F_s, y_s, S_q, F_q))
    if method == "ridge":
        L_s, L_q = _linear_features(F_s), _linear_features(F_q)
        return _ridge(np.c_[S_s, L_s.to_numpy()], y_s, np.c_[S_q, L_q.to_numpy()])
    if method == "loglinear":
        return _loglinear(S_s, y_s, S_q)
    if method == "offset":
        return _offset(S_s, y_s, S_q)
    if method == "target_only":
        return _ridge(_linear_features(F_s).to_numpy(), y_s, _linear_features(F_q).to_numpy())
    if method == "flops":
        a = np.log(F_s["flops"].to_numpy())[:, None]
        q = np.log(F_q["flops"].to_numpy())[:, None]
        return _loglinear(a, y_s, q)
    raise ValueError(f"method={method!r} is unknown; valid: {list(METHODS)}")


def recalibrate(
    method: str, source_log_samples: np.ndarray, features_samples: pd.DataFrame,
    log_y_samples: np.ndarray, source_log_query: np.ndarray, features_query: pd.DataFrame,
) -> np.ndarray:
    """The few-shot step alone: log predictions for query rows from k measured samples.

    :func:`few_shot_predict` with the source predictions given, so other sources than a
    platform (e.g. a model of other network families, :mod:`carb_lib.evaluation.cross_family`)
    are recalibrated the same way.

    Parameters
    ----------
    method : {"blend", "ridge", "loglinear", "target_only", "flops", "offset"}
    source_log_samples, source_log_query : ndarray of shape (k, n_sources), (q, n_sources)
        Log source predictions of the samples and of the query rows.
    features_samples, features_query : pandas.DataFrame
        :func:`model_features` of the samples and of the query rows.
    log_y_samples : ndarray of shape (k,)
        Log measured target of the samples (k >= 2).

    Returns
    -------
    numpy.ndarray
        Log predictions of the query rows, clipped to the samples' range +- a factor 3
        (``offset`` is not clipped: :data:`UNCLIPPED_METHODS`).
    """
    if len(log_y_samples) < 2:  # an unknown method is refused by _fit_predict_raw
        raise ValueError(f"need at least 2 samples, got {len(log_y_samples)}")
    S_s = np.asarray(source_log_samples, dtype=np.float64).reshape(len(log_y_samples), -1)
    S_q = np.asarray(source_log_query, dtype=np.float64).reshape(len(features_query), -1)
    return _fit_predict(method, S_s, features_samples, np.asarray(log_y_samples, np.float64),
                        S_q, features_query)


def few_shot_predict(
    source_rows: pd.DataFrame, target_samples: pd.DataFrame, query_rows: pd.DataFrame,
    target: str = "latency_ms", method: str = DEFAULT_METHOD, exclude_target_platform: bool = True,
    n_estimators: int = 200,
) -> np.ndarray:
    """Predict ``target`` on a new platform from source measurements and k target samples.

    Parameters
    ----------
    source_rows : pandas.DataFrame
        Measurements on source platforms (config columns, ``platform``, ``batch``, target).
    target_samples : pandas.DataFrame
        k >= 2 measured rows on the target platform (one ``platform``).
    query_rows : pandas.DataFrame
        Configs to predict on the target platform (config columns; ``batch`` defaults to the
        samples' batch if missing).
    target : str
        Target column, e.g. ``"latency_ms"`` or ``"energy_j"``.
    method : {"blend", "ridge", "loglinear", "target_only", "flops", "offset"}
        See the module docstring; ``"blend"`` by default.
    exclude_target_platform : bool
        Drop source rows of the target's platform (the target is "unseen" apart from its
        samples).

    Returns
    -------
    numpy.ndarray
        Predictions in the target's unit, aligned with ``query_rows`` (shape ``(len(query_rows),)``).

    Raises
    ------
    ValueError
        For an unknown method, fewer than 2 usable samples, several target platforms, or no
        usable source rows.
    """
    if method not in METHODS:
        raise ValueError(f"method={method!r} is unknown; valid: {list(METHODS)}")
    samples = clean(target_samples, target)
    if len(samples) < 2:
        raise ValueError(f"need at least 2 usable target samples of {target!r}, got "
                         f"{len(samples)}")
    plats = samples["platform"].unique() if "platform" in samples.columns else []
    if len(plats) > 1:
        raise ValueError(f"target_samples span several platforms {sorted(plats)}; give one")
    query = query_rows.copy()
    if "batch" not in query.columns:
        query["batch"] = int(samples["batch"].iloc[0])
    if "family" not in query.columns and "family" in samples.columns:
        query["family"] = samples["family"].iloc[0]
    src = source_rows
    if exclude_target_platform and len(plats) == 1:
        src = src[src["platform"] != plats[0]]
    y_s = np.log(samples[target].to_numpy(dtype=np.float64))
    both = pd.concat([samples, query], ignore_index=True)
    F = model_features(both)
    need_sources = method in SOURCE_METHODS
    if need_sources:
        S = source_predictions(src, both, target, n_estimators=n_estimators).to_numpy()
    else:
        S = np.zeros((len(both), 0))
    k = len(samples)
    pred = _fit_predict(method, S[:k], F.iloc[:k], y_s, S[k:], F.iloc[k:])
    return np.exp(pred)


def few_shot_curve(
    df: pd.DataFrame, targets: Sequence[str] | None = None, ks: Sequence[int] = KS,
    n_draws: int = 10, methods: Sequence[str] = METHODS, target: str = "latency_ms",
    seed: int = 0, max_query: int | None = None, n_estimators: int = 200,
    progress: bool = False,
) -> pd.DataFrame:
    """Few-shot accuracy vs k: for each target setting, sources = every other platform.

    For each target setting, k architectures are drawn at random (``n_draws`` times, seeded);
    the rest of the setting (or a fixed random ``max_query`` of it) is predicted.

    Returns
    -------
    pandas.DataFrame
        ``target``, ``platform``, ``device_kind``, ``method``, ``k``, ``draw``, ``n_query``,
        ``spearman``, ``mape_pct``, ``r2``.
    """
    from tqdm.auto import tqdm

    d = clean(df, target).reset_index(drop=True)
    d[SETTING] = setting_of(d)
    d["_key"] = arch_keys(d)
    fams = _families(d)
    info = settings_table(d, target).set_index(SETTING)
    names = sorted(d[SETTING].unique()) if targets is None else list(targets)
    M = log_target_matrix(d, target)
    F_all = model_features(d)
    rows = []
    for t in tqdm(names, desc="few-shot targets", disable=not progress):
        pos = np.flatnonzero(d[SETTING].to_numpy() == t)
        tgt = d.iloc[pos]
        plat, fam = info.at[t, "platform"], info.at[t, "family"]
        src_sets = [s for s in M.columns
                    if info.at[s, "platform"] != plat and info.at[s, "family"] == fam]
        if not src_sets or len(tgt) < max(ks) + 3:
            continue
        S = M.loc[tgt["_key"], src_sets].to_numpy()
        if np.isnan(S).any():  # some architectures not measured on a source: use its model
            src = d[(d["platform"] != plat) & (fams == fam)]
            S = source_predictions(src, tgt, target, n_estimators=n_estimators)[
                src_sets].to_numpy()
        F = F_all.iloc[pos].reset_index(drop=True)
        y = np.log(tgt[target].to_numpy(dtype=np.float64))
        rng = np.random.default_rng([seed, zlib.crc32(t.encode())])
        for draw in range(n_draws):
            perm = rng.permutation(len(tgt))
            for k in ks:
                s_idx = perm[:k]
                q_idx = perm[k:] if max_query is None else perm[k:k + max_query]
                for method in methods:
                    p = _fit_predict(method, S[s_idx], F.iloc[s_idx], y[s_idx], S[q_idx],
                                     F.iloc[q_idx])
                    rows.append({"target": t, "platform": plat,
                                 "device_kind": info.at[t, "device_kind"], "method": method,
                                 "k": int(k), "draw": draw, "n_query": len(q_idx),
                                 **metrics(np.exp(y[q_idx]), np.exp(p))})
    return pd.DataFrame(rows, columns=["target", "platform", "device_kind", "method", "k",
                                       "draw", "n_query", "spearman", "mape_pct", "r2"])


def summarise_curve(curve: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over draws per (target, method, k)."""
    g = curve.groupby(["target", "platform", "device_kind", "method", "k"], sort=True)
    out = g[["spearman", "mape_pct", "r2"]].agg(["mean", "std"])
    out.columns = [f"{a}_{b}" for a, b in out.columns]
    out["n_draws"] = g.size()
    return out.reset_index()



__all__ = [
    "HELP_TABLE3", "METHODS", "DEFAULT_METHOD", "KS", "setting_of", "arch_keys", "clean",
    "model_features", "make_source_model", "metrics", "settings_table", "pairwise_transfer",
    "log_target_matrix", "slope_table", "source_predictions", "few_shot_predict", "recalibrate",
    "few_shot_curve", "summarise_curve", "primary_settings", "heldout_choice", "help_comparison",
    "help_reported_by_kind",
    "load_transfer_data", "subsample_archs", "representative_settings", "claim_rows",
    "write_tables",
]
