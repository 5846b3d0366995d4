"""Figures for every stage, in one consistent seaborn style.

Every figure is saved through :func:`save_figure` as PNG and PDF under a stable name in the
figure folder. Axis labels and titles are words with units, never column names
(:func:`words`, checked by :func:`raw_names`); colours come from one colour-blind-safe palette
(:func:`colours`). Axis labels carry units (:data:`carb_lib.core.vocab.AXIS_LABELS`); the platform and
the dataset are named in titles. Functions take tidy DataFrames (from the analysis modules) and
return a matplotlib Figure. Importing the package applies :func:`apply_style` once.

Modules, by stage: ``design_space`` (00), ``characterization`` and ``explorer`` (01),
``transfer`` (02), ``carb`` (03), ``screening`` (04), ``cross_family`` (05); ``_style`` holds the style and
:func:`save_figure`.
"""

from __future__ import annotations

from carb_lib.plots._style import (
    DPI,
    FONT,
    OKABE_ITO,
    STYLE,
    apply_style,
    colours,
    plt,
    raw_names,
    save_and_show,
    save_figure,
    sns,
    words,
)
from carb_lib.plots.carb import (
    plot_carb_model_comparison,
    plot_carb_pred_vs_measured,
)
from carb_lib.plots.characterization import (
    plot_divergence,
    plot_effects,
    plot_noise,
    plot_power_vs_utilisation,
    plot_scaling,
    plot_target_distributions,
)
from carb_lib.plots.cross_family import (
    plot_cross_family_predictions,
    plot_cross_family_summary,
)
from carb_lib.plots.design_space import plot_feature_check, plot_static_feature_distributions
from carb_lib.plots.explorer import plot_explorer
from carb_lib.plots.screening import (
    plot_screening_front,
    plot_screening_funnel,
    plot_screening_validation,
)
from carb_lib.plots.transfer import (
    plot_fewshot_curves,
    plot_help_comparison,
    plot_slope_matrix,
    plot_transfer_matrix,
)

__all__ = [
    "DPI",
    "FONT",
    "OKABE_ITO",
    "STYLE",
    "apply_style",
    "colours",
    "plot_carb_model_comparison",
    "plot_carb_pred_vs_measured",
    "plot_cross_family_predictions",
    "plot_cross_family_summary",
    "plot_divergence",
    "plot_effects",
    "plot_explorer",
    "plot_feature_check",
    "plot_fewshot_curves",
    "plot_help_comparison",
    "plot_noise",
    "plot_power_vs_utilisation",
    "plot_scaling",
    "plot_screening_front",
    "plot_screening_funnel",
    "plot_screening_validation",
    "plot_slope_matrix",
    "plot_static_feature_distributions",
    "plot_target_distributions",
    "plot_transfer_matrix",
    "plt",
    "raw_names",
    "save_and_show",
    "save_figure",
    "sns",
    "words",
]

apply_style()
