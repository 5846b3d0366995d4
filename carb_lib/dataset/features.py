"""Static features: computed analytically (no model is built) and measured from a built model.

Columns (units in names where they have one; :data:`carb_lib.core.vocab.STATIC_FEATURES`)

``n_conv``, ``n_bn``, ``n_act``, ``n_fc``
    Number of calls of each layer type in one forward pass (shortcut projections included;
    ``n_act`` counts ReLU applications).
``max_channels``
    Widest convolution output in channels (the classifier is not counted).
``flops``
    Floating-point operations of the whole batch, 2 x multiply-accumulates of convolutions and
    linear layers only — the convention of ``torch.utils.flop_counter.FlopCounterMode`` (BN,
    ReLU, pooling, residual adds and biases count 0).
``params``, ``param_bytes``
    Trainable parameters (conv weights, BN weight+bias, FC weight+bias; BN running statistics are
    buffers and not counted) and their size at the config's precision.
``activation_bytes``
    Sum of the output sizes of every layer call (conv, BN, ReLU, pooling, FC) for the whole
    batch: the activation traffic of a forward pass. Residual adds and ``flatten`` are not layers.
``peak_act_bytes``
    Estimate of the peak of live activation memory during an inference forward pass
    (no autograd, in-place ReLU and residual add): the input batch, the block input held for the
    shortcut, and the input and output of the running layer.
``arith_intensity_flop_per_byte``
    ``flops / (param_bytes + activation_bytes)``.
``alloc_peak_bytes`` (:data:`carb_lib.core.vocab.ALLOC_FEATURE`)
    The allocator model's peak: parameters, buffers, the input and the peak of the CPU
    allocator's running total during one eager forward pass, scratch copies of the kernels
    included (:mod:`carb_lib.families._alloc`; equal to the measured CPU peak on the project's
    data). NaN for NB201 cells. Read by the memory base law, not by the learners.
    ``alloc_peak_bytes`` has oneDNN's 8-channel blocks (AVX2), ``alloc_peak_bytes_b16`` its
    16-channel blocks (AVX-512), ``alloc_peak_bytes_b16_fp16dnn`` those and fp16 convs through
    oneDNN (AVX512-FP16): :data:`carb_lib.core.vocab.ALLOC_FEATURES`.

Each family computes them (``Family.static_features``, vectorised: per-sample quantities once
per unique architecture x resolution, scaled by batch and bytes per element) and measures them
(``Family.measured_features``: FlopCounterMode on the ``meta`` device, parameter count,
forward hooks); tests check exact agreement. This module dispatches on each row's family.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from carb_lib.core.vocab import STATIC_FEATURES
from carb_lib.families import DEFAULT_FAMILY, ConfigError, get_family
from carb_lib.families._common import UNIT_COLUMNS, measure_meta_model, meta_model
from carb_lib.families._common import bytes_per_element as _bytes_per_element  # noqa: F401
from carb_lib.families._common import scale_units as _scale_units  # noqa: F401
from carb_lib.families.resnet import _resnet_unit as _resnet_unit  # benchmarks clear its cache
from carb_lib.families.resnet import resnet_static_features
from carb_lib.families.space import config_from_row, family_of

#: The static feature columns every family provides (:data:`carb_lib.core.vocab.STATIC_FEATURES`).
STATIC_FEATURE_COLUMNS: tuple[str, ...] = STATIC_FEATURES
#: Features that :func:`measured_features` checks exactly.
EXACT_COLUMNS: tuple[str, ...] = (
    "n_conv", "n_bn", "n_act", "n_fc", "max_channels", "flops", "params", "activation_bytes",
)  # fmt: skip

__all__ = [
    "EXACT_COLUMNS", "STATIC_FEATURE_COLUMNS", "UNIT_COLUMNS", "compare_features",
    "measure_meta_model", "measured_features", "meta_model", "resnet_static_features",
    "fill_static_features", "static_features", "with_static_features",
]  # fmt: skip


def static_features(configs: pd.DataFrame) -> pd.DataFrame:
    """Analytic static features of every row, for any registered family.

    Parameters
    ----------
    configs : pandas.DataFrame
        Config columns (a ``family`` column selects the family; default
        :data:`~carb_lib.families.DEFAULT_FAMILY`).

    Returns
    -------
    pandas.DataFrame
        :data:`STATIC_FEATURE_COLUMNS` (plus family-specific extras such as NB201 op counts,
        missing in rows of other families), index-aligned with ``configs``.

    Raises
    ------
    ConfigError
        Naming the row and value when a config is outside the design space, or an unknown
        family.
    """
    if "family" not in configs.columns:
        return get_family(DEFAULT_FAMILY).static_features(configs)
    fam = configs["family"]
    first = fam.iloc[0] if len(fam) else DEFAULT_FAMILY
    if pd.notna(first) and bool((fam == first).all()):  # one family: no split, no copy
        return get_family(first).static_features(configs)
    fam = family_of(configs)
    parts = []
    for name, idx in fam.groupby(fam, sort=False).groups.items():
        try:
            family = get_family(name)
        except ConfigError as exc:
            raise ConfigError(f"row {idx[0]!r}: {exc}") from None
        parts.append(family.static_features(configs.loc[idx]))
    return pd.concat(parts).reindex(configs.index)


def with_static_features(configs: pd.DataFrame) -> pd.DataFrame:
    """``configs`` with the static feature columns added (existing ones are replaced)."""
    feats = static_features(configs)
    return pd.concat([configs.drop(columns=feats.columns, errors="ignore"), feats], axis=1)


def fill_static_features(df: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """``df`` with each of ``columns`` (static features) computed where it is absent or has a
    missing value; the features are computed once, stored values are kept otherwise. ``df``
    itself is not modified."""
    need = [c for c in columns if c not in df.columns or df[c].isna().any()]
    if not need or len(df) == 0:
        return df
    feats = static_features(df)
    return df.assign(**{c: feats[c].to_numpy() for c in need})


def measured_features(config, model=None) -> dict[str, int]:
    """Measure the static features of a config from its built model (on the ``meta`` device).

    FLOPs with ``FlopCounterMode``; parameters by counting; layer calls and output sizes with
    forward hooks (which modules count is the family's convention). Nothing is allocated.

    Parameters
    ----------
    config
        A config of any registered family.
    model : torch.nn.Module, optional
        The config's model already built on the ``meta`` device at the config's precision
        (lets a caller reuse one model across batch sizes and resolutions).

    Returns
    -------
    dict
        The :data:`EXACT_COLUMNS` plus ``param_bytes`` (and family extras), for comparison
        with :func:`static_features`.
    """
    return get_family(config.family).measured_features(config, model=model)


def _plain(value) -> int | float:
    """A feature value as a Python int (counts, FLOPs, bytes, integral floats) or float
    (shares such as ``dw_flops_share``), compared exactly."""
    value = value.item() if hasattr(value, "item") else value
    if isinstance(value, float) and not value.is_integer():
        return value
    return int(value)


def _model_key(config) -> tuple:
    d = config.to_dict()
    return tuple(sorted((k, v) for k, v in d.items() if k not in ("batch", "resolution")))


def compare_features(configs: pd.DataFrame, progress: bool = False) -> pd.DataFrame:
    """Analytic against measured features for every row: one row per (config, column).

    Every family's own :meth:`~carb_lib.families.Family.measured_features` measures its
    columns (:data:`EXACT_COLUMNS` and the family's extras), compared exactly with
    :func:`static_features`. Returns a tidy frame with ``config_id``, ``column``, ``analytic``,
    ``measured``, ``match`` (values are ints, floats only for shares such as
    ``dw_flops_share``).
    """
    from tqdm.auto import tqdm

    analytic = static_features(configs)
    rows = []
    configs = configs.assign(_cfg=[config_from_row(r) for r in configs.to_dict("records")])
    configs = configs.assign(_key=[_model_key(c) for c in configs["_cfg"]])
    bar = tqdm(total=len(configs), desc="measuring features", unit="config", disable=not progress)
    # one meta model per architecture x precision, reused across batch sizes and resolutions
    for _, group in configs.groupby("_key", sort=False):
        model = meta_model(group["_cfg"].iloc[0])
        for idx, row in group.iterrows():
            meas = measured_features(row["_cfg"], model=model)
            bar.update()
            for col, mval in meas.items():
                aval = _plain(analytic.at[idx, col])
                mval = _plain(mval)
                rows.append({"config_id": row.get("config_id", idx), "column": col,
                             "analytic": aval, "measured": mval,
                             "match": aval == mval})  # fmt: skip
    bar.close()
    return pd.DataFrame(rows)
