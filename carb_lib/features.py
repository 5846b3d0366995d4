"""Static features: computed analytically (no model is built) and measured from a built model.

Columns (units in names where they have one)

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

:func:`static_features` is vectorised: per-sample quantities are computed once per unique
architecture x resolution and scaled by batch and bytes per element.
:func:`measured_features` measures the same quantities from a built model (FlopCounterMode on
the ``meta`` device, parameter count, forward hooks); tests check exact agreement.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from carb_lib.space import (
    BYTES_PER_ELEMENT,
    EXPANSION,
    STAGE_BLOCKS,
    ConfigError,
    Family,
    get_family,
    register_family,
    stage_widths,
)

STATIC_FEATURE_COLUMNS: tuple[str, ...] = (
    "n_conv", "n_bn", "n_act", "n_fc", "max_channels", "flops", "params", "param_bytes",
    "activation_bytes", "peak_act_bytes", "arith_intensity_flop_per_byte",
)
#: Features that :func:`measured_features` checks exactly.
EXACT_COLUMNS: tuple[str, ...] = (
    "n_conv", "n_bn", "n_act", "n_fc", "max_channels", "flops", "params", "activation_bytes",
)
#: Per-sample quantities of one architecture at one resolution (see :func:`_resnet_unit`).
UNIT_COLUMNS: tuple[str, ...] = (
    "n_conv", "n_bn", "n_act", "n_fc", "max_channels", "macs", "params", "act_elems",
    "peak_elems",
)


def _out(h: int, k: int, s: int, p: int) -> int:
    return (h + 2 * p - k) // s + 1


@lru_cache(maxsize=4096)
def _resnet_unit(
    block: str, depth: int, width: float, early_downsample: bool, resolution: int,
    num_classes: int,
) -> tuple[int, ...]:
    """Per-sample counts of one ResNet architecture at one resolution (see UNIT_COLUMNS)."""
    blocks = STAGE_BLOCKS[(block, depth)]
    widths = stage_widths(width, len(blocks))
    exp = EXPANSION[block]
    n = {"conv": 0, "bn": 0, "act": 0, "fc": 0}
    macs = params = act = 0
    max_c = 0
    peak = 0
    inp = 3 * resolution * resolution  # the input batch stays alive (the caller holds it)

    def conv(cin, cout, k, s, p, h):
        nonlocal macs, params, act, max_c
        ho = _out(h, k, s, p)
        n["conv"] += 1
        macs += cout * ho * ho * cin * k * k
        params += cout * cin * k * k
        act += cout * ho * ho
        max_c = max(max_c, cout)
        return ho, cout * ho * ho

    def bn(c, elems):
        nonlocal params, act
        n["bn"] += 1
        params += 2 * c
        act += elems

    def relu(elems):
        nonlocal act
        n["act"] += 1
        act += elems

    def live(*elems):
        nonlocal peak
        peak = max(peak, inp + sum(elems))

    # stem
    c0 = widths[0]
    if early_downsample:
        h, e = conv(3, c0, 7, 2, 3, resolution)
    else:
        h, e = conv(3, c0, 3, 1, 1, resolution)
    live(e)  # conv reads the input (already counted) and writes e
    bn(c0, e)
    live(e, e)
    relu(e)
    x = e
    if early_downsample:
        h2 = _out(h, 3, 2, 1)
        e2 = c0 * h2 * h2
        act += e2
        live(x, e2)
        h, x = h2, e2
    cin = c0
    # stages
    for i, (nb, w) in enumerate(zip(blocks, widths, strict=True)):
        for j in range(nb):
            s = 2 if (i > 0 and j == 0) else 1
            cout = w * exp
            xin = x
            if s != 1 or cin != cout:
                hd, ed = conv(cin, cout, 1, s, 0, h)
                live(xin, ed)
                bn(cout, ed)
                live(xin, ed, ed)
                held = ed  # the projected shortcut is held while the branch runs
            else:
                held = 0
            if block == "basic":
                h1, e1 = conv(cin, w, 3, s, 1, h)
                live(xin, held, e1)
                bn(w, e1)
                live(xin, held, e1, e1)
                relu(e1)
                h2, e2 = conv(w, cout, 3, 1, 1, h1)
                live(xin, held, e1, e2)
                bn(cout, e2)
                live(xin, held, e2, e2)
            else:
                h1, e1 = conv(cin, w, 1, 1, 0, h)
                live(xin, held, e1)
                bn(w, e1)
                live(xin, held, e1, e1)
                relu(e1)
                hm, em = conv(w, w, 3, s, 1, h1)
                live(xin, held, e1, em)
                bn(w, em)
                live(xin, held, em, em)
                relu(em)
                h2, e2 = conv(w, cout, 1, 1, 0, hm)
                live(xin, held, em, e2)
                bn(cout, e2)
                live(xin, held, e2, e2)
            relu(e2)  # after the in-place residual add
            h, x, cin = h2, e2, cout
    # head
    act += cin  # adaptive average pool output (C x 1 x 1)
    live(x, cin)
    n["fc"] += 1
    macs += cin * num_classes
    params += cin * num_classes + num_classes
    act += num_classes
    live(cin, num_classes)
    return (n["conv"], n["bn"], n["act"], n["fc"], max_c, macs, params, act, peak)


def _factorize_rows(df: pd.DataFrame, key_cols: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Codes of the unique rows of ``df[key_cols]`` and those unique rows (fast for 1M rows)."""
    combined = np.zeros(len(df), dtype=np.int64)
    uniques = []
    for c in key_cols:
        codes, uniq = pd.factorize(df[c], sort=False)
        if (codes < 0).any():
            i = int(np.flatnonzero(codes < 0)[0])
            raise ConfigError(f"row {df.index[i]!r}: column {c!r} is missing (NaN/None)")
        combined = combined * len(uniq) + codes
        uniques.append(np.asarray(uniq, dtype=object))
    codes, ucomb = pd.factorize(combined, sort=False)
    first = np.zeros(len(ucomb), dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)  # first row of each unique key
    unique_rows = df[key_cols].iloc[first].reset_index(drop=True)
    unique_rows.index = df.index[first]
    return codes, unique_rows


def _units_frame(df: pd.DataFrame, unit_fn, key_cols: list[str], validate=None) -> pd.DataFrame:
    """Evaluate ``unit_fn`` once per unique key and broadcast the result to every row.

    ``validate(row_label, unique_row)`` may raise a :class:`ConfigError` naming the first row
    that carries an invalid key.
    """
    codes, uniq = _factorize_rows(df, key_cols)
    rows = []
    for label, u in zip(uniq.index, uniq.itertuples(index=False), strict=True):
        if validate is not None:
            validate(label, u)
        rows.append(unit_fn(*u))
    table = np.array(rows, dtype=np.float64).reshape(len(uniq), len(UNIT_COLUMNS))
    return pd.DataFrame(table[codes], columns=list(UNIT_COLUMNS), index=df.index)


def _finish(units: pd.DataFrame, batch: np.ndarray, precision: pd.Series) -> pd.DataFrame:
    """Scale per-sample units to the batch and the precision's element size."""
    return _scale_units(units, batch, _bytes_per_element(precision))


def _bytes_per_element(precision: pd.Series) -> np.ndarray:
    """Bytes per element of every row's ``precision``.

    Raises
    ------
    ConfigError
        Naming the first row whose precision is unknown or missing.
    """
    codes, uniq = pd.factorize(precision)
    table = np.array([BYTES_PER_ELEMENT.get(u, np.nan) for u in uniq] + [np.nan], dtype=float)
    bpe = table[codes]  # code -1 (missing) -> the trailing NaN
    bad = np.isnan(bpe)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ConfigError(
            f"row {precision.index[i]!r}: precision={precision.iloc[i]!r} is unknown; "
            f"valid values: {list(BYTES_PER_ELEMENT)}"
        )
    return bpe


def _scale_units(units: pd.DataFrame, batch: np.ndarray, bpe: np.ndarray) -> pd.DataFrame:
    """The static feature columns from per-sample ``units`` (counts, ``macs``, ``params``,
    ``act_elems``, ``peak_elems``), the batch size and the bytes per element of every row."""
    b = batch.astype(np.float64)
    out = pd.DataFrame(index=units.index)
    for c in ("n_conv", "n_bn", "n_act", "n_fc", "max_channels"):
        out[c] = units[c].to_numpy().astype(np.int64)
    out["flops"] = (2.0 * units["macs"].to_numpy() * b).astype(np.int64)
    out["params"] = units["params"].to_numpy().astype(np.int64)
    out["param_bytes"] = (units["params"].to_numpy() * bpe).astype(np.int64)
    out["activation_bytes"] = (units["act_elems"].to_numpy() * b * bpe).astype(np.int64)
    out["peak_act_bytes"] = (units["peak_elems"].to_numpy() * b * bpe).astype(np.int64)
    out["arith_intensity_flop_per_byte"] = out["flops"].to_numpy() / (
        out["param_bytes"].to_numpy() + out["activation_bytes"].to_numpy()
    )
    return out


def _check_columns(df: pd.DataFrame, cols, family: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ConfigError(f"{family} configs are missing column(s) {missing}")


def resnet_static_features(df: pd.DataFrame) -> pd.DataFrame:
    """Analytic static features of ResNet-family rows (see the module docstring)."""
    _check_columns(df, ["block", "depth", "width", "early_downsample", "resolution", "batch",
                        "precision"], "resnet")
    key = pd.DataFrame(
        {
            "block": df["block"],
            "depth": df["depth"].astype(np.int64),
            "width": df["width"].astype(np.float64),
            "early_downsample": df["early_downsample"].astype(bool),
            "resolution": df["resolution"].astype(np.int64),
            "num_classes": (df["num_classes"].fillna(1000).astype(np.int64)
                            if "num_classes" in df else 1000),
        },
        index=df.index,
    )

    def validate(label, u):
        if (u.block, u.depth) not in STAGE_BLOCKS:
            raise ConfigError(
                f"row {label!r}: (block, depth)=({u.block!r}, {u.depth!r}) is not in the design "
                f"space; valid: {sorted(STAGE_BLOCKS)}"
            )

    units = _units_frame(key, _resnet_unit, list(key.columns), validate=validate)
    return _finish(units, df["batch"].to_numpy(), df["precision"])


def static_features(configs: pd.DataFrame) -> pd.DataFrame:
    """Analytic static features of every row, for any registered family.

    Parameters
    ----------
    configs : pandas.DataFrame
        Config columns (a ``family`` column selects the family; default ``resnet``).

    Returns
    -------
    pandas.DataFrame
        :data:`STATIC_FEATURE_COLUMNS` (plus family-specific extras such as NB201 op counts),
        index-aligned with ``configs``.

    Raises
    ------
    ConfigError
        Naming the row and value when a config is outside the design space.
    """
    if "family" not in configs.columns or (configs["family"] == "resnet").all():
        return resnet_static_features(configs)
    parts = []
    for name, idx in configs.groupby("family", sort=False).groups.items():
        fam = get_family(name)
        if fam.static_features is None:
            raise ConfigError(f"family {name!r} has no analytic static features")
        parts.append(fam.static_features(configs.loc[idx]))
    return pd.concat(parts).reindex(configs.index)


def with_static_features(configs: pd.DataFrame) -> pd.DataFrame:
    """``configs`` with the static feature columns added (existing ones are replaced)."""
    feats = static_features(configs)
    return pd.concat([configs.drop(columns=feats.columns, errors="ignore"), feats], axis=1)


# --------------------------------------------------------------------------- measured
def measured_features(config, model=None) -> dict[str, int]:
    """Measure the static features of a config from its built model (on the ``meta`` device).

    FLOPs with ``FlopCounterMode``; parameters by counting; layer calls and output sizes with
    forward hooks on every leaf module (conv, BN, ReLU, pooling, linear). Nothing is allocated.

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
        The :data:`EXACT_COLUMNS` plus ``param_bytes``, for comparison with
        :func:`static_features`.
    """
    if getattr(config, "family", "resnet") == "nb201":  # none/skip ops: see carb_lib.nb201
        from carb_lib.nb201 import measured_nb201_features

        return measured_nb201_features(config, model=model)
    if model is None:
        model = meta_model(config)
    return measure_meta_model(model, config, [m for m in model.modules()
                                              if len(list(m.children())) == 0])


def measure_meta_model(model, config, hooked) -> dict[str, int]:
    """Run ``model`` (on the ``meta`` device) once on ``config``'s input and count.

    FLOPs with ``FlopCounterMode``; parameters by counting; forward hooks on the ``hooked``
    modules count conv, BN, ReLU and linear calls, the widest conv output (``max_channels``)
    and the bytes of every hooked module's output (``activation_bytes``).

    Parameters
    ----------
    model : torch.nn.Module
        ``config``'s network on the ``meta`` device at the config's precision.
    config
        A config with ``batch``, ``resolution`` and ``precision``.
    hooked : iterable of torch.nn.Module
        The modules whose calls and outputs count (e.g. every leaf module).

    Returns
    -------
    dict
        ``n_conv``, ``n_bn``, ``n_act``, ``n_fc``, ``max_channels``, ``flops``, ``params``,
        ``param_bytes``, ``activation_bytes``.
    """
    import torch
    from torch import nn
    from torch.utils.flop_counter import FlopCounterMode

    dtype = torch.float16 if config.precision == "fp16" else torch.float32
    kinds = {nn.Conv2d: "conv", nn.BatchNorm2d: "bn", nn.ReLU: "act", nn.Linear: "fc"}
    counts = {"conv": 0, "bn": 0, "act": 0, "fc": 0}
    totals = {"activation_bytes": 0, "max_channels": 0}

    def hook(module, _inputs, output):
        kind = kinds.get(type(module))
        if kind is not None:
            counts[kind] += 1
        if kind == "conv":
            totals["max_channels"] = max(totals["max_channels"], int(output.shape[1]))
        totals["activation_bytes"] += output.numel() * output.element_size()

    handles = [m.register_forward_hook(hook) for m in hooked]
    x = torch.empty(config.batch, 3, config.resolution, config.resolution, dtype=dtype,
                    device="meta")
    try:
        with torch.no_grad(), FlopCounterMode(display=False) as fc:
            model(x)
    finally:
        for h in handles:
            h.remove()
    params = sum(p.numel() for p in model.parameters())
    return {
        "n_conv": counts["conv"], "n_bn": counts["bn"], "n_act": counts["act"],
        "n_fc": counts["fc"], "max_channels": totals["max_channels"],
        "flops": int(fc.get_total_flops()), "params": int(params),
        "param_bytes": int(params * BYTES_PER_ELEMENT[config.precision]),
        "activation_bytes": int(totals["activation_bytes"]),
    }


def meta_model(config):
    """Build ``config``'s model on the ``meta`` device at its precision (allocates nothing)."""
    import torch

    from carb_lib.space import build_model

    dtype = torch.float16 if config.precision == "fp16" else torch.float32
    with torch.device("meta"):
        return build_model(config).to(dtype=dtype)


def _model_key(config) -> tuple:
    d = config.to_dict()
    return tuple(sorted((k, v) for k, v in d.items() if k not in ("batch", "resolution")))


def compare_features(configs: pd.DataFrame, progress: bool = False) -> pd.DataFrame:
    """Analytic against measured features for every row: one row per (config, column).

    Returns a tidy frame with ``config_id``, ``column``, ``analytic``, ``measured``, ``match``.
    """
    from tqdm.auto import tqdm

    from carb_lib.space import config_from_row

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
                aval = int(analytic.at[idx, col])
                rows.append({"config_id": row.get("config_id", idx), "column": col,
                             "analytic": aval, "measured": int(mval),
                             "match": aval == int(mval)})
    bar.close()
    return pd.DataFrame(rows)


def _register() -> None:
    fam = get_family("resnet")
    register_family(Family(**{**fam.__dict__, "static_features": resnet_static_features}))


_register()

__all__ = [
    "STATIC_FEATURE_COLUMNS", "EXACT_COLUMNS", "static_features", "with_static_features",
    "measured_features", "measure_meta_model", "compare_features", "resnet_static_features",
]
