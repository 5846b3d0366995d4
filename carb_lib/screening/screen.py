"""The two-stage screening: candidates, model checks, stage 1 (budgets on conformal upper
bounds), stage 2 (Pareto front and shortlist) and the cross-platform ranking.

See :mod:`carb_lib.screening` for the workflow.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.tables import read_table
from carb_lib.core.vocab import DEFAULT_COVERAGE, TARGETS, TELEMETRY_FEATURES
from carb_lib.dataset import features
from carb_lib.dataset.schema import SchemaError, check_costs
from carb_lib.families import space
from carb_lib.families.space import SAMPLED_SPACES, add_config_ids
from carb_lib.screening.budgets import BUDGET_METRICS, QUALITY_PROXY, DeploymentSpec
from carb_lib.screening.pareto import (
    crowding_distance,
    knee_distance,
    pareto_front,
    pareto_ranks,
)
from carb_lib.screening.result import ScreeningResult, tightest_budget

__all__ = ["TELEMETRY_COLUMNS", "check_model", "load_candidates", "prepare_candidates", "screen"]

logger = logging.getLogger("carb.screening")
#: Runtime telemetry columns: a model that needs them cannot screen unmeasured candidates.
TELEMETRY_COLUMNS: tuple[str, ...] = TELEMETRY_FEATURES


# ============================================================================ model checks
def _model_targets(model: Any) -> list[str]:
    t = getattr(model, "targets_", None)
    if t is None:
        raise ValueError(
            f"{type(model).__name__} has no targets_: screen with a fitted model "
            "(predict_interval, targets_, platform_, feature_set)"
        )
    return list(t)


def check_model(model: Any, spec: DeploymentSpec, platform: str | None = None,
                role: str = "model") -> None:
    """Raise ValueError if ``model`` cannot serve ``spec`` (platform, feature set, targets)."""
    if not callable(getattr(model, "predict_interval", None)):
        raise ValueError(f"{role} ({type(model).__name__}) has no predict_interval(df, coverage)")
    targets = _model_targets(model)
    mplat = getattr(model, "platform_", None)
    want = platform if platform is not None else spec.platform
    if want is not None and mplat is not None and str(mplat) != str(want):
        raise ValueError(
            f"{role} was trained for platform {mplat!r}, but the deployment is on {want!r}: "
            f"train or load a model for {want!r}"
        )
    fs = getattr(model, "feature_set", None)
    if spec.feature_set is not None and fs is not None and str(fs) != str(spec.feature_set):
        raise ValueError(
            f"{role} uses feature set {fs!r}, the deployment spec expects {spec.feature_set!r}"
        )
    names = getattr(model, "feature_names_in_", None)
    needs_tel = [str(c) for c in (() if names is None else list(names))
                 if str(c) in TELEMETRY_COLUMNS]
    if needs_tel or (isinstance(fs, str) and "telemetry" in fs.lower()):
        raise ValueError(
            f"{role} uses runtime telemetry (feature set {fs!r}; columns {needs_tel}): screening "
            "predicts unmeasured candidates from static features only; use a model trained "
            "with a static feature set"
        )
    del targets


def _missing_targets(model: Any, needed: Iterable[str]) -> list[str]:
    t = set(_model_targets(model))
    return [x for x in needed if x not in t]


# ============================================================================ prediction
def prepare_candidates(candidates: pd.DataFrame) -> pd.DataFrame:
    """Candidates with static features (computed when missing) and a ``config_id`` column.

    Raises
    ------
    ValueError
        If ``candidates`` is empty or not a DataFrame.
    """
    if not isinstance(candidates, pd.DataFrame):
        raise ValueError(f"candidates must be a DataFrame, got {type(candidates).__name__}")
    if len(candidates) == 0:
        raise ValueError("the candidate set is empty: nothing to screen")
    df = candidates
    needed = ("flops", "params", "activation_bytes", "peak_act_bytes")
    if not all(c in df.columns for c in needed):
        if hasattr(features, "with_static_features"):
            df = features.with_static_features(df)
        else:  # pragma: no cover - older contract
            feats = features.static_features(df)
            df = pd.concat([df.drop(columns=feats.columns, errors="ignore"), feats], axis=1)
    if "config_id" not in df.columns:
        if all(c in df.columns for c in ("family", "batch")):
            df = add_config_ids(df)
        else:
            df = df.assign(config_id=[f"row{i}" for i in range(len(df))])
    return df.reset_index(drop=True)


def _predict_interval(model: Any, df: pd.DataFrame, coverage: float, role: str) -> pd.DataFrame:
    try:
        pred = model.predict_interval(df, coverage=coverage)
    except KeyError as exc:
        raise ValueError(
            f"{role} needs column {exc} which the candidates lack (after static features); "
            f"model feature set {getattr(model, 'feature_set', None)!r}"
        ) from exc
    pred = pd.DataFrame(pred)
    if len(pred) != len(df):
        raise ValueError(f"{role}.predict_interval returned {len(pred)} rows for {len(df)}")
    return pred.reset_index(drop=True)


def _predict_point(model: Any, df: pd.DataFrame, targets: list[str], role: str) -> pd.DataFrame:
    if callable(getattr(model, "predict", None)):
        try:
            p = pd.DataFrame(model.predict(df)).reset_index(drop=True)
            if all(t in p.columns for t in targets):
                return p
        except KeyError as exc:
            raise ValueError(f"{role} needs column {exc} which the candidates lack") from exc
    return _predict_interval(model, df, DEFAULT_COVERAGE, role)


def _metric_values(pred: pd.DataFrame, batch: np.ndarray | None, metric: str, which: str
                   ) -> np.ndarray:
    """Predicted ``metric`` (``which`` in '', '_lo', '_hi'), per-sample divided by batch."""
    target = metric.removesuffix("_per_sample")
    v = pred[f"{target}{which}"].to_numpy(dtype=float)
    if metric.endswith("_per_sample"):
        if batch is None:
            raise ValueError(f"{metric} needs a 'batch' column in the candidates")
        v = v / batch
    return v



# ============================================================================ screening
def _objective_matrix(table: pd.DataFrame, spec: DeploymentSpec, which: str) -> np.ndarray:
    cols = []
    for o in spec.objectives:
        name = o.column
        if o.predicted and which == "_hi":
            name = f"{o.column}_hi"
        cols.append(table[name].to_numpy(dtype=float))
    return np.column_stack(cols)


def screen(
    model: Any,
    candidates: pd.DataFrame,
    spec: DeploymentSpec,
    model_a: Any | None = None,
    top_n: int | None = None,
    rank_by: str | None = None,
) -> ScreeningResult:
    """Screen ``candidates`` for the deployment ``spec``.

    Parameters
    ----------
    model : estimator
        Predictor for the deployment platform (platform B in the cross-platform variant).
    candidates : pandas.DataFrame
        Config rows (static features are computed if missing).
    spec : DeploymentSpec
    model_a : estimator, optional
        Cross-platform variant: first rank every candidate with this model (platform A) by
        ``rank_by`` and keep the ``top_n`` best, then rescore them with ``model``.
    top_n : int, optional
        Candidates kept by the A-ranking (required with ``model_a``).
    rank_by : str, optional
        Metric of the A-ranking, ascending (default: the first cost objective, or the first
        budget's metric). ``"pareto"``: by non-dominated rank on the objectives, then crowding.

    Returns
    -------
    ScreeningResult

    Raises
    ------
    ValueError
        Empty candidates, an objective naming no column, a model for another platform or
        feature set, a model lacking a target the spec needs.
    """
    timings: dict[str, float] = {}
    platform, notes = _check_screening(model, spec)
    t0 = time.perf_counter()
    df = prepare_candidates(candidates)
    timings["features"] = time.perf_counter() - t0
    n_candidates = len(df)
    _check_objective_columns(df, spec)

    platform_a = None
    if model_a is not None:
        if top_n is None or int(top_n) < 1:
            raise ValueError(f"top_n must be a positive integer with model_a, got {top_n!r}")
        platform_a = getattr(model_a, "platform_", None)
        check_model(model_a, spec, platform=platform_a, role="model_a")
        fa, fb = getattr(model_a, "feature_set", None), getattr(model, "feature_set", None)
        if fa is not None and fb is not None and fa != fb:
            notes.append(f"model A feature set {fa!r} differs from model B's {fb!r}")
        t0 = time.perf_counter()
        df = _cross_platform_rank(model_a, df, spec, int(top_n), rank_by)
        timings["rank_a"] = time.perf_counter() - t0
        notes.append(
            f"cross-platform: ranked {n_candidates:,} candidates with the {platform_a!r} model "
            f"by {rank_by or _default_rank_by(spec)!r}, kept the top {len(df):,}, rescored "
            f"with the {platform!r} model"
        )
    n_after_a = len(df)

    t0 = time.perf_counter()
    pred = _predict_interval(model, df, spec.coverage, "model")
    timings["predict"] = time.perf_counter() - t0
    if "extrapolated" in pred.columns and pred["extrapolated"].any():
        notes.append(_extrapolated_note(int(pred["extrapolated"].sum()), len(pred)))

    t0 = time.perf_counter()
    table, report, within = _stage1(df, pred, spec)
    timings["stage1_budgets"] = time.perf_counter() - t0

    on_front, rank = _stage2(table, within, spec, notes, timings)
    table["on_front"] = on_front
    table["shortlist_rank"] = rank
    shortlist = table[rank >= 0].sort_values("shortlist_rank").reset_index(drop=True)
    notes += _outcome_notes(report, spec, n_survivors=int(within.sum()),
                            n_front=int(on_front.sum()), n_scored=len(table))
    counts = {
        "candidates": n_candidates,
        "after_cross_platform": n_after_a,
        "eliminated_stage1": int(n_after_a - within.sum()),
        "survivors": int(within.sum()),
        "front": int(on_front.sum()),
        "shortlist": len(shortlist),
    }
    return ScreeningResult(spec=spec, table=table, shortlist=shortlist, counts=counts,
                           budget_report=report, timings_s=timings, notes=notes,
                           platform=platform, platform_a=platform_a)


def _check_screening(model: Any, spec: DeploymentSpec) -> tuple[str | None, list[str]]:
    """The deployment platform and the first notes; raise ValueError if ``model`` cannot
    serve ``spec``."""
    platform = spec.platform if spec.platform is not None else getattr(model, "platform_", None)
    check_model(model, spec, platform=platform)
    missing = _missing_targets(model, spec.needed_targets)
    if missing:
        raise ValueError(
            f"the model for {platform!r} does not predict {missing} (it predicts "
            f"{_model_targets(model)}); drop those budgets/objectives or use another model"
        )
    notes = []
    q = spec.quality_objective
    if q is not None and q.proxy:
        notes.append(
            f"no quality column given: maximising '{QUALITY_PROXY}' (parameter count) as a "
            "capacity proxy, not a measured accuracy"
        )
    return platform, notes


def _check_objective_columns(df: pd.DataFrame, spec: DeploymentSpec) -> None:
    """Raise ValueError for an objective that is neither predicted nor a column of ``df``."""
    for o in spec.objectives:
        if not o.predicted and o.column not in df.columns:
            hint = (" (pass quality=<column> with the candidates' quality scores, or "
                    "use_quality=False)") if o.sense == "max" else ""
            raise ValueError(
                f"objective {o.label!r} names no column of the candidates and is not a "
                f"predicted metric {list(BUDGET_METRICS)}{hint}"
            )


def _extrapolated_note(n_extrapolated: int, n: int) -> str:
    return (f"{n_extrapolated:,} of {n:,} candidates lie outside the model's training range "
            "(column 'extrapolated'): their predictions extrapolate the base law, treat them "
            "with care")


def _nonfinite_note(n_bad: int) -> str:
    return f"{n_bad} survivors with a non-finite objective were dropped"


def _stage2(table: pd.DataFrame, within: np.ndarray, spec: DeploymentSpec, notes: list[str],
            timings: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """Stage 2 on the survivors ``within``: (on_front mask, shortlist rank or -1) over
    ``table``'s rows. Survivors with a non-finite objective are dropped (noted)."""
    t0 = time.perf_counter()
    surv = np.flatnonzero(within)
    on_front = np.zeros(len(table), dtype=bool)
    rank = np.full(len(table), -1, dtype=np.int64)
    if len(surv):
        which = "_hi" if spec.rank_on == "upper" else ""
        F = _objective_matrix(table, spec, which)[surv]
        senses = [o.sense for o in spec.objectives]
        bad = ~np.isfinite(F).all(axis=1)
        if bad.any():
            notes.append(_nonfinite_note(int(bad.sum())))
            surv, F = surv[~bad], F[~bad]
        front_mask = pareto_front(F, senses)
        on_front[surv[front_mask]] = True
        timings["stage2_pareto"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        order = _shortlist_order(F, senses, front_mask, spec)
        rank[surv[order]] = np.arange(len(order))
    else:
        timings["stage2_pareto"] = time.perf_counter() - t0
        t0 = time.perf_counter()
    timings["shortlist"] = time.perf_counter() - t0
    return on_front, rank


def _outcome_notes(report: pd.DataFrame, spec: DeploymentSpec, *, n_survivors: int,
                   n_front: int, n_scored: int) -> list[str]:
    """The notes on stage 1 leaving nobody, or a front smaller than ``k``."""
    if n_survivors == 0 and spec.budgets:
        tight = report.loc[tightest_budget(report)]
        b = next(bb for bb in spec.budgets if bb.label == tight.name)
        return [
            f"no candidate meets every budget at coverage {spec.coverage:.2f}: the tightest "
            f"budget is {tight.name} ({int(tight['n_fail']):,} of {n_scored:,} fail it; the "
            f"lowest predicted upper bound of {b.metric} is {tight['min_upper']:.4g})"
        ]
    if 0 < n_front < spec.k:
        return [
            f"the front has {n_front} members < k={spec.k}: the shortlist is filled from the "
            "next non-dominated fronts"
        ]
    return []


def _default_rank_by(spec: DeploymentSpec) -> str:
    for o in spec.objectives:
        if o.predicted:
            return o.column
    if spec.budgets:
        return spec.budgets[0].metric
    return "pareto"


def _cross_platform_rank(model_a: Any, df: pd.DataFrame, spec: DeploymentSpec, top_n: int,
                         rank_by: str | None) -> pd.DataFrame:
    rank_by = rank_by or _default_rank_by(spec)
    if top_n >= len(df):
        return df
    if rank_by == "pareto":
        need = [o.column.removesuffix("_per_sample") for o in spec.objectives if o.predicted]
        missing = _missing_targets(model_a, need)
        if missing:
            raise ValueError(f"model_a does not predict {missing} needed to rank by 'pareto'")
        pa = _predict_point(model_a, df, need, "model_a")
        tab = df.copy()
        batch = df["batch"].to_numpy(dtype=float) if "batch" in df else None
        for o in spec.objectives:
            if o.predicted:
                tab[o.column] = _metric_values(pa, batch, o.column, "")
        F = _objective_matrix(tab, spec, "")
        senses = [o.sense for o in spec.objectives]
        ranks = pareto_ranks(F, senses, min_count=top_n)
        crowd = np.zeros(len(df))
        for r in np.unique(ranks[ranks >= 0]):
            sel = ranks == r
            crowd[sel] = crowding_distance(F[sel], senses)
        ranks = np.where(ranks < 0, np.iinfo(np.int64).max, ranks)
        order = np.lexsort((-crowd, ranks))[:top_n]
    else:
        if rank_by not in BUDGET_METRICS:
            raise ValueError(f"rank_by must be one of {list(BUDGET_METRICS)} or 'pareto', "
                             f"got {rank_by!r}")
        target = rank_by.removesuffix("_per_sample")
        if _missing_targets(model_a, [target]):
            raise ValueError(
                f"model_a ({getattr(model_a, 'platform_', None)!r}) does not predict {target!r} "
                f"to rank by; it predicts {_model_targets(model_a)}"
            )
        pa = _predict_point(model_a, df, [target], "model_a")
        batch = df["batch"].to_numpy(dtype=float) if "batch" in df else None
        v = _metric_values(pa, batch, rank_by, "")
        order = np.argsort(np.where(np.isfinite(v), v, np.inf), kind="stable")[:top_n]
    out = df.iloc[np.sort(order)].reset_index(drop=True)
    return out


def _stage1(df: pd.DataFrame, pred: pd.DataFrame, spec: DeploymentSpec
            ) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    batch = df["batch"].to_numpy(dtype=float) if "batch" in df.columns else None
    cols: dict[str, np.ndarray] = {}
    for c in pred.columns:
        cols[c] = pred[c].to_numpy()
    metrics = {b.metric for b in spec.budgets} | {o.column for o in spec.objectives if o.predicted}
    for mtr in sorted(metrics):
        if mtr.endswith("_per_sample"):
            for w in ("", "_lo", "_hi"):
                if f"{mtr.removesuffix('_per_sample')}{w}" in pred.columns:
                    cols[f"{mtr}{w}"] = _metric_values(pred, batch, mtr, w)
    n = len(df)
    within = np.ones(n, dtype=bool)
    first = np.full(n, "", dtype=object)
    fails = []
    rows = []
    for b in spec.budgets:
        hi_col = f"{b.metric}_hi"
        if hi_col not in cols:
            raise ValueError(f"the model's predict_interval gave no {b.target}_hi for {b.label}")
        hi = np.asarray(cols[hi_col], dtype=float)
        ok = b.holds(hi)
        cols[f"ok_{b.label}"] = ok
        fail = ~ok
        first[fail & within] = b.label
        within &= ok
        fails.append(fail)
        rows.append({"budget": b.label, "metric": b.metric, "limit": b.limit,
                     "n_fail": int(fail.sum()),
                     "min_upper": float(np.nanmin(hi)) if np.isfinite(hi).any() else math.nan})
    if fails:
        nf = np.sum(fails, axis=0)
        for r, f in zip(rows, fails, strict=True):
            r["n_first_fail"] = int((first == r["budget"]).sum())
            r["n_only_fail"] = int((f & (nf == 1)).sum())
    report = pd.DataFrame(rows, columns=["budget", "metric", "limit", "n_fail", "n_first_fail",
                                         "n_only_fail", "min_upper"]).set_index("budget")
    keep = [c for c in df.columns if c not in cols]
    table = pd.concat([df[keep].reset_index(drop=True), pd.DataFrame(cols)], axis=1)
    table["within_budget"] = within
    table["first_failing_budget"] = first
    return table, report, within


def _shortlist_order(F: np.ndarray, senses: list[str], front_mask: np.ndarray,
                     spec: DeploymentSpec) -> np.ndarray:
    """Indices (into F) of the shortlist in rank order: front first, next fronts to fill."""
    k = spec.k
    chosen: list[np.ndarray] = []
    remaining = np.arange(len(F))
    mask = front_mask
    while len(remaining) and sum(len(c) for c in chosen) < k:
        members = remaining[mask]
        Fm = F[members]
        if spec.shortlist_method == "crowding":
            score = -crowding_distance(Fm, senses)
        else:
            score = knee_distance(Fm, senses)
        # ties (e.g. several extremes at inf): prefer the better normalised objective sum
        tie = knee_distance(Fm, senses)
        order = np.lexsort((tie, score))
        need = k - sum(len(c) for c in chosen)
        chosen.append(members[order[:need]])
        remaining = remaining[~mask]
        if len(remaining) == 0 or need <= len(members):
            break
        mask = pareto_front(F[remaining], senses)
    return np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)



# ============================================================================ candidates
def unknown_candidates(source: Any, what: str = "--candidates") -> ValueError:
    """The one error for a ``--candidates`` value that names no candidate set and no file."""
    if what != "--candidates":
        return FileNotFoundError(f"{what} {source}: no such file")
    names = ", ".join(repr(n) for n in ("grid", *SAMPLED_SPACES))
    return ValueError(f"--candidates {str(source)!r} is neither {names} nor an existing file")


#: Bytes a sampled candidate takes in memory while it is screened (config columns, features,
#: predictions and the stage tables; measured at 100,000 candidates, rounded up).
CANDIDATE_BYTES = 4096


def check_sample_size(n: int, option: str = "--n-extended") -> None:
    """A sample size of at least 1 whose candidates fit in the memory available now
    (:data:`CANDIDATE_BYTES` each): a huge ``--n-extended`` is one error line, not a
    memory blow-up.

    Raises
    ------
    ValueError
        Naming the option, the memory it needs and the memory available.
    """
    if n < 1:
        raise ValueError(f"{option} must be >= 1, got {n}")
    avail = _available_memory()
    if avail is None:  # pragma: no cover - neither /proc/meminfo nor sysconf
        return
    need = n * CANDIDATE_BYTES
    if need > avail:
        raise ValueError(f"{option} {n}: screening it needs about {need / 2**30:.1f} GiB of "
                         f"memory, {avail / 2**30:.1f} GiB are available; lower it, or screen "
                         "on a cluster (--cluster, partitioned)")


def _measured_costs(df: pd.DataFrame, what: str) -> pd.DataFrame:
    """Measured rows whose costs are numbers, and in ``ok`` rows finite and > 0
    (:func:`carb_lib.dataset.schema.check_costs`), else an error naming the file, the row (as
    the file counts it), the column and the value."""
    df = df.copy()
    for name in [c for c in TARGETS if c in df.columns]:
        num = pd.to_numeric(df[name], errors="coerce")
        bad = (df[name].notna() & num.isna()).to_numpy(dtype=bool)
        if bad.any():
            i = df.index[bad][0]
            raise SchemaError(f"{what}: row {i}: column {name!r} value {df[name][i]!r} is not a "
                              "number")
        df[name] = num
    check_costs(df, what)
    return df


def _available_memory() -> int | None:
    """Bytes of memory available to a new allocation (``MemAvailable`` of /proc/meminfo, else
    the free pages), or None."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def load_candidates(source: str | Path, n_extended: int = 100_000, seed: int = 0,
                    what: str = "--candidates") -> pd.DataFrame:
    """Candidates from ``"grid"`` (the paper's 17,280), ``"extended"`` (a seeded sample of
    ``n_extended`` configs of the extended space, 69,120 distinct configs),
    ``"extended-dense"`` (the same from a space of 94.8 million:
    :func:`carb_lib.families.space.dense_sample`) or a .csv / .parquet file.

    Every row is validated against its family's space before any work
    (:func:`carb_lib.families.space.validate_config_frame`: an invalid value is an error naming row,
    column and value), a given ``config_id`` must be its config's
    (:func:`carb_lib.families.space.check_config_ids`), and duplicated configs are kept once (a
    duplicate would take two shortlist slots). ``what`` names the option in messages
    (``--measured`` for held-out rows).
    """
    if str(source) == "grid":
        return space.paper_grid()
    if str(source) in space.SAMPLED_SPACES:
        check_sample_size(int(n_extended))
        try:
            df = space.SAMPLED_SPACES[str(source)](int(n_extended), seed=seed)
        except MemoryError:
            raise ValueError(f"--n-extended {n_extended}: the sample does not fit in this "
                             "machine's memory; lower it, or screen on a cluster "
                             "(--cluster)") from None
    else:
        path = Path(source)
        if not path.exists():
            raise unknown_candidates(source, what)
        df = read_table(path, what=what)
        space.validate_config_frame(df, f"{what} {path}")
        space.check_config_ids(df, f"{what} {path}")  # a wrong id would be copied through
        if what == "--measured":  # measurements the screening is scored against
            df = _measured_costs(df, f"{what} {path}")
    if "config_id" not in df.columns:
        df = space.add_config_ids(df)
    dup = df["config_id"].duplicated().to_numpy()
    if dup.any():
        logger.info("dropped %d duplicated candidate(s)", int(dup.sum()))
        df = df[~dup].reset_index(drop=True)
    return df
