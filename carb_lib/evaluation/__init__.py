"""Evaluate CARB (:mod:`carb_lib.ensemble`) against baselines, ablations and held-out regimes.

Modules
-------
:mod:`~carb_lib.evaluation.splits`
    :func:`prepare_dataset`; the paper's stratified 70/15/15 split, the grouped-by-architecture
    split and the extrapolation splits; batch and depth tiers, the stress flag.
:mod:`~carb_lib.evaluation.scoring`
    Tidy metric tables (one metric implementation: :mod:`carb_lib.core.metrics`), the noise floor.
:mod:`~carb_lib.evaluation.models`
    Baseline B1 (FLOPs only), the CARB variants of the ablations, the quiet fit.
:mod:`~carb_lib.evaluation.intervals`
    Empirical coverage and width of the conformal intervals per batch regime.
:mod:`~carb_lib.evaluation.protocol`
    :func:`evaluate_protocol` (seeds, grouped and extrapolation splits, ablation, coverage,
    base-law constants) -> :class:`ProtocolResult`; :func:`choose_default`,
    :func:`compare_presets`.
:mod:`~carb_lib.evaluation.claims`
    Claim rows next to the paper's reported values.
:mod:`~carb_lib.evaluation.kernel_law`
    :func:`kernel_law_comparison` -> :class:`KernelLawComparison`: the kernel latency law
    against the roofline law on the random and batch extrapolation splits.
:mod:`~carb_lib.evaluation.cross_family`
    :func:`cross_family_evaluation` -> :class:`CrossFamilyResult`: families the model never
    saw, zero-shot, with k rows and against their own model; :func:`family_candidates`.

Every name is importable from ``carb_lib.evaluation`` itself.
"""

from carb_lib.core.claims import CLAIM_COLUMNS
from carb_lib.evaluation.claims import PAPER_R2, claim_rows, protocol_claim_rows
from carb_lib.evaluation.cross_family import (
    CrossFamilyResult,
    cross_family_evaluation,
    family_candidates,
    issue_targets,
    law_comparison,
)
from carb_lib.evaluation.intervals import coverage_rows
from carb_lib.evaluation.kernel_law import KernelLawComparison, kernel_law_comparison
from carb_lib.evaluation.models import (
    ABLATION_VARIANTS,
    QUICK_VARIANTS,
    fit_quiet,
    flops_baseline,
)
from carb_lib.evaluation.protocol import (
    ProtocolResult,
    choose_default,
    compare_presets,
    evaluate_protocol,
)
from carb_lib.evaluation.scoring import (
    METRIC_COLUMNS,
    noise_floor_cv,
    regression_metrics,
    remeasurement_floor,
    remeasurement_noise,
)
from carb_lib.evaluation.splits import (
    ARCH_COLUMNS,
    EXTRAPOLATION_KINDS,
    STRESS_UTIL_PCT,
    architecture_key,
    batch_tier,
    depth_tier,
    extrapolation_splits,
    grouped_split,
    prepare_dataset,
    stratified_split,
    stress_flag,
)

__all__ = [
    "ABLATION_VARIANTS",
    "QUICK_VARIANTS",
    "ARCH_COLUMNS",
    "CLAIM_COLUMNS",
    "EXTRAPOLATION_KINDS",
    "METRIC_COLUMNS",
    "PAPER_R2",
    "STRESS_UTIL_PCT",
    "CrossFamilyResult",
    "KernelLawComparison",
    "ProtocolResult",
    "architecture_key",
    "batch_tier",
    "choose_default",
    "claim_rows",
    "compare_presets",
    "coverage_rows",
    "cross_family_evaluation",
    "depth_tier",
    "evaluate_protocol",
    "extrapolation_splits",
    "family_candidates",
    "fit_quiet",
    "flops_baseline",
    "grouped_split",
    "issue_targets",
    "kernel_law_comparison",
    "law_comparison",
    "noise_floor_cv",
    "prepare_dataset",
    "protocol_claim_rows",
    "regression_metrics",
    "remeasurement_floor",
    "remeasurement_noise",
    "stratified_split",
    "stress_flag",
]
