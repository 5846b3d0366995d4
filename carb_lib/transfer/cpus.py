"""Transfer to a new CPU: leave-one-CPU-out over the five CPU kinds the project measured.

The same ResNet configs were measured on five CPUs (AMD EPYC Zen 3, Zen 4, Zen 5; Intel Xeon
models 207 and 167), each with its operator benchmark (``carb kernels``) and an audit (a seeded
sample re-measured later, the re-measurement noise). :func:`leave_one_cpu_out` holds each
CPU out in turn and predicts its rows from the other four, every choice made on those four only:

``zero_shot``
    the kernel law fitted on the sources (log latency on log summed operator time per
    precision: :data:`ZERO_SHOT_LAWS`, the law chosen by leave-one-source-out) and fed the
    target's own operator benchmark: no network measured on the target;
``few_shot``
    k measured configs of the target recalibrate the sources' measured latencies and the
    zero-shot prediction (:func:`carb_lib.transfer.pairwise.recalibrate`; the method chosen at each k by
    leave-one-source-out among :data:`~carb_lib.transfer.pairwise.SOURCE_METHODS`);
``naive_affine``
    the baseline: ``log y = a + b log s`` fitted on k = 10 paired configs from one source CPU,
    one row per source (averaged over sources in :func:`summarise_loco`);
``target_only``
    a model of the target's k rows alone (ridge on static features).

Scores per target (on the rows not sampled): median APE, the share within +-10 %, Spearman, and
the recall of the target's true Pareto front (latency, peak memory, parameters) when the front
is taken from the predicted latency. :func:`cpu_remeasurement_noise` gives each CPU's
re-measurement noise from its audit rows; :func:`cross_cpu_slopes` the slopes of log cost on log cost between CPUs
with bootstrap CIs.

Examples
--------
>>> from carb_lib import transfer_cpus as TC
>>> rows = TC.load_cpu_rows()                         # doctest: +SKIP
>>> loco = TC.leave_one_cpu_out(rows, seeds=3)         # doctest: +SKIP
>>> TC.summarise_loco(loco, TC.cpu_remeasurement_noise())  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from carb_lib.core import metrics as _m
from carb_lib.core.claims import CLAIM_COLUMNS, TARGET_COLUMNS
from carb_lib.core.scoring import remeasurement_noise
from carb_lib.core.vocab import EXTRA_STATIC_FEATURES, KERNEL_FEATURE, STATIC_FEATURES
from carb_lib.dataset.catalog import DESIGN, Catalog, load_catalog, shown_path
from carb_lib.dataset.features import fill_static_features
from carb_lib.dataset.schema import read_dataset
from carb_lib.families._base import DEFAULT_FAMILY
from carb_lib.screening.pareto import pareto_front
from carb_lib.transfer.pairwise import SOURCE_METHODS, model_features, recalibrate
from carb_lib.transfer.rows import prepare_rows

if TYPE_CHECKING:
    from carb_lib.kernels.law import KernelModel

__all__ = ["CPU_FILES",  # noqa: F822 - the catalog's answer now, by the module's __getattr__
           "ZERO_SHOT_LAWS", "check_bench_cpu", "cpu_files", "cross_cpu_slopes",
           "kernel_transfer_predict",
           "kernel_times", "leave_one_cpu_out", "load_cpu_rows", "remeasurement_ceiling",
           "cpu_remeasurement_noise",
           "summarise_loco", "transfer_claims", "TRANSFER_TARGETS", "TRANSFER_TARGET_SOURCE"]

logger = logging.getLogger(__name__)


def cpu_files(catalog: Catalog | None = None) -> dict[str, tuple[str, str, str]]:
    """Per CPU platform of the catalog (:mod:`carb_lib.dataset.catalog`, the shipped one and
    the user catalogs): its design campaign's ResNet rows, operator benchmark and ResNet audit
    rows (paths as strings), for every CPU platform whose design campaign holds all three, in
    catalog order. A platform a user catalog adds this way joins the leave-one-CPU-out study.

    Parameters
    ----------
    catalog : carb_lib.dataset.catalog.Catalog, optional
        Default :func:`carb_lib.dataset.catalog.load_catalog`.
    """
    cat = load_catalog() if catalog is None else catalog
    out = {}
    for plat in cat.platforms():
        design = cat.campaign(plat, DESIGN)
        if design is None or design.device != "cpu":
            continue
        rows = cat.files(plat, DESIGN, "rows", DEFAULT_FAMILY)
        bench = cat.files(plat, DESIGN, "kernels")
        audit = cat.files(plat, DESIGN, "audit", DEFAULT_FAMILY)
        if rows and bench and audit:
            out[plat] = (str(rows[0]), str(bench[0]), str(audit[0]))
    return out


def __getattr__(name: str):
    """``CPU_FILES``: :func:`cpu_files` of the catalog now (the shipped and user catalogs)."""
    if name == "CPU_FILES":
        return cpu_files()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Zero-shot laws, per precision, of log network latency on ``log kernel_ms``: ``scale`` (slope
#: 1, one factor), ``loglinear`` (slope and factor), ``loglinear_batch`` (plus ``log batch``).
ZERO_SHOT_LAWS: tuple[str, ...] = ("scale", "loglinear", "loglinear_batch")
#: Columns scored (each beside the target CPU's re-measurement noise).
SCORE_COLUMNS: tuple[str, ...] = ("median_ape_pct", "within_10pct", "spearman", "pareto_recall")
_FRONT = ("latency_ms", "peak_mem_mib", "params")


def _score(y: np.ndarray, p: np.ndarray) -> dict[str, float]:
    ape = np.abs(p / y - 1.0)
    return {"median_ape_pct": float(100 * np.median(ape)),
            "within_10pct": float(np.mean(ape <= 0.10)),
            "spearman": _m.spearman(y, p) if len(y) > 2 else np.nan}


def _pareto_recall(q: pd.DataFrame, pred_latency: np.ndarray) -> float:
    """Share of the true front (measured latency and peak memory down, params up) that the
    front from the predicted latency also holds."""
    senses = ["min", "min", "max"]
    true = pareto_front(q[list(_FRONT)].to_numpy(float), senses)
    est = q[list(_FRONT)].to_numpy(float).copy()
    est[:, 0] = pred_latency
    got = pareto_front(est, senses)
    return float((true & got).sum() / true.sum()) if true.any() else np.nan


def check_bench_cpu(rows: pd.DataFrame, bench: pd.DataFrame, *, what: str = "benchmark") -> None:
    """Refuse an operator benchmark of another CPU than the network rows: one ``ValueError``
    naming both ``cpu_id`` values (ids missing on either side are not compared; a legacy id
    without a family number, ``"AMD EPYC"``, names no CPU model and is not compared either)."""
    def ids(df: pd.DataFrame) -> set[str]:
        if "cpu_id" not in df.columns:
            return set()
        return {str(v) for v in df["cpu_id"].dropna().unique() if "family" in str(v)}

    a, b = ids(rows), ids(bench)
    if a and b and a != b:
        raise ValueError(f"the {what} was timed on cpu_id {sorted(b)} but the rows were measured "
                         f"on cpu_id {sorted(a)}: time the operators on the rows' CPU "
                         "(carb kernels --out there)")


def load_cpu_rows(files: Mapping[str, Sequence[str]] | None = None, *,
                  paired: bool = True) -> pd.DataFrame:
    """The ok ResNet rows of every CPU of ``files`` (default :func:`cpu_files`), with static
    features; with ``paired`` only the configs (``config_id``) measured ok on every CPU."""
    files = cpu_files() if files is None else files
    parts = []
    for plat, spec in files.items():
        path = Path(spec[0])
        if not path.exists():
            raise ValueError(f"platform {plat!r}: its network rows {path} are absent")
        d = prepare_rows(read_dataset(path))
        if "family" in d.columns:
            d = d[d["family"].astype(str).eq(DEFAULT_FAMILY)]
        parts.append(d.drop_duplicates("config_id").assign(platform=plat))
    rows = pd.concat(parts, ignore_index=True)
    if paired:
        n = rows.groupby("config_id")["platform"].nunique()
        rows = rows[rows["config_id"].isin(n.index[n == len(files)])].reset_index(drop=True)
    return rows


def kernel_times(rows: pd.DataFrame, files: Mapping[str, Sequence[str]] | None = None, *,
                 random_state: int = 0,
                 kernel_model: KernelModel | None = None) -> pd.Series:
    """Summed predicted operator time (``kernel_ms``) of every row, from a kernel model fitted
    on its own platform's operator benchmark (:class:`carb_lib.kernels.law.KernelModel`).

    ``kernel_model`` is the unfitted model whose parameters every platform's fit uses (a clone
    of it; default ``KernelModel(random_state=random_state)``): e.g. fewer trees for a smoke run.
    """
    from carb_lib.kernels import law as kernels

    files = cpu_files() if files is None else files
    out = pd.Series(np.nan, index=rows.index, name=KERNEL_FEATURE)
    for plat, idx in rows.groupby("platform").groups.items():
        if plat not in files:
            raise ValueError(f"platform {plat!r} has no operator benchmark in the file table")
        bench = kernels.read_bench(files[plat][1])
        sub = rows.loc[idx]
        check_bench_cpu(sub, bench, what=f"operator benchmark {files[plat][1]}")
        model = kernels.fit_kernel_model(bench.assign(platform=plat), kernel_model,
                                         random_state=random_state)
        out.loc[idx] = kernels.with_kernel_column(sub, model)[KERNEL_FEATURE].to_numpy()
    return out


def _law_design(d: pd.DataFrame, law: str) -> np.ndarray:
    lk = np.log(d["kernel_ms"].to_numpy(float))
    one = np.ones(len(d))
    if law == "scale":
        return one[:, None]
    if law == "loglinear":
        return np.c_[one, lk]
    return np.c_[one, lk, np.log(d["batch"].to_numpy(float))]


def _fit_law(train: pd.DataFrame, test: pd.DataFrame, law: str) -> np.ndarray:
    """Log latency of ``test`` from the law fitted per precision on ``train``."""
    if law not in ZERO_SHOT_LAWS:
        raise ValueError(f"law={law!r} is unknown; valid: {list(ZERO_SHOT_LAWS)}")
    out = np.full(len(test), np.nan)
    for prec in test["precision"].astype(str).unique():
        tr = train[train["precision"].astype(str) == prec]
        te = (test["precision"].astype(str) == prec).to_numpy()
        y = np.log(tr["latency_ms"].to_numpy(float))
        off = np.log(tr["kernel_ms"].to_numpy(float)) if law == "scale" else 0.0
        coef, *_ = np.linalg.lstsq(_law_design(tr, law), y - off, rcond=None)
        q = test.loc[te]
        out[te] = _law_design(q, law) @ coef + (
            np.log(q["kernel_ms"].to_numpy(float)) if law == "scale" else 0.0)
    return out


def _choose_law(src: pd.DataFrame) -> str:
    """The zero-shot law of lowest median APE, leaving each source CPU out of the others."""
    plats = sorted(src["platform"].unique())
    err = {}
    for law in ZERO_SHOT_LAWS:
        e = []
        for p in plats:
            te = src[src["platform"] == p]
            pred = _fit_law(src[src["platform"] != p], te, law)
            e.append(np.median(np.abs(np.exp(pred) / te["latency_ms"].to_numpy(float) - 1)))
        err[law] = float(np.mean(e))
    return min(err, key=err.get)


def _wide(rows: pd.DataFrame) -> pd.DataFrame:
    """Log latency per config (rows) and platform (columns)."""
    return np.log(rows.pivot_table(index="config_id", columns="platform", values="latency_ms",
                                   aggfunc="median"))


def _few_shot(src_plats, tgt, W, Z, k, method, rng, FX):
    """Log predictions of the target's unsampled rows and their positions, from k samples
    (``FX``: :func:`carb_lib.transfer.pairwise.model_features` by ``config_id``)."""
    perm = rng.permutation(len(tgt))
    s, q = perm[:k], perm[k:]
    ids = tgt["config_id"].to_numpy()
    S = np.c_[W.loc[ids, list(src_plats)].to_numpy(), Z]
    F = FX.loc[ids].reset_index(drop=True)
    y = np.log(tgt["latency_ms"].to_numpy(float))
    return recalibrate(method, S[s], F.iloc[s], y[s], S[q], F.iloc[q]), q, s


def _choose_method(src: pd.DataFrame, W: pd.DataFrame, Zsrc: pd.Series, k: int,
                   seeds: int, FX: pd.DataFrame) -> str:
    """Few-shot method of lowest median APE at ``k``, each source CPU held out of the others."""
    plats = sorted(src["platform"].unique())
    err = {}
    for method in SOURCE_METHODS:
        e = []
        for p in plats:
            t = src[src["platform"] == p].reset_index(drop=True)
            others = [o for o in plats if o != p]
            z = Zsrc.loc[src["platform"] == p].to_numpy()
            for seed in range(seeds):
                pred, q, _ = _few_shot(others, t, W, z, k, method,
                                       np.random.default_rng([seed, k, 7]), FX)
                y = t["latency_ms"].to_numpy(float)[q]
                e.append(np.median(np.abs(np.exp(pred) / y - 1)))
        err[method] = float(np.mean(e))
    return min(err, key=err.get)


def leave_one_cpu_out(rows: pd.DataFrame, *, ks: Sequence[int] = (5, 10, 20), seeds: int = 5,
                      naive_k: int = 10, targets: Sequence[str] | None = None) -> pd.DataFrame:
    """Hold each CPU out in turn and predict its latency from the others (module docstring).

    Parameters
    ----------
    rows : pandas.DataFrame
        Paired rows of several platforms (:func:`load_cpu_rows`) with ``kernel_ms``
        (:func:`kernel_times`).
    ks : sequence of int, default (5, 10, 20)
        Measured target configs of the few-shot models and of ``target_only``.
    seeds : int, default 5
        Draws of the k configs (seeded: draw ``s`` at k is the same for every method).
    naive_k : int, default 10
        Paired configs of the naive affine baseline.
    targets : sequence of str, optional
        Platforms held out (default: every one).

    Returns
    -------
    pandas.DataFrame
        One row per (target, method, k, seed, source): ``target``, ``method``, ``k``,
        ``seed``, ``source`` (the naive baseline's CPU, else ``"all"``), ``choice`` (the law
        or few-shot method chosen on the sources), ``n_query`` and :data:`SCORE_COLUMNS`.

    Raises
    ------
    ValueError
        A target platform absent from the rows, fewer than two platforms, no ``kernel_ms``,
        or a k not below the target's rows.
    """
    if "kernel_ms" not in rows.columns:
        raise ValueError("the rows have no 'kernel_ms' column (kernel_times)")
    plats = sorted(rows["platform"].astype(str).unique())
    if len(plats) < 3:
        raise ValueError(f"leave-one-CPU-out needs at least 3 platforms, got {plats}")
    targets = plats if targets is None else list(targets)
    absent = [t for t in targets if t not in plats]
    if absent:
        raise ValueError(f"target platform {absent[0]!r} is not in the rows (platforms: {plats})")

    W = _wide(rows)
    first = rows.drop_duplicates("config_id")
    FX = model_features(first).set_axis(first["config_id"].to_numpy())
    # the loop below reads these columns only: its many row selections copy no wide frame
    rows = rows[list(dict.fromkeys(["config_id", "platform", "precision", "batch",
                                    "latency_ms", "kernel_ms", *_FRONT]))]
    out = []
    for tp in targets:
        tgt = rows[rows["platform"] == tp].reset_index(drop=True)
        src = rows[rows["platform"] != tp].reset_index(drop=True)
        too_big = [k for k in (*ks, naive_k) if k >= len(tgt)]
        if too_big:
            raise ValueError(f"k={too_big[0]} is not below the {len(tgt)} rows of target "
                             f"{tp!r}")
        src_plats = sorted(src["platform"].unique())
        y = tgt["latency_ms"].to_numpy(float)
        law = _choose_law(src)
        z_t = _fit_law(src, tgt, law)
        base = {"target": tp, "source": "all"}
        out.append({**base, "method": "zero_shot", "k": 0, "seed": 0, "choice": law,
                    "n_query": len(tgt), **_score(y, np.exp(z_t)),
                    "pareto_recall": _pareto_recall(tgt, np.exp(z_t))})
        # the zero-shot column of each source, predicted from the other sources (for choices)
        z_src = pd.Series(np.nan, index=src.index)
        for p in src_plats:
            m = src["platform"] == p
            z_src.loc[m] = _fit_law(src[~m], src[m], law)
        for k in ks:
            method = _choose_method(src, W, z_src, k, max(1, min(seeds, 3)), FX)
            for seed in range(seeds):
                for name, meth, plats_k in (("few_shot", method, src_plats),
                                            ("target_only", "target_only", [])):
                    pred, q, _ = _few_shot(plats_k, tgt, W, z_t if plats_k else
                                           np.zeros((len(tgt), 0)), k, meth,
                                           np.random.default_rng([seed, k]), FX)
                    out.append({**base, "method": name, "k": k, "seed": seed, "choice": meth,
                                "n_query": len(q), **_score(y[q], np.exp(pred)),
                                "pareto_recall": _pareto_recall(tgt.iloc[q], np.exp(pred))})
        ids = tgt["config_id"].to_numpy()
        ly = np.log(y)
        for sp in src_plats:
            s_all = W.loc[ids, sp].to_numpy()
            for seed in range(seeds):
                perm = np.random.default_rng([seed, naive_k]).permutation(len(tgt))
                s, q = perm[:naive_k], perm[naive_k:]
                b, a = np.polyfit(s_all[s], ly[s], 1)
                pred = np.exp(a + b * s_all[q])
                out.append({"target": tp, "source": sp, "method": "naive_affine", "k": naive_k,
                            "seed": seed, "choice": "affine_log", "n_query": len(q),
                            **_score(y[q], pred),
                            "pareto_recall": _pareto_recall(tgt.iloc[q], pred)})
    return pd.DataFrame(out, columns=["target", "method", "k", "seed", "source", "choice",
                                      "n_query", *SCORE_COLUMNS])


def cpu_remeasurement_noise(files: Mapping[str, Sequence[str]] | None = None) -> pd.DataFrame:
    """Each CPU's re-measurement noise from its audit rows
    (:func:`carb_lib.evaluation.scoring.remeasurement_noise`: the re-measured latency scored as
    a prediction of the stored one, every APE relative to the stored value, as a model's is):
    ``median_ape_pct``, ``within_10pct``, ``spearman`` and ``mape_pct``, over the ok rows of
    both measurements (``n``)."""
    files = cpu_files() if files is None else files
    out = []
    for plat, spec in files.items():
        path = Path(spec[2])
        row = {"platform": plat, "n": 0, "median_ape_pct": np.nan, "within_10pct": np.nan,
               "spearman": np.nan, "mape_pct": np.nan}
        if path.exists():
            a = pd.read_parquet(path)
            if "status_new" in a.columns:
                a = a[a["status_new"].astype(str).eq("ok")]
            if "family" in a.columns:
                a = a[a["family"].astype(str).eq(DEFAULT_FAMILY)]
            a = a[(a["latency_ms"] > 0) & (a["latency_ms_new"] > 0)]
            if len(a):
                noise = remeasurement_noise(a[["latency_ms", "latency_ms_new"]])
                row.update(noise[noise["subset"] == "all"].iloc[0][
                    ["n", "median_ape_pct", "within_10pct", "spearman", "mape_pct"]].to_dict())
        out.append({**row, "audit": shown_path(path)})
    out = pd.DataFrame(out)
    return out.assign(n=out["n"].astype(int))


def remeasurement_ceiling(files: Mapping[str, Sequence[str]] | None = None) -> pd.DataFrame:
    """Deprecated: :func:`cpu_remeasurement_noise` (one definition of re-measurement noise: APE
    relative to the stored value, no longer to the re-measured one)."""
    import warnings

    warnings.warn("remeasurement_ceiling is deprecated; use cpu_remeasurement_noise (APE "
                  "relative to the stored value)", DeprecationWarning, stacklevel=2)
    return cpu_remeasurement_noise(files)


def summarise_loco(loco: pd.DataFrame, noise: pd.DataFrame | None = None) -> pd.DataFrame:
    """Mean over seeds (and over source CPUs for the naive baseline) per target, method and
    k, with the target's re-measurement noise beside (``noise_<score>``, from
    :func:`cpu_remeasurement_noise`) and the ratio of median APEs (``ape_over_noise``)."""
    g = loco.groupby(["target", "method", "k"], sort=True)
    out = g[list(SCORE_COLUMNS)].mean()
    out["choice"] = g["choice"].agg(lambda s: ",".join(sorted(set(map(str, s)))))
    out["n_runs"] = g.size()
    out = out.reset_index()
    if noise is not None:
        c = noise.set_index("platform")
        for col in ("median_ape_pct", "within_10pct", "spearman"):
            out[f"noise_{col}"] = out["target"].map(c[col])
        out["ape_over_noise"] = out["median_ape_pct"] / out["noise_median_ape_pct"]
    return out


def cross_cpu_slopes(rows: pd.DataFrame, *, targets: Sequence[str] = ("latency_ms", "peak_mem_mib"),
                     n_boot: int = 500, seed: int = 0) -> pd.DataFrame:
    """OLS slope of log cost on the target CPU on log cost on the source CPU over the paired
    configs, for every ordered pair of platforms, with a percentile bootstrap 95 % CI over
    configs (``n_boot`` resamples), R^2 and Spearman.

    Returns
    -------
    pandas.DataFrame
        ``cost``, ``source``, ``target``, ``n``, ``slope``, ``slope_ci_low``,
        ``slope_ci_high``, ``intercept``, ``r2``, ``spearman``.
    """
    rng = np.random.default_rng(seed)
    out = []
    for cost in targets:
        W = np.log(rows.pivot_table(index="config_id", columns="platform", values=cost,
                                    aggfunc="median")).dropna()
        boot = rng.integers(0, len(W), size=(n_boot, len(W)))
        for a in W.columns:
            for b in W.columns:
                if a == b:
                    continue
                x, y = W[a].to_numpy(), W[b].to_numpy()
                if np.ptp(x) == 0:
                    continue
                slope, icpt = np.polyfit(x, y, 1)
                xb, yb = x[boot], y[boot]
                xc = xb - xb.mean(axis=1, keepdims=True)
                sl = (xc * (yb - yb.mean(axis=1, keepdims=True))).sum(1) / (xc**2).sum(1)
                r = np.corrcoef(x, y)[0, 1]
                out.append({"cost": cost, "source": a, "target": b, "n": len(W),
                            "slope": float(slope), "slope_ci_low": float(np.quantile(sl, 0.025)),
                            "slope_ci_high": float(np.quantile(sl, 0.975)),
                            "intercept": float(icpt), "r2": float(r**2),
                            "spearman": _m.spearman(x, y)})
    return pd.DataFrame(out, columns=["cost", "source", "target", "n", "slope", "slope_ci_low",
                                      "slope_ci_high", "intercept", "r2", "spearman"])


#: Where the CPU-transfer targets (:data:`TRANSFER_TARGETS`) are stated.
TRANSFER_TARGET_SOURCE = "project target for a new CPU (docs/transfer.md)"
#: Our targets for a new CPU (never the paper's): claim id part, method, k, summary column,
#: target value, and the claim in words.
TRANSFER_TARGETS: tuple[tuple[str, str, int | None, str, float, str], ...] = (
    ("zero_shot_ape_over_noise", "zero_shot", None, "ape_over_noise", 2.0,
     "zero-shot median APE at most 2x the re-measurement noise"),
    ("zero_shot_spearman", "zero_shot", None, "spearman", 0.97,
     "zero-shot Spearman at least 0.97"),
    ("few_shot_k10_ape_over_noise", "few_shot", 10, "ape_over_noise", 1.3,
     "k = 10 median APE at most 1.3x the re-measurement noise"),
)


def transfer_claims(summary: pd.DataFrame) -> pd.DataFrame:
    """Claims rows (``results/claims.csv`` columns) for our targets per target CPU
    (:data:`TRANSFER_TARGETS`: zero-shot median APE <= 2x the re-measurement noise and
    Spearman >= 0.97; k = 10 median APE <= 1.3x). The target is in ``target_value`` (with
    ``target_source``), never in ``paper_value``: the paper states none of them."""
    rows = []
    for tp, g in summary.groupby("target"):
        for cid, method, k, col, goal, text in TRANSFER_TARGETS:
            sub = g[g["method"] == method]
            if k is not None:
                sub = sub[sub["k"] == k]
            v = float(sub[col].iloc[0]) if len(sub) and col in sub else np.nan
            ok = bool(np.isfinite(v))
            rows.append({"claim_id": f"cpu_transfer_{cid}_{tp}",
                         "claim": f"a new CPU ({tp}): {text}", "paper_value": None,
                         "target_value": goal, "target_source": TRANSFER_TARGET_SOURCE,
                         "our_value": v if ok else None, "platform": tp,
                         "n": int(sub["n_runs"].sum()) if len(sub) else 0, "testable": ok,
                         "reason": "leave-one-CPU-out over the five CPU kinds, choices made on "
                                   "the four sources" if ok else
                                   "no audit rows for the re-measurement noise"})
    return pd.DataFrame(rows, columns=[*CLAIM_COLUMNS, *TARGET_COLUMNS])


def kernel_transfer_predict(source_rows: pd.DataFrame, source_benches: Sequence[pd.DataFrame],
                            target_bench: pd.DataFrame, query: pd.DataFrame, *,
                            target_samples: pd.DataFrame | None = None,
                            method: str = "offset", random_state: int = 0) -> np.ndarray:
    """Latency of ``query`` configs on a new CPU from its operator benchmark alone
    (``target_samples`` None: zero-shot) or recalibrated on a few measured rows of it.

    Parameters
    ----------
    source_rows : pandas.DataFrame
        Measured rows of the source CPUs (``platform``, config columns, ``latency_ms``).
    source_benches : sequence of pandas.DataFrame
        One operator benchmark per source platform (``carb kernels``; matched by ``platform``).
    target_bench : pandas.DataFrame
        The new CPU's operator benchmark (one platform).
    query : pandas.DataFrame
        Configs to predict (with ``batch`` and ``precision``).
    target_samples : pandas.DataFrame, optional
        Measured rows of the new CPU (k >= 2): the zero-shot prediction is recalibrated on
        them with ``method`` (:func:`carb_lib.transfer.pairwise.recalibrate`).
    method : str, default "offset"

    Returns
    -------
    numpy.ndarray
        Predicted latency (ms), aligned with ``query``.
    """
    from carb_lib.kernels import law as kernels

    benches = {}
    for b in source_benches:
        plats = sorted(b["platform"].dropna().astype(str).unique())
        if len(plats) != 1:
            raise ValueError(f"a source benchmark holds platforms {plats}; give one per file")
        benches[plats[0]] = b
    tplats = sorted(target_bench["platform"].dropna().astype(str).unique())
    if len(tplats) != 1:
        raise ValueError(f"the target benchmark holds platforms {tplats}; give one")
    tplat = tplats[0]
    src = prepare_rows(source_rows, ("latency_ms",))
    missing = sorted(set(src["platform"].astype(str)) - set(benches))
    if missing:
        raise ValueError(f"source platform {missing[0]!r} has no operator benchmark among "
                         f"--source-kernels (benchmarks of {sorted(benches)})")
    parts = []
    for plat, g in src.groupby("platform"):
        check_bench_cpu(g, benches[plat], what=f"operator benchmark of {plat!r}")
        m = kernels.KernelModel(random_state=random_state).fit(benches[plat])
        parts.append(kernels.with_kernel_column(g, m))
    src = pd.concat(parts, ignore_index=True)
    tm = kernels.KernelModel(random_state=random_state).fit(target_bench)
    need = [query]
    if target_samples is not None:
        if "platform" in target_samples.columns:
            other = sorted(set(target_samples["platform"].astype(str)) - {tplat})
            if other:
                raise ValueError(f"the target samples are of platform {other[0]!r}, the target "
                                 f"benchmark of {tplat!r}")
        check_bench_cpu(target_samples, target_bench, what="target benchmark")
        need.append(prepare_rows(target_samples, ("latency_ms",)))
    both = fill_static_features(pd.concat(need, ignore_index=True).assign(platform=tplat),
                                (*STATIC_FEATURES, *EXTRA_STATIC_FEATURES))
    both = kernels.with_kernel_column(both, tm)
    law = _choose_law(src) if src["platform"].nunique() > 1 else "loglinear"
    z = _fit_law(src, both, law)
    nq = len(query)
    if target_samples is None:
        return np.exp(z[:nq])
    y = np.log(both["latency_ms"].to_numpy(float)[nq:])
    F = model_features(both)
    return np.exp(recalibrate(method, z[nq:, None], F.iloc[nq:], y, z[:nq, None], F.iloc[:nq]))
