"""Deployment screening: budget filtering on conservative bounds, then Pareto shortlisting.

Workflow (the paper's screening, arXiv 2608.10506, generalised)

1. **Stage 1 - budgets.** Every candidate is predicted from its static features only (no
   telemetry: the candidates have never run). A candidate survives when the conformal *upper*
   bound of each budgeted metric, at the chosen coverage, is within the budget. A candidate can
   fail several budgets: :class:`ScreeningResult` counts failures per budget, the *first* failing
   budget (in the order given) and the candidates that fail *only* that budget.
2. **Stage 2 - Pareto front.** The survivors' non-dominated set on the objectives (point
   predictions by default), found by :func:`pareto_front` in O(n log^2 n) for 3 objectives and
   O(n log n) for 2, then ranked into a shortlist of ``k`` by NSGA-II crowding distance
   (extremes first; ``shortlist_method="knee"`` ranks by distance to the ideal point instead).
   If the front has fewer than ``k`` members the shortlist is filled from the next fronts.

Cross-platform variant (the paper's): rank all candidates with platform A's model, keep the top
``N``, rescore those with platform B's model, then apply stages 1 and 2 with B's predictions.

Objectives minimise predicted costs (``energy_j``, ``latency_ms``, ``peak_mem_mib`` or their
``_per_sample`` variants) and maximise a quality column the user supplies (e.g. ``accuracy``).
Without a quality column the named capacity proxy ``params`` (parameter count) is maximised and
the summary says so; ``use_quality=False`` gives a cost-only front.

The model is duck-typed: any object with ``predict_interval(df, coverage)`` returning ``{t}``,
``{t}_lo``, ``{t}_hi`` per target, and attributes ``targets_``, ``platform_``, ``feature_set``
(``feature_names_in_`` is used when present) can be screened with, e.g.
:class:`carb_lib.ensemble.CARBRegressor`.

Validation helpers: :func:`validate_against_measured` (held-out measured rows: budget
classification accuracy, false-accept rate, shortlist error, recall of the measured front,
hypervolume ratio; a :class:`ScreeningValidation`) and :func:`validate_on_hardware` (re-profile
the shortlist; a table and a :class:`HardwareSummary`).

Modules
-------
``budgets``
    :class:`Budget`, :class:`Objective`, :class:`DeploymentSpec` (parsing, units, checks).
``pareto``
    :func:`pareto_front`, :func:`pareto_ranks`, :func:`crowding_distance`,
    :func:`knee_distance`, :func:`hypervolume`.
``screen`` and ``result``
    :func:`prepare_candidates`, :func:`load_candidates`, :func:`check_model`, :func:`screen`
    and its :class:`ScreeningResult`.
``validate`` and ``hardware``
    :func:`validate_against_measured`, :func:`validate_on_hardware` and their formatting.
``scenarios``
    :class:`Scenario`, :func:`default_scenarios`, :func:`quantile_budget`,
    :func:`screening_claim_rows`.
"""

from __future__ import annotations

from carb_lib.screening.budgets import (
    BUDGET_METRICS,
    PER_SAMPLE_TARGETS,
    QUALITY_PROXY,
    TARGETS,
    Budget,
    DeploymentSpec,
    Objective,
    default_objectives,
)
from carb_lib.screening.hardware import (
    CONFIG_KEYS,
    HardwareSummary,
    format_hardware,
    validate_on_hardware,
)
from carb_lib.screening.pareto import (
    crowding_distance,
    hypervolume,
    knee_distance,
    pareto_front,
    pareto_ranks,
)
from carb_lib.screening.result import ScreeningResult, check_shortlist_outs, tightest_budget
from carb_lib.screening.scenarios import (
    PAPER_SCREENING,
    Scenario,
    default_scenarios,
    quantile_budget,
    round_sig,
    screening_claim_rows,
)
from carb_lib.screening.screen import (
    TELEMETRY_COLUMNS,
    check_model,
    load_candidates,
    prepare_candidates,
    screen,
)
from carb_lib.screening.validate import (
    BudgetClassification,
    ScreeningValidation,
    ShortlistError,
    format_validation,
    validate_against_measured,
)

__all__ = [
    "check_shortlist_outs", "tightest_budget",
    "BUDGET_METRICS",
    "CONFIG_KEYS",
    "PAPER_SCREENING",
    "PER_SAMPLE_TARGETS",
    "QUALITY_PROXY",
    "TARGETS",
    "TELEMETRY_COLUMNS",
    "Budget",
    "BudgetClassification",
    "DeploymentSpec",
    "HardwareSummary",
    "Objective",
    "Scenario",
    "ScreeningResult",
    "ScreeningValidation",
    "ShortlistError",
    "check_model",
    "crowding_distance",
    "default_objectives",
    "default_scenarios",
    "format_hardware",
    "format_validation",
    "hypervolume",
    "knee_distance",
    "load_candidates",
    "pareto_front",
    "pareto_ranks",
    "prepare_candidates",
    "quantile_budget",
    "round_sig",
    "screen",
    "screening_claim_rows",
    "validate_against_measured",
    "validate_on_hardware",
]
