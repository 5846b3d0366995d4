"""Interactive exploration for notebooks: the scaling explorer and "what does my network cost?".

Both tools have a pure core (a selection in, tidy tables and a figure out) that tests and
papermill runs use, and a thin ipywidgets front-end for JupyterLab (``make lab``).

* :func:`scaling_explorer` (notebook 01): a target against a workload feature on one platform,
  coloured and faceted by any column, filtered by block, precision, batch range and resolution,
  on log or linear axes, with the power law fitted (:func:`carb_lib.characterize.scaling.fit_scaling`, HC3
  95 % CI) to exactly the rows shown and the number of rows shown.
* :func:`network_cost` (notebook 03): a platform and a ResNet config chosen with widgets, its
  predicted cost with split-conformal intervals from a fitted
  :class:`carb_lib.ensemble.CARBRegressor`
  (:meth:`~carb_lib.ensemble.CARBRegressor.predict_interval`), the protocol it predicts for,
  the nearest measured rows and, per config column, whether the value lies outside the model's
  training range (an extrapolation: no interval is given there). ``platforms="shipped"`` offers
  every platform whose rows ship in ``data/`` (:mod:`carb_lib.app.cost_platforms`).

Every control, table header, fit summary and reason a person reads is in words
(:data:`carb_lib.core.vocab.DISPLAY`, :data:`~carb_lib.core.vocab.PLATFORM_NAMES`), numbers
rounded to their precision (:mod:`carb_lib.app.explore_format`).

Interactive or static: with ``interactive=None`` the widgets are used when ipywidgets is
installed, the code runs in a Jupyter kernel and the environment variable
:data:`STATIC_ENV` is unset. ``carb reproduce`` sets it, so papermill runs show a static figure
and tables for the default selection instead (an executed notebook or its HTML page has no
widget front-end).
"""

from __future__ import annotations

import html
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.app.cost_platforms import PlatformModels
from carb_lib.app.explore_cost import (  # the core, re-exported here  # noqa: F401
    _DISTANCE_NUMERIC,
    _MODULE_DISTANCE_NUMERIC,
    MODULE_RANGE_COLUMNS,
    RANGE_COLUMNS,
    UNITS,
    CostReport,
    cost_report,
    make_config,
    nearest_measured,
    training_ranges,
)
from carb_lib.app.explore_format import (
    fit_table,
    nearest_table,
    prediction_table,
    ranges_table,
    reason_words,
    sig,
)
from carb_lib.characterize.scaling import fit_scaling
from carb_lib.core.vocab import DEFAULT_COVERAGE, PRECISIONS, display_name, platform_name
from carb_lib.dataset.features import fill_static_features, with_static_features
from carb_lib.families.module import ModuleConfig
from carb_lib.families.space import BATCH_SIZES, DEPTHS, RESOLUTIONS, WIDTHS

#: Set (to anything but "" or "0") to force the static fallback; ``carb reproduce`` sets it.
STATIC_ENV = "CARB_STATIC"
X_CHOICES: tuple[str, ...] = ("flops", "batch", "activation_bytes", "params", "param_bytes",
                              "peak_act_bytes", "arith_intensity_flop_per_byte", "resolution",
                              "depth", "width")
HUE_CHOICES: tuple[str, ...] = ("batch", "precision", "block", "resolution", "depth", "width",
                                "early_downsample")
FACET_CHOICES: tuple[str, ...] = ("precision", "block", "early_downsample", "resolution")
COUNT_CLASS = "carb-explorer-count"  # CSS class of the "rows shown" line (the browser test)


def interactive_default() -> bool:
    """True when widgets can be shown: ipywidgets importable, running in a Jupyter kernel,
    and :data:`STATIC_ENV` not set."""
    if os.environ.get(STATIC_ENV, "") not in ("", "0"):
        return False
    try:
        import ipywidgets  # noqa: F401
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _show(obj) -> None:
    from IPython.display import display

    display(obj)


# =========================================================================== scaling explorer
@dataclass(frozen=True)
class Selection:
    """What the scaling explorer shows. ``None`` in a filter keeps every value."""

    platform: str | None = None
    target: str = "latency_ms"
    x: str = "flops"
    hue: str | None = "batch"
    facet: str | None = None
    blocks: tuple[str, ...] | None = None
    precisions: tuple[str, ...] | None = None
    resolutions: tuple[int, ...] | None = None
    batch_range: tuple[int, int] | None = None
    logx: bool = True
    logy: bool = True
    fit: bool = True


@dataclass
class ScalingView:
    """The result of one selection: the rows shown, the fit table and a one-line summary."""

    selection: Selection
    rows: pd.DataFrame
    n_total: int
    fits: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def n_shown(self) -> int:
        """Rows shown: those with a finite (positive, on a log axis) target and x."""
        return int(_plottable(self.rows, self.selection).sum())

    def overall_fit(self) -> dict[str, Any] | None:
        """The power law of all rows shown (``group_by == "all"``), or None if not fitted."""
        if self.fits is None or self.fits.empty:
            return None
        f = self.fits[(self.fits["group_by"] == "all") & (self.fits["testable"] == True)]  # noqa: E712
        return f.iloc[0].to_dict() if len(f) else None

    def summary(self) -> str:
        s = self.selection
        where = platform_name(s.platform) if s.platform else "all platforms"
        text = f"{self.n_shown:,} rows shown (of {self.n_total:,} ok rows of {where})"
        r = self.overall_fit()
        if r is not None:
            text += (f"; {display_name(s.target, unit=False)} ~ "
                     f"{display_name(s.x, unit=False)}^b, b = {r['exponent']:.3f} "
                     f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] (95 % CI, HC3), R² = {r['r2']:.2f}")
        elif s.fit:
            why = None
            if self.fits is not None and len(self.fits):
                why = self.fits["reason"].dropna().astype(str).head(1).tolist()
            text += f"; no power law: {reason_words(why[0] if why else None)}"
        return text


def _plottable(rows: pd.DataFrame, s: Selection) -> pd.Series:
    if rows.empty or s.target not in rows or s.x not in rows:
        return pd.Series(False, index=rows.index)
    y = pd.to_numeric(rows[s.target], errors="coerce").astype(float)
    x = pd.to_numeric(rows[s.x], errors="coerce").astype(float)
    keep = np.isfinite(y) & np.isfinite(x)
    if s.logx:
        keep &= x > 0
    if s.logy:
        keep &= y > 0
    return keep


def select_rows(ok: pd.DataFrame, s: Selection) -> pd.DataFrame:
    """The rows of ``ok`` (status-ok rows) matching the platform and filters of ``s``.

    Raises
    ------
    KeyError
        If a filter or the target / x / hue / facet names a column the data lacks.
    """
    for col in (s.target, s.x, s.hue, s.facet):
        if col is not None and col not in ok.columns:
            raise KeyError(f"column {col!r} not in the data")
    mask = pd.Series(True, index=ok.index)
    if s.platform is not None:
        mask &= ok["platform"].astype(str) == str(s.platform)
    for col, values in (("block", s.blocks), ("precision", s.precisions),
                        ("resolution", s.resolutions)):
        if values is not None:
            if col not in ok.columns:
                raise KeyError(f"filter column {col!r} not in the data")
            mask &= ok[col].astype(str).isin([str(v) for v in values]).fillna(False)
    if s.batch_range is not None:
        b = pd.to_numeric(ok["batch"], errors="coerce")
        mask &= ((b >= s.batch_range[0]) & (b <= s.batch_range[1])).fillna(False)
    return ok.loc[mask.astype(bool)]


def scaling_view(ok: pd.DataFrame, s: Selection) -> ScalingView:
    """Select the rows of ``s`` and fit ``target ~ x`` (all rows shown, and per facet value)."""
    base = ok if s.platform is None else ok.loc[ok["platform"].astype(str) == str(s.platform)]
    rows = select_rows(ok, s)
    fits = pd.DataFrame()
    if s.fit and len(rows):
        fits = fit_scaling(rows, targets=[s.target], x_cols=[s.x],
                           by=(None, s.facet) if s.facet else (None,))
    return ScalingView(s, rows, len(base), fits)


def plot_view(view: ScalingView, dataset_label: str = "measured"):
    """The figure of a :class:`ScalingView` (:func:`carb_lib.plots.plot_explorer`)."""
    from carb_lib import plots

    s = view.selection
    rows = view.rows.loc[_plottable(view.rows, s)]
    return plots.plot_explorer(rows, s.target, s.x, hue=s.hue, facet=s.facet,
                               fits=view.fits if s.fit else None, logx=s.logx, logy=s.logy,
                               platform=platform_name(s.platform) if s.platform else None,
                               dataset_label=dataset_label)


def _fit_columns(fits: pd.DataFrame) -> pd.DataFrame:
    """The fit table as a person reads it (:func:`carb_lib.app.explore_format.fit_table`)."""
    return fit_table(fits)


def _words(names) -> list[tuple[str, str]]:
    """(words, name) options of a control (:func:`carb_lib.core.vocab.display_name`)."""
    return [(display_name(n), n) for n in names]


class ScalingExplorer:
    """Widgets over :func:`scaling_view`; ``.widget`` is the box to display.

    ``.view`` is the current :class:`ScalingView`; every control change recomputes it, redraws
    the figure and the "rows shown" line (CSS class :data:`COUNT_CLASS`) and the fit table.
    """

    def __init__(self, ok: pd.DataFrame, selection: Selection, dataset_label=None):
        import ipywidgets as w

        self.ok = ok
        self._label = dataset_label
        platforms = sorted(ok["platform"].dropna().astype(str).unique())
        targets = measured_targets(ok)
        xs = [c for c in X_CHOICES if c in ok.columns]
        hues = [c for c in HUE_CHOICES if c in ok.columns]
        facets = [c for c in FACET_CHOICES if c in ok.columns]

        def values(col):
            if col not in ok.columns:
                return []
            return sorted(ok[col].dropna().unique().tolist(), key=lambda v: (str(type(v)), v))

        style = {"description_width": "initial"}
        lay = w.Layout(width="230px")
        self.platform = w.Dropdown(options=[(platform_name(p), p) for p in platforms],
                                   value=selection.platform or platforms[0],
                                   description="platform", style=style,
                                   layout=w.Layout(width="330px"))
        self.target = w.Dropdown(options=_words(targets), value=selection.target,
                                 description="target", style=style, layout=lay)
        self.x = w.Dropdown(options=_words(xs), value=selection.x, description="x axis",
                            style=style, layout=lay)
        # chosen by index: ipywidgets shows value=None as an empty box, not as "none"
        hue_opts = [("none", None)] + _words(hues)
        facet_opts = [("none", None)] + _words(facets)
        self.hue = w.Dropdown(options=hue_opts, index=_option_index(hue_opts, selection.hue),
                              description="colour", style=style, layout=lay)
        self.facet = w.Dropdown(options=facet_opts,
                                index=_option_index(facet_opts, selection.facet),
                                description="facet", style=style, layout=lay)
        self.filters = {}
        for col, chosen in (("block", selection.blocks), ("precision", selection.precisions),
                            ("resolution", selection.resolutions)):
            opts = values(col)
            if opts:
                self.filters[col] = w.SelectMultiple(
                    options=[(sig(o), o) for o in opts],
                    value=tuple(opts if chosen is None else
                                [o for o in opts if str(o) in map(str, chosen)]),
                    description=display_name(col, unit=False), rows=min(len(opts), 5),
                    style=style,
                    layout=w.Layout(width="230px"))
        batches = [int(b) for b in values("batch")] or [1]
        lo, hi = selection.batch_range or (batches[0], batches[-1])
        self.batch = w.SelectionRangeSlider(
            options=batches, index=(_nearest_index(batches, lo), _nearest_index(batches, hi)),
            description="batch size", style=style, layout=w.Layout(width="360px"))
        self.logx = w.Checkbox(value=selection.logx, description="log x", indent=False)
        self.logy = w.Checkbox(value=selection.logy, description="log y", indent=False)
        self.fit = w.Checkbox(value=selection.fit, description="fit power law", indent=False)
        self.count = w.HTML()
        self.count.add_class(COUNT_CLASS)
        self.figure = w.Output()
        self.table = w.Output()
        controls = [self.platform, self.target, self.x, self.hue, self.facet,
                    *self.filters.values(), self.batch, self.logx, self.logy, self.fit]
        for c in controls:
            c.observe(self._changed, names="value")
        self.widget = w.VBox([
            w.HBox([self.platform, self.target, self.x, self.hue, self.facet],
                   layout=w.Layout(flex_flow="row wrap")),
            w.HBox([*self.filters.values(),
                    w.VBox([self.batch, w.HBox([self.logx, self.logy, self.fit])])],
                   layout=w.Layout(flex_flow="row wrap")),
            self.count, self.figure, self.table,
        ])
        self.widget.children = (w.HTML(_SELECT_CSS), *self.widget.children)
        self.widget.add_class("carb-explorer")
        self.view: ScalingView | None = None
        self.update()

    def selection(self) -> Selection:
        """The selection the controls show now."""
        filt = {c: tuple(v.value) for c, v in self.filters.items()}
        return Selection(
            platform=self.platform.value, target=self.target.value, x=self.x.value,
            hue=self.hue.value, facet=self.facet.value, blocks=filt.get("block"),
            precisions=filt.get("precision"), resolutions=filt.get("resolution"),
            batch_range=tuple(self.batch.value), logx=self.logx.value, logy=self.logy.value,
            fit=self.fit.value)

    def _changed(self, _change) -> None:
        self.update()

    def update(self) -> ScalingView:
        """Recompute the view for the current controls and redraw."""
        import matplotlib.pyplot as plt
        from IPython.display import display

        s = self.selection()
        self.view = view = scaling_view(self.ok, s)
        self.count.value = f"<b>{html.escape(view.summary())}</b>"
        fig = plot_view(view, _label_for(self._label, s.platform))
        self.figure.clear_output(wait=True)
        with self.figure:
            display(fig)
        plt.close(fig)
        self.table.clear_output(wait=True)
        with self.table:
            display(_fit_columns(view.fits))
        return view


# selected filter values: white on the palette's blue, not grey on grey
_SELECT_CSS = ("<style>.carb-explorer select option:checked {background: #0072B2 linear-gradient("
               "0deg, #0072B2 0%, #0072B2 100%); color: white;}</style>")
#: The platform the explorer opens on when the data has it (the main dataset of the docs).
MAIN_PLATFORM = "cpu_epyc_zen3_2c"


def measured_targets(ok: pd.DataFrame) -> list[str]:
    """The targets (latency, memory, energy) with a finite value on some platform."""
    return [t for t in ("latency_ms", "peak_mem_mib", "energy_j") if t in ok.columns
            and np.isfinite(pd.to_numeric(ok[t], errors="coerce").astype(float)).any()]


def main_platform(ok: pd.DataFrame) -> str:
    """:data:`MAIN_PLATFORM` if ``ok`` has rows of it, else the first platform by name."""
    names = sorted(ok["platform"].dropna().astype(str).unique())
    return MAIN_PLATFORM if MAIN_PLATFORM in names else names[0]


def _option_index(options: Sequence[tuple[str, Any]], value) -> int:
    """Index of ``value`` among the values of (label, value) ``options``."""
    return [v for _, v in options].index(value)


def _nearest_index(values: Sequence[int], v: int) -> int:
    return int(np.argmin([abs(math.log(max(x, 1)) - math.log(max(v, 1))) for x in values]))


def _label_for(dataset_label, platform) -> str:
    if callable(dataset_label):
        return dataset_label(platform)
    return dataset_label or "measured"


def scaling_explorer(ok: pd.DataFrame, interactive: bool | None = None, dataset_label=None,
                     **selection: Any):
    """Show the scaling explorer for the status-ok rows ``ok`` and return it.

    Parameters
    ----------
    ok : pandas.DataFrame
        Rows in the CARB schema (``platform``, targets, config and static feature columns).
    interactive : bool or None
        Widgets (True), a static figure + tables of the initial selection (False), or decide
        with :func:`interactive_default` (None).
    dataset_label : str or callable
        Dataset named in the figure title; a callable gets the platform.
    **selection
        Initial :class:`Selection` fields, e.g. ``target="latency_ms", precisions=("fp32",)``.

    Returns
    -------
    ScalingExplorer or ScalingView
        The widget explorer (its ``.view`` is the current selection) or the static view.
    """
    if "platform" not in ok.columns:
        ok = ok.assign(platform="dataset")
    sel = Selection(**selection)
    if sel.platform is None:
        sel = replace(sel, platform=main_platform(ok))
    if interactive is None:
        interactive = interactive_default()
    if interactive:
        explorer = ScalingExplorer(ok, sel, dataset_label)
        _show(explorer.widget)
        return explorer
    import matplotlib.pyplot as plt
    from IPython.display import HTML

    view = scaling_view(ok, sel)
    _show(HTML(f"<p class='{COUNT_CLASS}'><b>{html.escape(view.summary())}</b><br>"
               "<i>Static view of the default selection: open this notebook in JupyterLab "
               "(<code>make lab</code>) for the interactive controls.</i></p>"))
    fig = plot_view(view, _label_for(dataset_label, sel.platform))
    _show(fig)
    plt.close(fig)
    _show(_fit_columns(view.fits))
    return view


# =========================================================================== network cost


def module_config(module: str, input_shape: Any, batch: int = 1, precision: str = "fp32",
                  module_kwargs: Any = "{}") -> pd.DataFrame:
    """One user network (family ``module``: ``package.module:function`` or
    ``path/to/file.py:function``) as a one-row frame with its static features.

    Raises
    ------
    carb_lib.families.ConfigError
        One line naming the factory and what failed.
    """
    return with_static_features(pd.DataFrame([ModuleConfig(module, input_shape, batch,
                                                           precision, module_kwargs).to_dict()]))


def module_cost(model, train: pd.DataFrame, module: str, input_shape: Any, *, batch: int = 1,
                precision: str = "fp32", module_kwargs: Any = "{}",
                measured: pd.DataFrame | None = None, coverage: float = DEFAULT_COVERAGE,
                k: int = 5) -> CostReport:
    """"What does *my* network cost?": :func:`cost_report` of a user network, shown.

    Compared with the training rows on :data:`MODULE_RANGE_COLUMNS` (static features the
    training rows lack are computed first); the nearest measured rows by FLOPs, parameters,
    resolution and batch. Fit the model with ``feature_set="shared"`` on several families.

    Examples
    --------
    >>> rep = module_cost(model, train, "examples/my_cnn.py:my_cnn", "3,96,96",
    ...                   batch=8)  # doctest: +SKIP
    """
    cfg = module_config(module, input_shape, batch, precision, module_kwargs)
    config_columns = ("resolution", "batch", "precision")
    train = fill_static_features(train, [c for c in MODULE_RANGE_COLUMNS
                                         if c not in config_columns])
    rep = cost_report(model, cfg, train, measured, coverage, k, columns=MODULE_RANGE_COLUMNS,
                      distance=_MODULE_DISTANCE_NUMERIC)
    _display_report(rep)
    return rep


def _report_html(rep: CostReport) -> str:
    colour = "#b00020" if rep.is_extrapolation else "#1b5e20"
    lines = []
    if rep.platform:
        where = f"<b>{html.escape(platform_name(rep.platform))}</b>"
        if rep.protocol:
            where += f" (protocol: {html.escape(rep.protocol)})"
        lines.append(f"<p>Predicted for {where}.</p>")
    lines.append(f"<p style='color:{colour}'><b>{html.escape(rep.summary())}</b></p>")
    for t, why in rep.not_predicted.items():
        lines.append(f"<p><i>{html.escape(display_name(t, unit=False))}: "
                     f"{html.escape(why)}</i></p>")
    for n in rep.notes:
        lines.append(f"<p><i>note: {html.escape(n)}</i></p>")
    return "\n".join(lines)


class CostExplorer:
    """Widgets over :func:`cost_report`; ``.widget`` is the box to display.

    With ``platforms`` (a :class:`carb_lib.app.cost_platforms.PlatformModels`) a platform
    control offers every platform it holds, named in words; a platform's model is fitted the
    first time it is chosen and kept.
    """

    def __init__(self, model, train, measured, coverage, k, initial: Mapping[str, Any],
                 platforms=None):
        import ipywidgets as w

        self.coverage, self.k = coverage, k
        self.models = platforms if platforms is not None else PlatformModels(files={},
                                                                             coverage=coverage)
        first = self.models.add(_platform_of(train), model, train, measured)
        self._use(first)
        style = {"description_width": "initial"}
        lay = w.Layout(width="200px")
        init = {**_DEFAULT_CONFIG, **initial}
        self.platform = w.Dropdown(options=[(platform_name(p), p) for p in self.models.platforms],
                                   value=first.platform, description="platform", style=style,
                                   layout=w.Layout(width="380px"))
        self.block = w.Dropdown(options=list(DEPTHS), value=init["block"], description="block",
                                style=style, layout=lay)
        self.depth = w.Dropdown(options=list(DEPTHS[init["block"]]), value=init["depth"],
                                description=display_name("depth"), style=style, layout=lay)
        self.width = w.Dropdown(options=[(f"{v:g}", v) for v in WIDTHS], value=init["width"],
                                description=display_name("width"), style=style, layout=lay)
        self.early = w.Checkbox(value=init["early_downsample"],
                                description=display_name("early_downsample"), indent=False)
        self.resolution = w.Dropdown(options=sorted(set(RESOLUTIONS) | {224}),
                                     value=init["resolution"],
                                     description=display_name("resolution"), style=style,
                                     layout=lay)
        self.batch = w.Dropdown(options=list(BATCH_SIZES), value=init["batch"],
                                description=display_name("batch"), style=style, layout=lay)
        self.precision = w.Dropdown(options=list(PRECISIONS), value=init["precision"],
                                    description="precision", style=style, layout=lay)
        self.out = w.Output()
        self.platform.observe(self._platform_changed, names="value")
        self.block.observe(self._block_changed, names="value")
        for c in (self.depth, self.width, self.early, self.resolution, self.batch,
                  self.precision):
            c.observe(lambda _c: self.update(), names="value")
        self.widget = w.VBox([
            self.platform,
            w.HBox([self.block, self.depth, self.width, self.early],
                   layout=w.Layout(flex_flow="row wrap")),
            w.HBox([self.resolution, self.batch, self.precision],
                   layout=w.Layout(flex_flow="row wrap")),
            self.out])
        self.widget.add_class("carb-cost")
        self.report: CostReport | None = None
        self.update()

    def _use(self, pm) -> None:
        self.current = pm
        self.model, self.train, self.measured = pm.model, pm.train, pm.measured

    def _platform_changed(self, change) -> None:
        from IPython.display import HTML, display

        if change["new"] not in self.models._models:  # the first time: fitted now (seconds)
            self.out.clear_output(wait=True)
            with self.out:
                display(HTML(f"<p><i>fitting the model of "
                             f"{html.escape(platform_name(change['new']))} ...</i></p>"))
        self._use(self.models.get(change["new"]))
        self.update()

    def _block_changed(self, change) -> None:
        depths = list(DEPTHS[change["new"]])
        nearest = min(depths, key=lambda d: abs(d - (self.depth.value or 0)))
        self._updating = True  # one report for the whole change, not one per trait
        try:
            self.depth.options = depths  # resets the value to a valid depth of the new block
            self.depth.value = nearest
        finally:
            self._updating = False
        self.update()

    def config(self) -> pd.DataFrame:
        return make_config(self.block.value, self.depth.value, self.width.value,
                           self.early.value, self.resolution.value, self.batch.value,
                           self.precision.value)

    def update(self) -> CostReport | None:
        from IPython.display import HTML, display

        if getattr(self, "_updating", False):
            return self.report
        self.out.clear_output(wait=True)
        with self.out:
            try:
                cfg = self.config()
            except ValueError as exc:  # a combination outside the design space
                display(HTML(f"<p><b>not a valid config:</b> {html.escape(str(exc))}</p>"))
                return None
            self.report = rep = _platform_report(self.current, cfg, self.coverage, self.k)
            _display_report(rep)
        return self.report


def _platform_of(train: pd.DataFrame) -> str:
    """The platform of a model's training rows ("these rows" when they name none or several)."""
    names = sorted(train["platform"].dropna().astype(str).unique()) \
        if "platform" in train.columns else []
    return names[0] if len(names) == 1 else "these rows"


def _platform_report(pm, cfg: pd.DataFrame, coverage: float, k: int) -> CostReport:
    """:func:`cost_report` of ``cfg`` on a platform's model, naming the platform and protocol."""
    rep = cost_report(pm.model, cfg, pm.train, pm.measured, coverage, k)
    return replace(rep, platform=pm.platform, protocol=pm.protocol)


_DEFAULT_CONFIG: dict[str, Any] = dict(block="basic", depth=18, width=0.5, early_downsample=True,
                                       resolution=64, batch=8, precision="fp32")


def _report_parts(rep: CostReport) -> list:
    """What the report shows, in order: HTML text and tables in words."""
    return [_report_html(rep), prediction_table(rep.prediction),
            "<p>Nearest measured rows, same precision first (distance 0: this config "
            "was measured):</p>", nearest_table(rep.nearest),
            "<p>Config columns against the training range:</p>", ranges_table(rep.ranges)]


def report_text(rep: CostReport) -> str:
    """The report as plain text: every line and table a person reads (tests check its words)."""
    import re

    out = []
    for part in _report_parts(rep):
        if isinstance(part, str):
            out.append(html.unescape(re.sub(r"<[^>]+>", "", part)))
        else:
            out.append(part.to_string(index=False))
    return "\n".join(out)


def _display_report(rep: CostReport) -> None:
    from IPython.display import HTML, display

    for part in _report_parts(rep):
        display(HTML(part) if isinstance(part, str) else part)


def network_cost(model, train: pd.DataFrame, measured: pd.DataFrame | None = None,
                 coverage: float = DEFAULT_COVERAGE, k: int = 5, interactive: bool | None = None,
                 platforms=None, platform: str | None = None, **config: Any):
    """"What does my network cost?": predicted cost of a ResNet config with intervals, on the
    platform of ``model`` or any other platform offered.

    Parameters
    ----------
    model : carb_lib.ensemble.CARBRegressor
        Fitted (frame mode); energy appears only if the model predicts it.
    train : pandas.DataFrame
        The model's training rows (training range, nearest rows, the protocol predicted for).
    measured : pandas.DataFrame or None
        Rows searched for the nearest measured configs (default: ``train``).
    coverage, k : see :func:`cost_report`.
    interactive : bool or None
        Widgets, the static report of the initial config, or :func:`interactive_default`.
    platforms : "shipped", carb_lib.app.cost_platforms.PlatformModels or None
        Further platforms to offer: ``"shipped"`` every platform whose rows ship in ``data/``
        (:func:`carb_lib.app.cost_platforms.platform_files`; the H200 predicts energy), each
        model fitted on first choice; None only the platform of ``model``.
    platform : str or None
        The platform shown first (default: that of ``model``).
    **config
        Initial config (:func:`make_config` arguments), e.g. ``block="basic", depth=18``.

    Returns
    -------
    CostExplorer or CostReport

    Raises
    ------
    ValueError
        One line when ``platforms`` is neither of the above or ``platform`` is not offered.
    """
    if isinstance(platforms, str):
        if platforms != "shipped":
            raise ValueError(f"platforms={platforms!r}: use 'shipped', a PlatformModels or None")
        platforms = PlatformModels(coverage=coverage)
    models = platforms if platforms is not None else PlatformModels(files={}, coverage=coverage)
    first = models.add(_platform_of(train), model, train, measured)
    if platform is not None and platform not in models.platforms:
        raise ValueError(f"platform {platform!r} is not offered; offered: "
                         f"{', '.join(models.platforms)}")
    if interactive is None:
        interactive = interactive_default()
    if interactive:
        explorer = CostExplorer(model, train, measured, coverage, k, config, platforms=models)
        if platform is not None and platform != first.platform:
            explorer.platform.value = platform
        _show(explorer.widget)
        return explorer
    pm = first if platform is None else models.get(platform)
    rep = _platform_report(pm, make_config(**{**_DEFAULT_CONFIG, **config}), coverage, k)
    _display_report(rep)
    return rep
