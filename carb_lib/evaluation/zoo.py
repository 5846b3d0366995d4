"""How well CARB predicts the torchvision model zoo, on measured zoo rows.

Every zoo network (:mod:`carb_lib.families.zoo`) is a ``module``-family config; ``carb profile`` measures
it like any other row. :func:`evaluate_zoo` predicts each measured zoo row by four methods, each
of which never saw the row's network:

``leave_network_out``
    A ``feature_set="shared"`` :class:`~carb_lib.ensemble.CARBRegressor` fitted on the
    design-space rows of the platform and the zoo rows of the *other* networks (grouped folds
    by network: a network's rows are predicted by the fold that held all of them out).
``zero_zoo``
    The same model fitted on the design-space rows only: no zoo network measured.
``flops_only``
    Baseline: log-log regression of each target on FLOPs alone, on the training rows of the
    ``leave_network_out`` fold.
``operators_summed``
    Baseline (latency only): the network's operators, each predicted from the platform's
    operator benchmark (``carb kernels``, :class:`~carb_lib.kernels.law.KernelModel`) as if timed
    alone, summed; no network row is used.

:func:`zoo_scores` scores them by method and network kind: memory exactness (to the byte),
latency median absolute percentage error, share within ±10 %, and Spearman's rank correlation
within each batch size and precision. :func:`zoo_remeasurement_noise` scores a second
measurement of the same rows (``carb audit``) the same way, as a prediction of the stored rows:
the re-measurement noise (:func:`carb_lib.evaluation.scoring.remeasurement_noise`'s statistic),
the scale on which a model's latency error is read (a perfect model scores about 1/sqrt(2) of
it).
:func:`evaluate_zoo_file` does all of it for one measured zoo file and the catalogued files that
go with its platform (:func:`sibling_files`); :func:`zoo_platform_scores` scores it per
precision and batch size, so that CPUs can be set side by side.

Examples
--------
>>> from carb_lib.evaluation.zoo import exact_share
>>> exact_share([1.0, 2.0], [1.0, 2.0 + 2.0 ** -21])  # 0.5 byte off: exact
1.0
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from carb_lib.characterize.scaling_data import load_measured
from carb_lib.core.vocab import ALLOC_FEATURES, EXTRA_STATIC_FEATURES, KERNEL_FEATURE
from carb_lib.dataset.catalog import DESIGN, data_folder_of, load_catalog
from carb_lib.dataset.features import fill_static_features
from carb_lib.ensemble import preset as model_preset
from carb_lib.evaluation.models import fit_quiet, flops_baseline
from carb_lib.evaluation.splits import prepare_dataset
from carb_lib.families.zoo import network_kind
from carb_lib.kernels import law as kernels
from carb_lib.kernels.law import with_kernel_column
from carb_lib.measure.audit import REMEASURED_COLUMNS

TARGETS: tuple[str, ...] = ("latency_ms", "peak_mem_mib")
METHODS: tuple[str, ...] = ("leave_network_out", "zero_zoo", "flops_only", "operators_summed")
#: One byte, in MiB: a predicted peak within half of it is exact.
BYTE_MIB: float = 2.0 ** -20
FACTORY_PREFIX = "torchvision.models:"


def exact_share(measured: Sequence[float], predicted: Sequence[float]) -> float:
    """Share of rows whose predicted peak memory (MiB) is within half a byte of the measured."""
    m, p = np.asarray(measured, float), np.asarray(predicted, float)
    return float(np.mean(np.abs(m - p) <= 0.5 * BYTE_MIB)) if m.size else float("nan")


def zoo_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The ``status == "ok"`` zoo rows of a measured file with ``network`` and ``kind`` columns
    and every static feature of the shared feature set (computed on the ``meta`` device where
    the file does not hold them). The allocator model's peaks (:data:`ALLOC_FEATURES`) are always
    computed by the current model: a file holds those of the model of the day it was measured.

    Raises
    ------
    ValueError
        Rows that are not zoo networks (``module`` not ``torchvision.models:NAME``).
    """
    ok = rows[rows["status"] == "ok"] if "status" in rows.columns else rows
    module = ok["module"].astype(str)
    bad = module[~module.str.startswith(FACTORY_PREFIX)]
    if len(bad):
        raise ValueError(f"{len(bad)} rows are not torchvision zoo networks, e.g. module "
                         f"{bad.iloc[0]!r} (row {bad.index[0]})")
    ok = ok.drop(columns=[c for c in ALLOC_FEATURES.values() if c in ok.columns])
    out = fill_static_features(prepare_dataset(ok), EXTRA_STATIC_FEATURES)
    net = out["module"].astype(str).str.slice(len(FACTORY_PREFIX))
    return out.assign(network=net.to_numpy(), kind=net.map(network_kind).to_numpy())


def design_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Design-space rows (ResNet grid and the other families) ready for a shared model.

    The allocator model's peaks (:data:`ALLOC_FEATURES`) are computed by the current model for
    every row, as in :func:`zoo_rows`: rows read from several files, only some of which store
    them, would otherwise hold NaN in the others' rows, and the memory law would fall back to
    its byte terms there.
    """
    rows = rows.drop(columns=[c for c in ALLOC_FEATURES.values() if c in rows.columns])
    return fill_static_features(prepare_dataset(rows), EXTRA_STATIC_FEATURES)


@dataclass
class ZooEvaluation:
    """Predictions of every measured zoo row by every method, and how they were made.

    ``fold_models``: the ``leave_network_out`` model of each fold (by fold number) and
    ``fold_of``: the fold of each network; :meth:`out_of_fold_model` routes each network's rows
    to the model that held it out."""

    predictions: pd.DataFrame
    params: dict[str, Any] = field(default_factory=dict)
    fold_models: dict[int, Any] = field(default_factory=dict, repr=False)
    fold_of: dict[str, int] = field(default_factory=dict, repr=False)

    def out_of_fold_model(self) -> OutOfFoldModel:
        """A model whose prediction of a row is made by the fold model that never saw the row's
        network (:class:`OutOfFoldModel`)."""
        if not self.fold_models:
            raise ValueError("this evaluation kept no fold models")
        return OutOfFoldModel(self.fold_models, self.fold_of)


class OutOfFoldModel:
    """Predictions of zoo configs, each by the fold model that held its network out.

    ``predict`` and ``predict_interval`` split the rows by ``network``; every other attribute
    (targets, platform, feature set) is the first fold model's (every fold has the same
    parameters). A network that no fold held out is refused."""

    def __init__(self, fold_models: dict[int, Any], fold_of: dict[str, int]) -> None:
        self.fold_models, self.fold_of = dict(fold_models), dict(fold_of)

    def __getattr__(self, name: str) -> Any:
        if name in ("fold_models", "fold_of"):
            raise AttributeError(name)
        return getattr(next(iter(self.fold_models.values())), name)

    def _route(self, X: pd.DataFrame, how: str, **kwargs: Any) -> pd.DataFrame:
        nets = X["network"].astype(str)
        unknown = sorted(set(nets) - set(self.fold_of))
        if unknown:
            raise ValueError(f"no fold held out network(s) {unknown[:5]}: out-of-fold "
                             "predictions exist only for the evaluated zoo networks")
        folds = nets.map(self.fold_of).to_numpy()
        out = None
        for f in np.unique(folds):
            idx = np.flatnonzero(folds == f)
            p = pd.DataFrame(getattr(self.fold_models[int(f)], how)(X.iloc[idx], **kwargs))
            p.index = idx
            out = p if out is None else pd.concat([out, p])
        return out.sort_index().reset_index(drop=True)

    def predict(self, X: pd.DataFrame, **kwargs: Any) -> pd.DataFrame:
        return self._route(X, "predict", **kwargs)

    def predict_interval(self, X: pd.DataFrame, **kwargs: Any) -> pd.DataFrame:
        return self._route(X, "predict_interval", **kwargs)


def network_folds(networks: pd.Series, n_folds: int, seed: int) -> np.ndarray:
    """Fold number of each row: networks shuffled with ``seed`` and dealt round-robin into
    ``n_folds`` groups (every row of a network in one fold)."""
    names = np.array(sorted(networks.unique()))
    if n_folds < 2 or n_folds > len(names):
        raise ValueError(f"n_folds must be in 2..{len(names)} (the networks), got {n_folds}")
    order = np.random.default_rng(seed).permutation(len(names))
    fold_of = {names[i]: j % n_folds for j, i in enumerate(order)}
    return networks.map(fold_of).to_numpy()


def _long(test: pd.DataFrame, method: str, pred: dict[str, np.ndarray]) -> list[pd.DataFrame]:
    keep = ["config_id", "network", "kind", "resolution", "batch", "precision"]
    return [test[keep].assign(method=method, target=t, measured=test[t].to_numpy(float),
                              predicted=np.asarray(p, float))
            for t, p in pred.items()]


def evaluate_zoo(design: pd.DataFrame, zoo: pd.DataFrame, *, n_folds: int = 8,
                 preset: str = "fast", kernel_model: Any = None, seed: int = 0,
                 progress: bool = False) -> ZooEvaluation:
    """Predict every zoo row by every method of :data:`METHODS` (see the module docstring).

    Parameters
    ----------
    design : pandas.DataFrame
        Design-space rows of the platform (:func:`design_rows`).
    zoo : pandas.DataFrame
        Measured zoo rows of the same platform (:func:`zoo_rows`).
    n_folds : int, default=8
        Folds grouped by network for ``leave_network_out``.
    preset : str, default="fast"
        Model size (:data:`carb_lib.ensemble.PRESETS`).
    kernel_model : KernelModel, optional
        Fitted on the platform's operator benchmark, for ``operators_summed`` (skipped without).
    seed : int, default=0
    progress : bool, default=False
        A tqdm bar over the folds.

    Returns
    -------
    ZooEvaluation
        ``predictions``: one row per zoo row, method and target (``measured``, ``predicted``).
    """
    plats = set(design["platform"].astype(str)) | set(zoo["platform"].astype(str))
    if len(plats) != 1:
        raise ValueError(f"design and zoo rows must be of one platform, got {sorted(plats)}")
    # the roofline latency law: the published tables' (the constructor's "auto" would choose
    # the kernel law on a platform with an operator benchmark)
    params = model_preset(preset, targets=TARGETS, feature_set="shared", random_state=seed,
                          latency_law="roofline")
    parts: list[pd.DataFrame] = []
    zero = fit_quiet(params, design)
    p0 = zero.predict(zoo)
    parts += _long(zoo, "zero_zoo", {t: p0[t].to_numpy() for t in TARGETS})
    folds = network_folds(zoo["network"], n_folds, seed)
    it = range(n_folds)
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, desc="zoo folds", unit="fold")
    fold_models = {}
    for f in it:
        test, rest = zoo[folds == f], zoo[folds != f]
        train = pd.concat([design, rest], ignore_index=True)
        model = fold_models[f] = fit_quiet(params, train)
        p = model.predict(test)
        parts += _long(test, "leave_network_out", {t: p[t].to_numpy() for t in TARGETS})
        parts += _long(test, "flops_only",
                       {t: flops_baseline(train, test, t).to_numpy() for t in TARGETS})
    if kernel_model is not None:
        k = with_kernel_column(zoo, kernel_model)
        parts += _long(zoo, "operators_summed", {"latency_ms": k[KERNEL_FEATURE].to_numpy()})
    pred = pd.concat(parts, ignore_index=True)
    return ZooEvaluation(pred, dict(n_folds=n_folds, preset=preset, seed=seed,
                                    platform=plats.pop(), n_design=len(design),
                                    n_zoo=len(zoo), n_networks=int(zoo["network"].nunique())),
                         fold_models=fold_models,
                         fold_of=dict(zip(zoo["network"].astype(str), folds.tolist(),
                                          strict=True)))


def _scores(g: pd.DataFrame, target: str) -> dict[str, float]:
    m, p = g["measured"].to_numpy(float), g["predicted"].to_numpy(float)
    ape = np.abs(p - m) / m * 100.0
    setting = [c for c in ("batch", "precision") if c in g.columns]
    rhos = [spearmanr(b["measured"], b["predicted"])[0]
            for _, b in g.groupby(setting) if len(b) >= 3]
    return dict(n=len(g), median_ape_pct=float(np.median(ape)),
                mape_pct=float(np.mean(ape)), within_10pct=float(np.mean(ape <= 10.0)),
                exact_share=exact_share(m, p) if target == "peak_mem_mib" else np.nan,
                spearman_within_batch=float(np.mean(rhos)) if rhos else np.nan,
                spearman_within_batch_min=float(np.min(rhos)) if rhos else np.nan)


def zoo_scores(predictions: pd.DataFrame, *, by_kind: bool = True) -> pd.DataFrame:
    """Scores per method and target, over all rows (``kind == "all"``) and per network kind.

    ``median_ape_pct``, ``mape_pct``, ``within_10pct``; ``exact_share`` for peak memory (within
    half a byte); ``spearman_within_batch`` is the mean over settings (a batch size at one
    precision, with at least three rows) of the rank correlation among the rows of that
    setting, ``_min`` the lowest.
    """
    frames = [predictions.assign(kind="all")]
    if by_kind:
        frames.append(predictions)
    both = pd.concat(frames, ignore_index=True)
    rows = []
    for key, g in both.groupby(["method", "target", "kind"], sort=True):
        rows.append({"method": key[0], "target": key[1], "kind": key[2],
                     **_scores(g, key[1])})
    out = pd.DataFrame(rows)
    order = {m: i for i, m in enumerate(METHODS)}
    return (out.assign(_o=out["method"].map(order), _a=out["kind"] != "all")
            .sort_values(["target", "_a", "kind", "_o"]).drop(columns=["_o", "_a"])
            .reset_index(drop=True))


def zoo_remeasurement_noise(audit_rows: pd.DataFrame) -> pd.DataFrame:
    """The re-measurement noise of zoo rows: a second measurement (``carb audit``: fresh
    processes, later) scored as a prediction of the stored rows (every APE relative to the
    stored value, the statistic of :func:`carb_lib.evaluation.scoring.remeasurement_noise`),
    with the columns of :func:`zoo_scores` (method ``remeasurement``, kind ``all``).

    ``audit_rows`` holds the stored values in the target columns and the second measurement
    in :data:`carb_lib.measure.audit.REMEASURED_COLUMNS` (``latency_ms_new``, ``peak_mem_mib_new``).
    """
    missing = [c for t in TARGETS for c in (t, REMEASURED_COLUMNS[t]) if c not in audit_rows]
    if missing:
        raise ValueError(f"the audit rows lack column(s) {missing} (carb audit writes them)")
    ok = audit_rows.dropna(subset=[REMEASURED_COLUMNS[t] for t in TARGETS])
    net = ok["module"].astype(str).str.slice(len(FACTORY_PREFIX))
    parts = [pd.DataFrame({
        "config_id": ok["config_id"].to_numpy(), "network": net.to_numpy(),
        "kind": net.map(network_kind).to_numpy(), "resolution": ok["resolution"].to_numpy(),
        "batch": ok["batch"].to_numpy(), "precision": ok["precision"].to_numpy(),
        "method": "remeasurement", "target": t, "measured": ok[t].to_numpy(float),
        "predicted": ok[REMEASURED_COLUMNS[t]].to_numpy(float)}) for t in TARGETS]
    return zoo_scores(pd.concat(parts, ignore_index=True), by_kind=False)


def remeasurement_ceiling(audit_rows: pd.DataFrame) -> pd.DataFrame:
    """Deprecated: :func:`zoo_remeasurement_noise` (the same rows)."""
    import warnings

    warnings.warn("remeasurement_ceiling is deprecated; use zoo_remeasurement_noise",
                  DeprecationWarning, stacklevel=2)
    return zoo_remeasurement_noise(audit_rows)


def sibling_files(zoo_dataset: str | Path) -> dict[str, Any]:
    """The catalogued files that go with a measured zoo file (:mod:`carb_lib.dataset.catalog`).

    The catalog is the one in the zoo file's data folder (``<data>/catalog.yaml`` for
    ``<data>/<platform>/zoo/rows.parquet``: :func:`carb_lib.dataset.catalog.data_folder_of`)
    where there is one, else the shipped catalog and the user catalogs;
    the zoo file is looked up in it by path.

    Returns
    -------
    dict
        ``design_datasets``: the rows of its platform's design campaign; ``audit``: the zoo
        campaign's audit (the one without a note) and ``kernel_bench``: the platform's operator
        benchmark timed with the zoo rows' heap (the design campaign's when its protocol's heap
        is the zoo campaign's, else the last catalogued campaign of the platform whose is, such
        as ``benchmarks/zoo_operator_protocol.py``'s ``heap_pair_kept``), else the design
        campaign's; each ``None`` where absent (all empty for a file no catalog lists). Paths as
        strings, under the folder the zoo file was named by where the catalog is there.

    Examples
    --------
    >>> sibling_files("no/such/zoo/cpu_x.parquet")
    {'design_datasets': [], 'audit': None, 'kernel_bench': None}
    """
    path = Path(zoo_dataset)
    data = data_folder_of(path)
    cat = load_catalog() if data is None else load_catalog(shipped=data / "catalog.yaml")
    entry = cat.entry_of(path)
    if entry is None:
        return {"design_datasets": [], "audit": None, "kernel_bench": None}

    def show(e) -> str:
        same = data is not None and data.resolve() == e.root.resolve()
        return ((data if same else e.root) / e.rel).as_posix()

    plat = entry.platform
    design = [show(e) for e in cat.entries(plat, DESIGN, "rows") if e.path.is_file()]
    audit = [show(e) for e in cat.entries(plat, entry.campaign, "audit")
             if not e.note and e.path.is_file()]
    return {"design_datasets": design, "audit": audit[0] if audit else None,
            "kernel_bench": next(map(show, cat.benchmarks(plat, entry.campaign)), None)}


@dataclass
class ZooFileEvaluation:
    """:func:`evaluate_zoo_file`'s result: one platform's zoo and design rows, every prediction
    and the re-measurement noise (``None`` without an audit file)."""

    platform: str
    zoo: pd.DataFrame
    design: pd.DataFrame
    evaluation: ZooEvaluation
    noise: pd.DataFrame | None
    files: dict[str, Any]

    @property
    def ceiling(self) -> pd.DataFrame | None:
        """Deprecated: :attr:`noise`."""
        import warnings

        warnings.warn("ZooFileEvaluation.ceiling is deprecated; use .noise", DeprecationWarning,
                      stacklevel=2)
        return self.noise


def evaluate_zoo_file(zoo_dataset: str | Path, *, design_datasets: Sequence[str | Path] | None = None,
                      audit: str | Path | None = None, kernel_bench: str | Path | None = None,
                      n_folds: int = 8, preset: str = "fast", seed: int = 0,
                      max_networks: int | None = None, max_design_rows: int | None = None,
                      kernel_model: Any = None, progress: bool = False) -> ZooFileEvaluation:
    """Read a measured zoo file and the platform's other files and run :func:`evaluate_zoo`.

    Parameters
    ----------
    zoo_dataset : path
        Measured zoo rows of one platform (``carb profile`` of ``carb zoo configs``).
    design_datasets : sequence of paths, optional
        The platform's design-space rows; default those :func:`sibling_files` finds.
    audit : path, optional
        ``carb audit`` of zoo rows, for :func:`zoo_remeasurement_noise` (no noise without).
    kernel_bench : path, optional
        The platform's operator benchmark (``carb kernels``), for ``operators_summed``.
    n_folds, preset, seed, progress
        As :func:`evaluate_zoo`.
    max_networks : int, optional
        Evaluate this many of the file's networks, drawn with ``seed`` (smoke runs).
    max_design_rows : int, optional
        Subsample the design-space rows with ``seed`` (smoke runs).
    kernel_model : carb_lib.kernels.law.KernelModel, optional
        The unfitted kernel model whose parameters the fit on ``kernel_bench`` uses (a clone;
        default ``KernelModel(random_state=seed)``), e.g. fewer trees for a smoke run.

    Raises
    ------
    FileNotFoundError
        A named file is missing, or the platform has no design-space rows.
    """
    design_files = (sibling_files(zoo_dataset)["design_datasets"] if design_datasets is None
                    else [Path(p).as_posix() for p in design_datasets])
    files = dict(design_datasets=design_files, audit=audit, kernel_bench=kernel_bench)
    if not design_files:
        raise FileNotFoundError(f"{zoo_dataset}: no design-space rows of its platform "
                                "(no rows of its platform's design campaign in the catalog)")
    raw = load_measured([zoo_dataset])
    raw = raw[raw["status"] == "ok"]
    if max_networks is not None and raw["module"].nunique() > max_networks:
        keep = pd.Series(raw["module"].unique()).sample(n=max_networks, random_state=seed)
        raw = raw[raw["module"].isin(set(keep))]
    zoo = zoo_rows(raw).reset_index(drop=True)  # allocator peaks by the current model
    design = design_rows(load_measured(design_files))
    if max_design_rows is not None and len(design) > max_design_rows:
        design = design.sample(n=max_design_rows, random_state=seed)
    design = design.reset_index(drop=True)
    fitted = None
    if kernel_bench:
        fitted = kernels.fit_kernel_model(kernels.read_bench(kernel_bench), kernel_model,
                                          random_state=seed)
    ev = evaluate_zoo(design, zoo, n_folds=n_folds, preset=preset, kernel_model=fitted,
                      seed=seed, progress=progress)
    noise = None
    if audit:
        noise = zoo_remeasurement_noise(pd.read_parquet(audit))
    return ZooFileEvaluation(str(zoo["platform"].iloc[0]), zoo, design, ev, noise, files)


def setting_order(precision: str, batch: int | str) -> tuple[bool, str, int]:
    """Sort key of a setting (precision, batch size): fp32 first, then by precision and batch."""
    return (precision != "fp32", precision, int(batch))


def zoo_platform_scores(predictions: pd.DataFrame, noise: pd.DataFrame | None = None, *,
                        platform: str | None = None) -> pd.DataFrame:
    """One platform's scores over all rows and per setting (precision and batch size), one row
    per method (the re-measurement noise too, over all rows, where ``noise`` is given), targets side
    by side.

    Columns: ``platform``, ``precision`` and ``batch`` ("all" and "all" over all rows, else the
    setting's precision and batch size; fp32 first), ``method``, ``n``,
    ``latency_median_ape_pct``, ``latency_within_10pct``, ``latency_spearman``,
    ``peak_mem_exact_share``. ``latency_spearman`` over all rows is the mean of the
    within-setting correlations (:func:`zoo_scores`).
    """
    by_setting = sorted(predictions.groupby(["precision", "batch"]),
                        key=lambda kv: setting_order(*kv[0]))
    groups = [("all", "all", predictions)] + [(str(p), str(int(b)), g)
                                              for (p, b), g in by_setting]
    rows = []
    for precision, batch, g in groups:
        s = zoo_scores(g, by_kind=False)
        if noise is not None and batch == "all":
            s = pd.concat([s, noise], ignore_index=True)
        for method, m in s.groupby("method", sort=False):
            # a target the method does not predict reads as NaN
            lat, mem = m.set_index("target").reindex(list(TARGETS)).to_dict("records")
            rows.append({"platform": platform, "precision": precision, "batch": batch,
                         "method": method, "n": int(m["n"].iloc[0]),
                         "latency_median_ape_pct": lat["median_ape_pct"],
                         "latency_within_10pct": lat["within_10pct"],
                         "latency_spearman": lat["spearman_within_batch"],
                         "peak_mem_exact_share": mem["exact_share"]})
    return pd.DataFrame(rows)
