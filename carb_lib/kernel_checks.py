"""Is a network the sum of its operators? The kernel law's assumption, measured.

The kernel latency law (:mod:`carb_lib.kernels`) predicts a network from its operators *timed
alone* and summed. Two things can make it wrong, and they call for different fixes:

* **additivity**: a network is not the sum of its operators timed alone (caches warm or cold
  between operators, allocator traffic, Python dispatch between modules);
* **the kernel model**: the operators are additive, but the model trained on the generic grid
  predicts some of them badly (a regime the grid samples too thinly).

:func:`additivity_check` separates them on measured rows: for each, it times the network now
and every one of its operators alone, with the same harness (one thread,
``torch.inference_mode()``, warm-up, median of timed windows), and puts beside them the
kernel model's sum (``kernel_ms``) and the stored measurement. Run it on a quiet machine: it
is a measurement.

Examples
--------
>>> from carb_lib.kernel_checks import additivity_check
>>> check = additivity_check(rows.head(5), model)                 # doctest: +SKIP
>>> check.summary()                                                # doctest: +SKIP
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.kernels import (
    OP_COLUMNS,
    KernelModel,
    _time_call,
    bench_kernels,
    holdout_check,
    largest_holdout,
    network_ops,
)
from carb_lib.vocab import KERNEL_FEATURE

__all__ = ["AdditivityCheck", "OperatorBreakdown", "PairedVariants", "additivity_check",
           "operator_breakdown", "paired_variants"]

logger = logging.getLogger(__name__)

#: Per-row columns of an :class:`AdditivityCheck` besides the row's config.
CHECK_COLUMNS = ("latency_ms", "network_ms", "ops_alone_ms", KERNEL_FEATURE, "n_ops")


@dataclass
class AdditivityCheck:
    """Networks timed whole and operator by operator (:func:`additivity_check`).

    Attributes
    ----------
    rows : pandas.DataFrame
        One row per network: its config columns, ``latency_ms`` (stored measurement),
        ``network_ms`` (timed now), ``ops_alone_ms`` (its operators timed alone now, summed
        with their multiplicity), ``kernel_ms`` (the kernel model's sum) and ``n_ops``.
    """

    rows: pd.DataFrame

    def summary(self, by: tuple[str, ...] = ("family", "precision")) -> pd.DataFrame:
        """Median ratios and MAPEs per group and over all rows.

        ``additivity`` = ops_alone_ms / network_ms (1: the network is the sum of its
        operators), ``model`` = kernel_ms / ops_alone_ms (1: the kernel model is exact on these
        operators), ``law_input`` = kernel_ms / network_ms (both together), ``repeat`` =
        network_ms / latency_ms (today's timing against the stored one). ``*_mape_pct``: mean
        absolute percentage error of the numerator against the denominator.
        """
        r = self.rows
        pairs = {"additivity": ("ops_alone_ms", "network_ms"),
                 "model": (KERNEL_FEATURE, "ops_alone_ms"),
                 "law_input": (KERNEL_FEATURE, "network_ms"),
                 "repeat": ("network_ms", "latency_ms")}

        def one(g: pd.DataFrame) -> pd.Series:
            out: dict[str, float] = {"n": float(len(g))}
            for name, (a, b) in pairs.items():
                ratio = g[a].to_numpy(dtype=float) / g[b].to_numpy(dtype=float)
                out[f"{name}_median"] = float(np.nanmedian(ratio))
                out[f"{name}_mape_pct"] = float(100 * np.nanmean(np.abs(ratio - 1)))
            return pd.Series(out)

        keys = [c for c in by if c in r.columns]
        parts = [one(g).rename(k if isinstance(k, tuple) else (k,))
                 for k, g in r.groupby(keys, sort=True)] if keys else []
        total = one(r).rename(("all",) + ("",) * (len(keys) - 1) if keys else ("all",))
        out = pd.DataFrame([*parts, total])
        out.index = pd.MultiIndex.from_tuples(out.index, names=keys or ["rows"])
        out["n"] = out["n"].astype(int)
        return out


def _network_call(row: dict) -> Any:
    """A no-argument call running the row's network, in eval mode and its precision, on the
    input the profiler gives it (:meth:`carb_lib.devices.CpuDevice.prepare`)."""
    from carb_lib.devices import _dtype, _make_input
    from carb_lib.families import get_family
    from carb_lib.protocol import Protocol

    fam = get_family(str(row["family"]))
    config = fam.from_row(row)
    dtype = _dtype(config.precision)
    model = fam.build_model(config).to(dtype).eval()
    x = _make_input(config, Protocol(), "cpu", dtype)
    return lambda: model(x)


def additivity_check(rows: pd.DataFrame, model: KernelModel | None = None, *, threads: int = 1,
                     window_s: float = 0.02, n_windows: int = 5,
                     progress: bool = True) -> AdditivityCheck:
    """Time each row's network whole and operator by operator, with the same harness.

    Parameters
    ----------
    rows : pandas.DataFrame
        Measured rows (family config columns, ``batch``, ``precision``, ``latency_ms``) of
        families that build a network (``build_model``; 3-channel square input).
    model : KernelModel, optional
        A fitted kernel model: adds its summed prediction, ``kernel_ms`` (NaN without one).
    threads : int, default=1
        Intra-op threads (the profiler's protocol uses 1).
    window_s, n_windows : float, int
        Timing windows, as :func:`~carb_lib.kernels.bench_kernels`.
    progress : bool, default=True
        A tqdm bar over the rows.

    Returns
    -------
    AdditivityCheck
    """
    from carb_lib.kernels import with_kernel_column

    rows = _checked_rows(rows, "additivity_check")
    kern = (with_kernel_column(rows, model)[KERNEL_FEATURE].to_numpy() if model is not None
            else np.full(len(rows), np.nan))
    out = []
    for net_ms, distinct in _timed_networks(rows, threads=threads, window_s=window_s,
                                            n_windows=n_windows, progress=progress):
        alone = float((distinct["time_ms"] * distinct["count"]).sum())
        out.append({"network_ms": net_ms, "ops_alone_ms": alone,
                    "n_ops": int(distinct["count"].sum())})
    res = pd.DataFrame(out)
    res[KERNEL_FEATURE] = kern
    cfg = _config_columns(rows)
    frame = pd.concat([rows[cfg], rows[["latency_ms"]], res], axis=1)
    return AdditivityCheck(frame[[*cfg, *CHECK_COLUMNS]])


def _checked_rows(rows: pd.DataFrame, what: str) -> pd.DataFrame:
    """``rows`` reindexed from 0, or one ``ValueError`` for no rows or a missing column."""
    if len(rows) == 0:
        raise ValueError(f"{what} needs at least one row")
    missing = [c for c in ("family", "resolution", "batch", "precision", "latency_ms")
               if c not in rows.columns]
    if missing:
        raise ValueError(f"rows lack column(s) {missing}")
    return rows.reset_index(drop=True)


def _config_columns(rows: pd.DataFrame) -> list[str]:
    """``family`` and every config column of the rows' families that the rows carry."""
    from carb_lib.families import get_family

    cols: list[str] = []
    for name in pd.unique(rows["family"].astype(str)):
        for c in ("family", *get_family(name).config_columns):
            if c in rows.columns and c not in cols:
                cols.append(c)
    return cols


def _timed_networks(rows: pd.DataFrame, *, threads: int, window_s: float, n_windows: int,
                    progress: bool):
    """For each row (in order): its network timed now (ms) and its distinct operators
    (:data:`OP_COLUMNS`, ``batch``, ``precision``, ``count`` per forward pass) timed alone
    with the same harness (``time_ms``, ``faults_per_call``)."""
    import torch
    from tqdm.auto import tqdm

    ops, arch_id = network_ops(rows)
    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        for i in tqdm(range(len(rows)), desc="networks", disable=not progress):
            row = rows.iloc[i].to_dict()
            net_s = _time_call(_network_call(row), window_s, n_windows)[0]
            mine = ops[ops["arch_id"] == arch_id[i]]
            count = mine.groupby(list(OP_COLUMNS), sort=False).size().rename("count")
            distinct = count.reset_index().assign(batch=int(row["batch"]),
                                                  precision=row["precision"])
            timed = bench_kernels(distinct.drop(columns="count"), threads=threads,
                                  window_s=window_s, n_windows=n_windows, progress=False,
                                  platform="check")
            yield 1e3 * net_s, distinct.assign(
                time_ms=timed["time_ms"].to_numpy(),
                faults_per_call=timed["faults_per_call"].to_numpy())
    finally:
        torch.set_num_threads(before)


@dataclass
class OperatorBreakdown:
    """Networks timed whole and operator by operator, each operator beside the kernel model's
    prediction (:func:`operator_breakdown`): *which* operators the model gets wrong.

    Attributes
    ----------
    networks : pandas.DataFrame
        One row per network (``net``, its index): config columns, ``latency_ms`` (stored),
        ``network_ms`` (timed now), ``ops_alone_ms``, ``kernel_ms`` (both summed over its
        operators with their multiplicity).
    ops : pandas.DataFrame
        One row per network and distinct operator: ``net``, ``family``, :data:`OP_COLUMNS`,
        ``batch``, ``precision``, ``count``, ``time_ms`` (timed alone now, per call),
        ``predicted_ms`` (the kernel model, per call), ``faults_per_call``.
    """

    networks: pd.DataFrame
    ops: pd.DataFrame

    def by_kind(self, by: tuple[str, ...] = ("family", "precision")) -> pd.DataFrame:
        """Per group and operator kind: the kind's share of its networks' operator time
        (``share_alone``), and predicted / timed alone summed over the group (``model``: 1 is
        exact; < 1 the model is too fast) with the median per operator (``model_median``)."""
        o = self.ops.assign(alone=self.ops["time_ms"] * self.ops["count"],
                            pred=self.ops["predicted_ms"] * self.ops["count"],
                            ratio=self.ops["predicted_ms"] / self.ops["time_ms"])
        keys = [c for c in by if c in o.columns]
        total = o.groupby(keys)["alone"].transform("sum")
        g = o.assign(share=o["alone"] / total).groupby([*keys, "kind"], sort=True)
        out = pd.DataFrame({"n_ops": g.size(), "share_alone": g["share"].sum(),
                            "model": g["pred"].sum() / g["alone"].sum(),
                            "model_median": g["ratio"].median()})
        return out


def operator_breakdown(rows: pd.DataFrame, model: KernelModel, *, threads: int = 1,
                       window_s: float = 0.02, n_windows: int = 5,
                       progress: bool = True) -> OperatorBreakdown:
    """Time each row's network whole and each of its operators alone, and put the kernel
    model's prediction beside every operator.

    :func:`additivity_check` with the operators kept: it says whether the kernel law's error
    on a family is additivity (the network against its operators) or the kernel model, and
    then which operator kinds carry the model's part. A measurement: run it on a quiet
    machine.

    Parameters
    ----------
    rows : pandas.DataFrame
        Measured rows, as :func:`additivity_check`.
    model : KernelModel
        A fitted kernel model of this CPU.
    threads, window_s, n_windows, progress
        As :func:`additivity_check`.

    Returns
    -------
    OperatorBreakdown

    Examples
    --------
    >>> bd = operator_breakdown(rows.head(4), model)                    # doctest: +SKIP
    >>> bd.by_kind()                                                   # doctest: +SKIP
    """
    rows = _checked_rows(rows, "operator_breakdown")
    nets, parts = [], []
    for i, (net_ms, distinct) in enumerate(_timed_networks(
            rows, threads=threads, window_s=window_s, n_windows=n_windows, progress=progress)):
        pred = model.predict(distinct[[*OP_COLUMNS, "batch", "precision"]])
        parts.append(distinct.assign(net=i, family=str(rows.at[i, "family"]),
                                     predicted_ms=pred))
        nets.append({"network_ms": net_ms,
                     "ops_alone_ms": float((distinct["time_ms"] * distinct["count"]).sum()),
                     KERNEL_FEATURE: float((pred * distinct["count"]).sum())})
    cfg = _config_columns(rows)
    networks = pd.concat([rows[cfg], rows[["latency_ms"]], pd.DataFrame(nets)], axis=1)
    ops = pd.concat(parts, ignore_index=True)
    ops = ops[["net", "family", *OP_COLUMNS, "batch", "precision", "count", "time_ms",
               "predicted_ms", "faults_per_call"]]
    return OperatorBreakdown(networks.rename_axis("net").reset_index(), ops)


# --------------------------------------------------------------------------- paired variants
@dataclass
class PairedVariants:
    """Two :class:`~carb_lib.kernels.KernelModel` variants on the same held-out operators.

    Attributes
    ----------
    scores : pandas.DataFrame
        One row per split seed and variant (``seed``, ``variant``, ``mape_pct``, ``spearman``):
        a random 20 % held out, the same for both variants of a seed.
    largest_mape_pct : dict of str to float
        Each variant's MAPE on the largest 15 % of each kind and precision
        (:func:`~carb_lib.kernels.largest_holdout`).
    n_largest : int
        Operators in that hold-out.
    """

    scores: pd.DataFrame
    largest_mape_pct: dict[str, float]
    n_largest: int

    @property
    def wide(self) -> pd.DataFrame:
        """Held-out MAPE (%) per seed (rows) and variant (columns, base first)."""
        return self.scores.pivot(index="seed", columns="variant", values="mape_pct")[
            list(self.largest_mape_pct)]

    @property
    def gap(self) -> pd.Series:
        """Per-seed MAPE of the candidate minus the base (< 0: the candidate is ahead)."""
        base, cand = list(self.largest_mape_pct)
        return self.wide[cand] - self.wide[base]

    @property
    def gap_se(self) -> float:
        """Standard error of the mean paired gap over seeds."""
        return float(self.gap.std(ddof=1) / np.sqrt(len(self.gap)))

    def report(self) -> str:
        """The per-seed MAPEs, each variant's means and largest-operator MAPE, the paired gap and
        the rule's verdict, as text."""
        base, cand = list(self.largest_mape_pct)
        wide, gap, se = self.wide, self.gap, self.gap_se
        lines = ["held-out MAPE % per seed:", wide.round(3).to_string(), ""]
        for name in (base, cand):
            lines.append(f"{name:>8}: random {wide[name].mean():.2f} ± {wide[name].std():.2f} %, "
                         f"largest {self.largest_mape_pct[name]:.2f} %")
        lines.append(f"paired gap {cand} - {base}: {gap.mean():+.3f} ± {se:.3f} (SE over seeds; "
                     f"{gap.mean() / se:+.2f} SE); {cand} ahead on {int((gap < 0).sum())} of "
                     f"{len(gap)} seeds")
        verdict = f"switch to {cand}" if self.candidate_wins() else f"keep {base}"
        lines.append(f"rule ({cand} if ahead by > 1 SE on random and not behind on the largest): "
                     f"{verdict}")
        return "\n".join(lines) + "\n"

    def candidate_wins(self) -> bool:
        """The rule fixed in session 16: the candidate replaces the base if it is ahead on the
        random hold-outs by more than one standard error of the paired gap *and* not behind on
        the largest operators."""
        base, cand = list(self.largest_mape_pct)
        return bool(self.gap.mean() < -self.gap_se
                    and self.largest_mape_pct[cand] <= self.largest_mape_pct[base])


def paired_variants(bench: pd.DataFrame, base: dict[str, Any], candidate: dict[str, Any], *,
                    seeds: int = 10, names: tuple[str, str] | None = None) -> PairedVariants:
    """Score two kernel-model variants (``KernelModel`` keyword arguments ``base`` and
    ``candidate``) on the same random 20 % hold-outs of ``bench`` (``seeds`` split seeds,
    paired) and on the largest-15 % hold-out. Only operators are read.

    Examples
    --------
    >>> pv = paired_variants(bench, {"target": "roofline"}, {"target": "flops"},
    ...                      names=("roofline", "flops"))                # doctest: +SKIP
    >>> pv.gap.mean(), pv.gap_se, pv.candidate_wins()                    # doctest: +SKIP
    """
    if seeds < 2:
        raise ValueError(f"a paired comparison needs >= 2 seeds, got {seeds}")
    names = names or ("base", "candidate")
    if len(set(names)) != 2:
        raise ValueError(f"the two variants need two names, got {names}")
    variants = dict(zip(names, (base, candidate), strict=True))
    rows = []
    for seed in range(seeds):
        for name, params in variants.items():
            chk = holdout_check(bench, random_state=seed, **params)
            rows.append({"seed": seed, "variant": name, "mape_pct": chk.metrics["mape_pct"],
                         "spearman": chk.metrics["spearman"]})
    big, n_largest = {}, 0
    for name, params in variants.items():
        largest, ratio = largest_holdout(bench, **params)
        big[name] = float(100 * np.mean(np.abs(ratio - 1)))
        n_largest = int(largest.sum())
    return PairedVariants(pd.DataFrame(rows), big, n_largest)
