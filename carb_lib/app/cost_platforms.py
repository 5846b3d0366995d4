"""The platforms the cost widget of notebook 03 asks (:class:`carb_lib.app.explore.CostExplorer`):
every platform whose ResNet rows the catalog holds (:func:`platform_files`: the CPUs of
:func:`carb_lib.transfer.cpus.cpu_files`, the first campaign ``cpu_epyc_2c`` and the NVIDIA
H200, and any platform a user catalog adds), each named in words (:data:`carb_lib.core.vocab.PLATFORM_NAMES`).

A platform's model is fitted the first time it is chosen, on all its ok rows, with the small
:data:`WIDGET_PRESET` and the roofline latency law (about a second on 2 cores), and kept while the widget lives: it answers
within seconds. It predicts for the protocol its rows were timed under (:func:`protocol_text`).

Examples
--------
>>> models = PlatformModels()                                    # doctest: +SKIP
>>> pm = models.get("gpu_nvidia_h200")                           # doctest: +SKIP
>>> pm.model.targets_, pm.protocol                               # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from carb_lib.core.vocab import DEFAULT_COVERAGE, platform_name
from carb_lib.dataset.catalog import DESIGN, load_catalog
from carb_lib.dataset.schema import read_dataset
from carb_lib.families._base import DEFAULT_FAMILY
from carb_lib.measure.protocol import Protocol, rows_protocol
from carb_lib.transfer.cpus import cpu_files

__all__ = ["PlatformModel", "PlatformModels", "WIDGET_PRESET", "platform_files",
           "protocol_text"]

#: The model size of a platform fitted by the widget (:data:`carb_lib.ensemble.PRESETS`).
WIDGET_PRESET = "quick"
def platform_files(root: str | Path | None = None) -> dict[str, Path]:
    """Platform -> its ResNet rows (the first of its design campaign's, in the catalog:
    :mod:`carb_lib.dataset.catalog`), for the files present: the CPUs of
    :func:`carb_lib.transfer.cpus.cpu_files` first, then the other CPUs, the GPUs last.

    Parameters
    ----------
    root : str or Path, optional
        A repository whose ``data/catalog.yaml`` is asked in place of the shipped catalog (the
        user catalogs extend either).
    """
    cat = load_catalog(shipped=None if root is None else Path(root) / "data" / "catalog.yaml")
    files = {p: Path(spec[0]) for p, spec in cpu_files(cat).items()}
    for device in ("cpu", "cuda"):
        for c in cat.campaigns:
            rows = cat.files(c.platform, DESIGN, "rows", DEFAULT_FAMILY)
            if c.campaign == DESIGN and c.device == device and c.platform not in files and rows:
                files[c.platform] = rows[0]
    return {p: f for p, f in files.items() if f.is_file()}


def protocol_text(rows: pd.DataFrame) -> str:
    """The protocol a model of ``rows`` predicts for, in words: ``"1 thread, default heap"`` on
    a CPU, the GPU's timing windows on a GPU; the reason when the rows mix protocols."""
    try:
        rp = rows_protocol(rows)
    except ValueError as exc:
        return f"rows of several protocols ({exc})"
    if rp.device != "cpu":
        w = pd.to_numeric(rows.get("window_s", pd.Series(dtype=float)), errors="coerce")
        w = w[w > 0]
        if len(w):  # the rows' own windows (campaigns may differ: 0.5 s, then 3 s)
            return (f"one GPU, each inference timed with CUDA events in windows of "
                    f"{w.min():.1f} s to {w.max():.1f} s")
        p = Protocol()
        return (f"one GPU, each inference timed with CUDA events in windows of at least "
                f"{p.gpu_min_iters} inferences and {p.gpu_min_window_s:g} s")
    return rp.describe().removesuffix(" (cpu)")


@dataclass
class PlatformModel:
    """A platform's fitted model, its training rows and the rows searched for neighbours."""

    platform: str
    model: Any  # carb_lib.ensemble.CARBRegressor
    train: pd.DataFrame
    measured: pd.DataFrame
    protocol: str

    @property
    def name(self) -> str:
        return platform_name(self.platform)


class PlatformModels:
    """Platform -> :class:`PlatformModel`, each fitted on first :meth:`get` and kept.

    Parameters
    ----------
    files : mapping or None
        Platform -> rows file (default :func:`platform_files`).
    coverage : float
        Nominal coverage of the fitted models' intervals.
    preset : str
        Model size (:data:`WIDGET_PRESET`).
    """

    def __init__(self, files: Mapping[str, str | Path] | None = None,
                 coverage: float = DEFAULT_COVERAGE, preset: str = WIDGET_PRESET,
                 random_state: int = 0):
        self.files = dict(platform_files() if files is None else files)
        self.coverage, self.preset, self.random_state = coverage, preset, random_state
        self._models: dict[str, PlatformModel] = {}

    @property
    def platforms(self) -> list[str]:
        """Every platform offered: those fitted already (first) and those with a file."""
        return list(dict.fromkeys([*self._models, *self.files]))

    def add(self, platform: str, model, train: pd.DataFrame,
            measured: pd.DataFrame | None = None) -> PlatformModel:
        """Offer a model fitted elsewhere (the notebook's) as ``platform``."""
        pm = PlatformModel(str(platform), model, train,
                           train if measured is None else measured, protocol_text(train))
        self._models[pm.platform] = pm
        return pm

    def get(self, platform: str) -> PlatformModel:
        """The model of ``platform``, fitted now if it is the first time.

        Raises
        ------
        KeyError
            One line naming the platforms offered.
        """
        if platform in self._models:
            return self._models[platform]
        if platform not in self.files:
            raise KeyError(f"platform {platform!r} has no rows here; offered: "
                           f"{', '.join(self.platforms) or 'none'}")
        from carb_lib import evaluation as ev
        from carb_lib.ensemble import PRESETS

        rows = ev.prepare_dataset(read_dataset(self.files[platform]), platform)
        if "family" in rows.columns:  # the paper grid's family: the widget's design space
            rows = rows[rows["family"].astype(str).eq(DEFAULT_FAMILY)]
        # the roofline latency law, as the notebook's published tables (and a fit of about a
        # second: "auto" would learn a platform's operator model)
        params = {**PRESETS[self.preset], "coverage": self.coverage,
                  "random_state": self.random_state, "latency_law": "roofline"}
        return self.add(platform, ev.fit_quiet(params, rows), rows)
