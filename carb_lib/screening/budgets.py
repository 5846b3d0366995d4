"""Budgets, objectives and the deployment spec of a screening (parsing and validation).

A :class:`Budget` is an upper limit on one predicted cost (``"energy_j<=75"``,
``"latency<=10ms"``, ``"peak_mem<=0.5GiB"``); an :class:`Objective` a column to minimise or
maximise; a :class:`DeploymentSpec` gathers them with the screening settings.

Examples
--------
>>> from carb_lib.screening import Budget
>>> Budget.parse("peak_mem<=0.5GiB").label
'peak_mem_mib<=512'
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from carb_lib.core.vocab import (
    DEFAULT_COVERAGE,
    TARGET_SHORT,
    TARGET_UNITS,
    TARGETS,
    coverage_value,
)

__all__ = ["BUDGET_METRICS", "PER_SAMPLE_TARGETS", "QUALITY_PROXY", "TARGETS", "Budget",
           "DeploymentSpec", "Objective", "default_objectives"]

#: Metrics a budget may name (targets and per-sample variants, divided by ``batch``).
PER_SAMPLE_TARGETS: tuple[str, ...] = ("energy_j", "latency_ms")
BUDGET_METRICS: tuple[str, ...] = TARGETS + tuple(f"{t}_per_sample" for t in PER_SAMPLE_TARGETS)
#: Capacity proxy maximised when no quality column is given.
QUALITY_PROXY = "params"

# Units a budget may be written in: unit -> (quantity, factor to the target's unit J / ms / MiB).
# The quantities are the targets' short names (carb_lib.core.vocab.TARGET_SHORT).
_UNITS: dict[str, tuple[str, float]] = {
    "j": ("energy", 1.0), "mj": ("energy", 1e-3), "kj": ("energy", 1e3), "uj": ("energy", 1e-6),
    "wh": ("energy", 3600.0),
    "ms": ("latency", 1.0), "s": ("latency", 1e3), "us": ("latency", 1e-3),
    "mib": ("memory", 1.0), "gib": ("memory", 1024.0), "kib": ("memory", 1 / 1024),
    "mb": ("memory", 1e6 / 2**20), "gb": ("memory", 1e9 / 2**20), "kb": ("memory", 1e3 / 2**20),
}
_QUANTITY_TARGET = {short: target for target, short in TARGET_SHORT.items()}
_QUANTITY_ALIASES = {"energy": "energy", "latency": "latency", "memory": "memory",
                     "mem": "memory", "peak_mem": "memory", "peak_memory": "memory"}
_BUDGET_RE = re.compile(
    r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?P<op><=|<|>=|>|==|=)\s*"
    r"(?P<value>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<unit>[A-Za-z]*)\s*$"
)


# ============================================================================ budgets
@dataclass(frozen=True)
class Budget:
    """An upper limit on one predicted cost.

    Attributes
    ----------
    metric : str
        One of :data:`BUDGET_METRICS`, e.g. ``"energy_j"`` or ``"latency_ms_per_sample"``.
    limit : float
        The limit in the metric's unit (J, ms, MiB; per sample for ``*_per_sample``).
    strict : bool
        ``<`` rather than ``<=``.
    text : str
        The string it was parsed from.
    """

    metric: str
    limit: float
    strict: bool = False
    text: str = ""

    @property
    def target(self) -> str:
        """The model target the metric derives from (``energy_j`` for ``energy_j_per_sample``)."""
        return self.metric.removesuffix("_per_sample")

    @property
    def per_sample(self) -> bool:
        return self.metric.endswith("_per_sample")

    @property
    def label(self) -> str:
        return f"{self.metric}{'<' if self.strict else '<='}{self.limit:g}"

    def holds(self, values: np.ndarray) -> np.ndarray:
        """Element-wise: is ``values`` within the budget (NaN never is)."""
        v = np.asarray(values, dtype=float)
        with np.errstate(invalid="ignore"):
            return v < self.limit if self.strict else v <= self.limit

    @classmethod
    def parse(cls, text: str | Budget) -> Budget:
        """Parse ``"energy_j<=75"``, ``"latency_ms_per_sample<=0.5"``, ``"latency<=10ms"``,
        ``"peak_mem<=0.5GiB"`` ...

        The unit is part of the metric name (``energy_j``, ``latency_ms``, ``peak_mem_mib``) or
        follows the number (J, mJ, kJ, Wh, ms, s, us, MiB, GiB, KiB, MB, GB, kB); a number with
        a unit is converted to the metric's unit.

        Raises
        ------
        ValueError
            No unit, an unknown metric or unit, a unit of another quantity, a lower bound
            (``>=``), or a negative / non-finite limit.
        """
        if isinstance(text, Budget):
            return text
        if not isinstance(text, str):
            raise ValueError(f"budget must be a string like 'energy_j<=75', got {text!r}")
        m = _BUDGET_RE.match(text)
        if m is None:
            raise ValueError(
                f"cannot parse budget {text!r}: expected '<metric><=<number>[unit]', e.g. "
                f"'energy_j<=75', 'latency_ms_per_sample<=0.5' or 'peak_mem<=512MiB'; "
                f"metrics: {list(BUDGET_METRICS)}"
            )
        name, op, value, unit = m["name"].lower(), m["op"], float(m["value"]), m["unit"].lower()
        if op not in ("<=", "<"):
            raise ValueError(
                f"budget {text!r}: budgets are upper limits on costs ('<=' or '<'), got {op!r}"
            )
        per_sample = name.endswith("_per_sample")
        base = name.removesuffix("_per_sample")
        if base in TARGETS:
            target = base
        elif base in _QUANTITY_ALIASES:
            if not unit:
                target = _QUANTITY_TARGET[_QUANTITY_ALIASES[base]]
                raise ValueError(
                    f"budget {text!r} has no unit: write the unit in the metric name "
                    f"('{target}{'_per_sample' if per_sample else ''}<={value:g}') or after "
                    f"the number (e.g. '{base}<={value:g}{_canon_unit(target)}')"
                )
            target = _QUANTITY_TARGET[_QUANTITY_ALIASES[base]]
        else:
            raise ValueError(
                f"budget {text!r}: unknown metric {m['name']!r}; valid metrics: "
                f"{list(BUDGET_METRICS)} (or energy/latency/peak_mem with a unit after the number)"
            )
        if unit:
            if unit not in _UNITS:
                raise ValueError(
                    f"budget {text!r}: unknown unit {m['unit']!r}; known units: {sorted(_UNITS)}"
                )
            quantity, factor = _UNITS[unit]
            if _QUANTITY_TARGET[quantity] != target:
                raise ValueError(
                    f"budget {text!r}: unit {m['unit']!r} measures {quantity}, "
                    f"but {target} is not {quantity}"
                )
            value = value * factor
        if per_sample and target not in PER_SAMPLE_TARGETS:
            raise ValueError(
                f"budget {text!r}: per-sample budgets exist for {list(PER_SAMPLE_TARGETS)} only "
                f"(peak memory does not divide by the batch)"
            )
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"budget {text!r}: the limit must be finite and >= 0, got {value:g}")
        metric = f"{target}_per_sample" if per_sample else target
        return cls(metric=metric, limit=float(value), strict=(op == "<"), text=text.strip())


def _canon_unit(target: str) -> str:
    return TARGET_UNITS[target]


@dataclass(frozen=True)
class Objective:
    """One objective: ``column`` minimised (``sense="min"``) or maximised (``"max"``)."""

    column: str
    sense: str = "min"
    proxy: bool = False

    @property
    def label(self) -> str:
        return f"{self.sense}:{self.column}" + (" (capacity proxy)" if self.proxy else "")

    @property
    def predicted(self) -> bool:
        return self.column in BUDGET_METRICS

    @classmethod
    def parse(cls, text: str | Objective) -> Objective:
        """``"energy_j"``, ``"min:latency_ms_per_sample"``, ``"max:accuracy"``."""
        if isinstance(text, Objective):
            return text
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"objective must be a non-empty string, got {text!r}")
        s = text.strip()
        sense = "min"
        if ":" in s:
            sense, s = (p.strip() for p in s.split(":", 1))
            sense = {"min": "min", "minimise": "min", "minimize": "min", "max": "max",
                     "maximise": "max", "maximize": "max"}.get(sense.lower(), "")
            if not sense or not s:
                raise ValueError(f"objective {text!r}: expected 'min:<column>' or 'max:<column>'")
        if s in BUDGET_METRICS and sense == "max":
            raise ValueError(f"objective {text!r}: costs are minimised, not maximised")
        return cls(column=s, sense=sense)


#: Costs a screen minimises when none is named: latency and peak memory, and energy where
#: the model predicts it (:func:`default_objectives`).
DEFAULT_OBJECTIVES: tuple[str, ...] = ("latency_ms", "peak_mem_mib", "energy_j")


def default_objectives(model: Any) -> list[str]:
    """The costs to minimise when the user names none: those of :data:`DEFAULT_OBJECTIVES`
    that ``model`` predicts (its ``targets_``), latency and peak memory at least.

    >>> class M: targets_ = ["peak_mem_mib", "energy_j", "latency_ms"]
    >>> default_objectives(M())
    ['latency_ms', 'peak_mem_mib', 'energy_j']
    """
    have = set(getattr(model, "targets_", None) or ())
    return [t for t in DEFAULT_OBJECTIVES if t in have or t != "energy_j"]


# ============================================================================ spec
@dataclass
class DeploymentSpec:
    """What a deployment needs: budgets, objectives and the screening settings.

    Parameters
    ----------
    platform : str or None
        Platform the deployment runs on (``"h200"``, ``"cpu_epyc_2c"``); the model must have been
        trained for it. None: take the model's.
    budgets : sequence of str or Budget
        Upper limits, e.g. ``["energy_j<=75", "peak_mem_mib<=512"]`` (see :meth:`Budget.parse`).
    objectives : sequence of str
        Costs to minimise (targets or ``*_per_sample``), optionally ``"max:<column>"`` for the
        quality column (same as ``quality=<column>``) or ``"min:<column>"`` for any column of
        the candidates.
    quality : str or None
        Column to maximise (e.g. ``"accuracy"``). None: maximise :data:`QUALITY_PROXY`
        (``params``) as a named capacity proxy, unless ``use_quality`` is False.
    use_quality : bool
        Include the quality (or proxy) objective.
    coverage : float
        Conformal interval coverage; stage 1 compares the upper bound at this coverage.
    k : int
        Shortlist size.
    shortlist_method : {"crowding", "knee"}
        How the front is ranked into the shortlist.
    rank_on : {"point", "upper"}
        Objective values for the Pareto front: point predictions or upper bounds.
    feature_set : str or None
        Expected ``model.feature_set``; checked when given.
    """

    platform: str | None = None
    budgets: Sequence[str | Budget] = ()
    objectives: Sequence[str | Objective] = ("latency_ms", "peak_mem_mib")
    quality: str | None = None
    use_quality: bool = True
    coverage: float = DEFAULT_COVERAGE
    k: int = 10
    shortlist_method: str = "crowding"
    rank_on: str = "point"
    feature_set: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.budgets, (str, Budget)):
            self.budgets = [self.budgets]
        self.budgets = tuple(Budget.parse(b) for b in self.budgets)
        labels = [b.label for b in self.budgets]
        twice = sorted({x for x in labels if labels.count(x) > 1})
        if twice:
            raise ValueError(f"budget {twice[0]!r} is given twice; give each budget once")
        if isinstance(self.objectives, (str, Objective)):
            self.objectives = [self.objectives]
        objs = [Objective.parse(o) for o in self.objectives]
        for o in objs:
            if o.sense == "max":
                if self.quality is not None and self.quality != o.column:
                    raise ValueError(
                        f"two quality objectives: quality={self.quality!r} and {o.label!r}"
                    )
                self.quality = o.column
        objs = [o for o in objs if o.sense == "min"]
        if len({o.column for o in objs}) != len(objs):
            raise ValueError(f"duplicate objectives: {[o.label for o in objs]}")
        if self.use_quality or self.quality is not None:
            self.use_quality = True
            col = self.quality if self.quality is not None else QUALITY_PROXY
            objs.append(Objective(col, "max", proxy=self.quality is None))
        if not objs:
            raise ValueError("no objectives: give at least one cost objective or a quality column")
        self.objectives = tuple(objs)
        self.coverage = coverage_value(self.coverage)
        if int(self.k) != self.k or self.k < 1:
            raise ValueError(f"k must be a positive integer, got {self.k!r}")
        self.k = int(self.k)
        if self.shortlist_method not in ("crowding", "knee"):
            raise ValueError(
                f"shortlist_method must be 'crowding' or 'knee', got {self.shortlist_method!r}"
            )
        if self.rank_on not in ("point", "upper"):
            raise ValueError(f"rank_on must be 'point' or 'upper', got {self.rank_on!r}")

    @property
    def quality_objective(self) -> Objective | None:
        return next((o for o in self.objectives if o.sense == "max"), None)

    @property
    def needed_targets(self) -> list[str]:
        """Model targets the budgets and predicted objectives need."""
        need = [b.target for b in self.budgets]
        need += [o.column.removesuffix("_per_sample") for o in self.objectives if o.predicted]
        return list(dict.fromkeys(need))

    def describe(self) -> dict[str, Any]:
        q = self.quality_objective
        return {
            "platform": self.platform,
            "budgets": [b.label for b in self.budgets],
            "objectives": [o.label for o in self.objectives],
            "quality": (None if q is None else q.column),
            "quality_is_proxy": bool(q is not None and q.proxy),
            "coverage": self.coverage,
            "k": self.k,
            "shortlist_method": self.shortlist_method,
            "rank_on": self.rank_on,
        }
