"""The family protocol: what every model family of the design space supplies.

A *family* (``resnet``, ``nb201``, ...) is one object, registered explicitly in
:mod:`carb_lib.families`. It owns its config columns (besides the common ones of
:data:`carb_lib.core.vocab.COMMON_CONFIG_COLUMNS`), their validation, the content hash of a config,
the model builder, the analytic and the measured static features, and the numeric encoding of
its own config columns for the learners. Code outside :mod:`carb_lib.families` asks the
family for these and never branches on a family name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from carb_lib.core.vocab import ALLOC_FEATURES, COMMON_CONFIG_COLUMNS, STATIC_FEATURES

__all__ = ["DEFAULT_FAMILY", "ConfigColumn", "ConfigError", "Family"]

#: The family of a row without a ``family`` value (the paper's ResNet grid).
DEFAULT_FAMILY: str = "resnet"


class ConfigError(ValueError):
    """A configuration value outside the design space; the message lists the valid values."""


class ConfigTimeoutError(RuntimeError):
    """The per-config wall-clock cap was exceeded (raised while measuring, by
    :mod:`carb_lib.measure.protocol` and :mod:`carb_lib.measure.watchdog`; defined here so that a family that
    builds user modules can tell the cap from the module's own failure)."""


@dataclass(frozen=True)
class ConfigColumn:
    """One config column a family adds to the common ones.

    Attributes
    ----------
    name : str
    kind : {"str", "int", "float", "bool"}
        Storage kind in the dataset schema (:mod:`carb_lib.dataset.schema`).
    doc : str
    nonneg : bool
        Values are ``>= 0``.
    """

    name: str
    kind: str
    doc: str = ""
    nonneg: bool = False


class Family(ABC):
    """A model family of the design space (one instance per family, see the registry).

    Class attributes
    ----------------
    name : str
        The value of the ``family`` column.
    config_type : type
        The frozen, validating config dataclass (with ``family``, ``config_id``, ``to_dict()``
        and ``build_model()``).
    own_columns : tuple of ConfigColumn
        Config columns of this family besides the common ones.
    required_columns : tuple of str
        Columns a table must carry for rows of this family (the others have defaults).
    categories : mapping
        Valid values of the family's categorical columns (``{"block": ("basic", ...)}``).
    extra_feature_columns : tuple of str
        Static features beyond :data:`carb_lib.core.vocab.STATIC_FEATURES` (missing elsewhere).
    matrix_columns : tuple of str
        Names of the columns :meth:`encode_config` returns, in order.
    not_applicable : float
        Value of those columns in rows of other families.
    predict_unseen : bool
        Rows of this family may be predicted by a model that never saw the family (it has no
        config encoding of its own: static features describe it; the ``module`` family).
    reference_config : mapping or None
        A cheap, representative config of the family that a campaign re-measures at each
        checkpoint as its drift reference (None: the family has none).
    always_in_matrix : bool, default False
        Whether CARB's model matrix carries this family's columns even when the training data
        has none of its rows (True for ``resnet`` and ``nb201``: the layout of the models
        fitted before more families existed); otherwise they enter only with the family's rows.

    Methods (plain functions stored on the class; see each family module)
    ---------------------------------------------------------------------
    from_row(mapping) -> config
        Validate one row into a config (:class:`ConfigError` naming column and value).
    config_ids(frame) -> list of str
        Content hashes of every row.
    build_model(config) -> torch.nn.Module
        The network in eval mode (fp32, default device; build under ``torch.device("meta")``
        to count without allocating).
    static_features(frame) -> DataFrame
        Analytic features, vectorised over rows (:data:`STATIC_FEATURES` plus
        :attr:`extra_feature_columns`), index-aligned.
    measured_features(config, model=None) -> dict
        The same features measured on the built model (FlopCounterMode, parameter count,
        forward hooks) on the ``meta`` device.
    encode_config(frame, rows=None) -> DataFrame
        The learners' numeric encoding of the family's own config columns (see
        :attr:`matrix_columns`, :attr:`not_applicable`).

    Methods with a default (override where the family needs more)
    --------------------------------------------------------------
    depth_label(frame) -> ndarray
        Depth stratum of every row for the stratified split (default: the family name, one
        stratum).
    arch_features(frame) -> DataFrame
        Numeric architecture descriptors beyond the static features, for the few-shot
        transfer models (default: none).
    op_list(row) -> list or None
        The network's operators from an analytic pass, for the kernel characterization
        (default None: recorded on the ``meta`` device, :func:`carb_lib.kernels.law.network_ops`).
    """

    name: ClassVar[str]
    config_type: ClassVar[type]
    own_columns: ClassVar[tuple[ConfigColumn, ...]]
    required_columns: ClassVar[tuple[str, ...]]
    categories: ClassVar[Mapping[str, tuple[Any, ...]]] = {}
    extra_feature_columns: ClassVar[tuple[str, ...]] = ()
    matrix_columns: ClassVar[tuple[str, ...]]
    not_applicable: ClassVar[float]
    predict_unseen: ClassVar[bool] = False
    reference_config: ClassVar[Mapping[str, Any] | None] = None
    always_in_matrix: ClassVar[bool] = False

    # ------------------------------------------------------------------ columns
    @property
    def own_column_names(self) -> tuple[str, ...]:
        """Names of :attr:`own_columns`, in order."""
        return tuple(c.name for c in self.own_columns)

    @property
    def config_columns(self) -> tuple[str, ...]:
        """``family``, the family's own columns, then the other common columns."""
        return (COMMON_CONFIG_COLUMNS[0], *self.own_column_names, *COMMON_CONFIG_COLUMNS[1:])

    @property
    def columns(self) -> tuple[str, ...]:
        """Alias of :attr:`config_columns` (the registry's former field name)."""
        return self.config_columns

    @property
    def feature_columns(self) -> tuple[str, ...]:
        """All static feature columns of this family (the allocator model's peak last; NaN in
        a family without the model)."""
        return (*STATIC_FEATURES, *self.extra_feature_columns, *ALLOC_FEATURES.values())

    @property
    def arch_columns(self) -> tuple[str, ...]:
        """Config columns that identify a network (with ``family``; without resolution,
        batch, precision): the family's own columns."""
        return self.own_column_names

    @property
    def indicator_column(self) -> str:
        """Name of the family's one-hot model-matrix column, ``family_<name>``."""
        return f"family_{self.name}"

    # ------------------------------------------------------------------ behaviour
    @staticmethod
    @abstractmethod
    def from_row(row: Mapping[str, Any]) -> Any:
        """Validate one row into a config."""

    @staticmethod
    @abstractmethod
    def config_ids(df: pd.DataFrame) -> list[str]:
        """Content hashes of every row."""

    @staticmethod
    @abstractmethod
    def build_model(config: Any) -> Any:
        """Build the network of ``config``."""

    @staticmethod
    @abstractmethod
    def static_features(df: pd.DataFrame) -> pd.DataFrame:
        """Analytic static features of every row."""

    @staticmethod
    @abstractmethod
    def measured_features(config: Any, model: Any = None) -> dict[str, int]:
        """Static features measured on the built model."""

    @staticmethod
    @abstractmethod
    def encode_config(df: pd.DataFrame, rows: np.ndarray | None = None) -> pd.DataFrame:
        """Numeric encoding of the family's own config columns."""

    def depth_label(self, df: pd.DataFrame) -> np.ndarray:
        """Depth stratum of every row of ``df`` (rows of this family) for the stratified
        split: the family name for every row (families without a depth tier are one stratum).
        """
        return np.full(len(df), self.name, dtype=object)

    def op_list(self, row: Mapping[str, Any]) -> list[tuple] | None:
        """The operators of ``row``'s network per image (:data:`carb_lib.kernels.law.OP_COLUMNS`)
        from an analytic pass, or None: :func:`carb_lib.kernels.law.network_ops` then records them
        on the model built on the ``meta`` device."""
        return None

    def arch_features(self, df: pd.DataFrame) -> pd.DataFrame:
        """Numeric architecture descriptors of every row of ``df`` (rows of this family)
        beyond the static features, for the few-shot transfer models: none by default."""
        return pd.DataFrame(index=df.index)

    def validate_config(self, row: Mapping[str, Any]) -> Any:
        """Validate one row (a mapping) into a config of this family (see :meth:`from_row`)."""
        return self.from_row(row)

    def validate_frame(self, df: pd.DataFrame, what: str = "input") -> None:
        """Validate every row of ``df`` (all of this family), each distinct config once.

        Off-grid but valid values (resolution 33, batch 3) pass; absent optional columns get
        the family's defaults.

        Raises
        ------
        ConfigError
            ``<what>: row <label>: <reason naming column and value, listing valid values>``
            for the first invalid row (``label`` is its index label in ``df``), with the count
            of further invalid configs.
        """
        missing = [c for c in self.required_columns if c not in df.columns]
        if missing and len(df):
            raise ConfigError(
                f"{what}: row {df.index[0]}: {self.name} rows need column(s) {missing}"
            )
        cols = [c for c in self.config_columns if c in df.columns]
        uniq = df[cols].drop_duplicates()
        bad = []
        for label, row in zip(uniq.index, uniq.to_dict(orient="records"), strict=True):
            row = {k: v for k, v in row.items() if not (np.isscalar(v) and pd.isna(v))}
            row["family"] = self.name
            try:
                self.from_row(row)
            except (ConfigError, ValueError, TypeError, KeyError) as exc:
                bad.append((label, exc))
        if bad:
            label, exc = bad[0]
            more = f" ({len(bad) - 1} more invalid config(s))" if len(bad) > 1 else ""
            reason = f"missing column {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ConfigError(f"{what}: row {label}: {reason}{more}")

    def __repr__(self) -> str:
        return f"<family {self.name!r}: {', '.join(self.own_column_names)}>"
