"""The NAS-Bench-201 family (``nb201``): config, builder, analytic and measured static features.

The network follows the public NAS-Bench-201 definition (Dong & Yang, ICLR 2020; NATS-Bench
topology space, ``xautodl.models.cell_infers.tiny_network.TinyNetwork`` with
``InferCell`` and ``cell_operations``), with C=16 and N=5:

* stem: 3x3 conv (3 -> 16, stride 1, no bias) + BN;
* three stages of 5 cells (16, 32, 64 channels at R, R/2, R/4 for an R x R input), joined by
  two residual reduction blocks (NATS-Bench ``ResNetBasicblock``, stride 2: ReLU-Conv3x3/2-BN,
  ReLU-Conv3x3-BN, shortcut AvgPool2d(2, 2) + Conv1x1, summed, no final ReLU);
* ``lastact`` BN + ReLU, global average pool, linear classifier (with bias).

A cell is a DAG of 4 nodes; node j (1..3) is the sum of one operation on every earlier node
i < j (6 edges). Operations (C_in == C_out, stride 1 inside cells):

``none``          zeros (``x * 0``, a new tensor)
``skip_connect``  identity (aliases its input)
``nor_conv_1x1``  ReLU -> Conv1x1 (no bias) -> BN (affine)
``nor_conv_3x3``  ReLU -> Conv3x3 (pad 1, no bias) -> BN (affine)
``avg_pool_3x3``  AvgPool2d(3, stride 1, padding 1, count_include_pad=False)

The forward returns the logits (the reference returns ``(features, logits)``); parameter names
follow the reference (``stem``, ``cells.<i>.layers.<k>`` with k in edge order, ``lastact``,
``classifier``), so NATS-Bench state dicts load into it.

Static features share the ResNet columns (see :mod:`carb_lib.dataset.features`) with one convention
specific to this family: a ``none`` edge is a layer call that writes a zero tensor, so its
output counts in ``activation_bytes`` (it is materialised by the reference implementation); a
``skip_connect`` edge returns its input and counts nothing. Op-count features are per cell
(each cell has 6 edges; the network repeats the cell 15 times): ``n_op_none``, ``n_op_skip``,
``n_op_conv1x1``, ``n_op_conv3x3``, ``n_op_avgpool`` and ``longest_conv_path`` (the largest
number of conv edges on a path from the cell input to the cell output that avoids ``none``
edges; 0 if no such path exists).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import (
    ALLOC_FEATURES,
    COMMON_CONFIG_COLUMNS,
    EXTRA_STATIC_FEATURES,
    NB201_FEATURE_COLUMNS,
    PRECISIONS,
)
from carb_lib.families._base import ConfigColumn, ConfigError, Family
from carb_lib.families._common import (
    EXTRA_UNIT_COLUMNS,
    bytes_per_element,
    check_int,
    content_hash,
    family_rows,
    is_missing,
    measure_meta_model,
    meta_model,
    scale_extra_units,
    scale_units,
)
from carb_lib.families._common import (
    UNIT_COLUMNS as _COMMON_UNIT_COLUMNS,
)
from carb_lib.families._nb201_torch import nb201_modules

FAMILY = "nb201"
#: Operations of the NAS-Bench-201 space, in the benchmark's order.
OPS: tuple[str, ...] = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
#: Edges (source node, target node) in the order of the architecture string.
EDGES: tuple[tuple[int, int], ...] = ((0, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 3))
#: The family's own config columns (besides the common ones).
OWN_COLUMNS: tuple[ConfigColumn, ...] = (ConfigColumn("arch", "str", "NB201 arch string"),)
NB201_COLUMNS: tuple[str, ...] = (
    COMMON_CONFIG_COLUMNS[0], *(c.name for c in OWN_COLUMNS), *COMMON_CONFIG_COLUMNS[1:]
)
#: Columns a table must carry for NB201 rows (the common ones have defaults).
REQUIRED_COLUMNS: tuple[str, ...] = ("arch",)
STEM_CHANNELS = 16
CELLS_PER_STAGE = 5
NUM_CLASSES = 10
RESOLUTION = 32
#: Extra feature columns of this family (per cell).
OP_COUNT_COLUMNS: tuple[str, ...] = NB201_FEATURE_COLUMNS
_OP_COLUMN = {
    "none": "n_op_none", "skip_connect": "n_op_skip", "nor_conv_1x1": "n_op_conv1x1",
    "nor_conv_3x3": "n_op_conv3x3", "avg_pool_3x3": "n_op_avgpool",
}
_CONV_K = {"nor_conv_1x1": 1, "nor_conv_3x3": 3}


# --------------------------------------------------------------------------- arch strings
def parse_arch(arch: str) -> tuple[tuple[tuple[str, int], ...], ...]:
    """Parse and validate a NAS-Bench-201 architecture string.

    Parameters
    ----------
    arch : str
        E.g. ``"|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"``:
        three ``+``-separated nodes; node j lists ``op~i`` for i = 0..j-1, in that order.

    Returns
    -------
    tuple
        One tuple per node (1..3) of ``(op, input_node)`` pairs.

    Raises
    ------
    ValueError
        If the string is malformed or names an unknown operation (the message quotes it).
    """
    if not isinstance(arch, str):
        raise ValueError(f"NB201 arch must be a string, got {arch!r}")
    parts = arch.split("+")
    if len(parts) != 3:
        raise ValueError(
            f"malformed NB201 arch {arch!r}: expected 3 '+'-separated nodes, got {len(parts)}"
        )
    nodes = []
    for j, part in enumerate(parts, start=1):
        if len(part) < 2 or not (part.startswith("|") and part.endswith("|")):
            raise ValueError(
                f"malformed NB201 arch {arch!r}: node {j} {part!r} must look like '|op~i|...|'"
            )
        tokens = part[1:-1].split("|")
        if len(tokens) != j:
            raise ValueError(
                f"malformed NB201 arch {arch!r}: node {j} needs {j} input(s), got {len(tokens)} "
                f"in {part!r}"
            )
        edges = []
        for i, tok in enumerate(tokens):
            op, sep, src = tok.partition("~")
            if not sep or not src.isdigit():
                raise ValueError(
                    f"malformed NB201 arch {arch!r}: token {tok!r} must look like 'op~{i}'"
                )
            if op not in OPS:
                raise ValueError(
                    f"unknown NB201 operation {op!r} in arch {arch!r}; valid: {list(OPS)}"
                )
            if int(src) != i:
                raise ValueError(
                    f"malformed NB201 arch {arch!r}: node {j} input #{i} must come from node "
                    f"{i}, got {tok!r}"
                )
            edges.append((op, i))
        nodes.append(tuple(edges))
    return tuple(nodes)


def arch_ops(arch: str) -> tuple[str, ...]:
    """The 6 edge operations of ``arch`` in :data:`EDGES` order (validated)."""
    return tuple(op for node in parse_arch(arch) for op, _ in node)


def arch_from_ops(ops: tuple[str, ...] | list[str]) -> str:
    """The architecture string of 6 edge operations in :data:`EDGES` order."""
    if len(ops) != len(EDGES):
        raise ValueError(f"need {len(EDGES)} edge operations, got {len(ops)}: {ops!r}")
    for op in ops:
        if op not in OPS:
            raise ValueError(f"unknown NB201 operation {op!r}; valid: {list(OPS)}")
    nodes = [[], [], []]
    for (src, dst), op in zip(EDGES, ops, strict=True):
        nodes[dst - 1].append(f"{op}~{src}")
    return "+".join("|" + "|".join(n) + "|" for n in nodes)


def all_archs() -> list[str]:
    """All 15,625 NAS-Bench-201 architecture strings (5^6), in a fixed order."""
    return [arch_from_ops(ops) for ops in itertools.product(OPS, repeat=len(EDGES))]


def longest_conv_path(ops: tuple[str, ...]) -> int:
    """Most conv edges on a node-0 -> node-3 path avoiding ``none`` edges (0 if none exists)."""
    best = {0: 0}
    for node in (1, 2, 3):
        cands = [
            best[src] + (op in _CONV_K)
            for (src, dst), op in zip(EDGES, ops, strict=True)
            if dst == node and op != "none" and src in best
        ]
        if cands:
            best[node] = max(cands)
    return best.get(3, 0)


EDGE_COLUMNS: tuple[str, ...] = tuple(f"edge_{src}{dst}" for src, dst in EDGES)


def edge_encoding(archs: pd.Series) -> pd.DataFrame:
    """Per-edge operation codes (index into :data:`OPS`) of every arch: columns ``edge_01``..

    Vectorised over unique strings; a model feature that keeps the op positions that the
    per-cell op counts lose.
    """
    codes, uniques = pd.factorize(archs)
    table = np.array([[OPS.index(op) for op in arch_ops(a)] for a in uniques],
                     dtype=np.int64).reshape(len(uniques), len(EDGES))
    return pd.DataFrame(table[codes], columns=list(EDGE_COLUMNS), index=archs.index)


# --------------------------------------------------------------------------- config
def nb201_config_id(
    arch: str, resolution: int = RESOLUTION, batch: int = 1, precision: str = "fp32",
    num_classes: int = NUM_CLASSES,
) -> str:
    """Content hash (16 hex) of an NB201 config: sha1 of its canonical sorted-key JSON."""
    canonical = json.dumps(
        {"family": FAMILY, "arch": arch, "resolution": int(resolution), "batch": int(batch),
         "precision": precision, "num_classes": int(num_classes)},
        sort_keys=True, separators=(",", ":"),
    )
    return content_hash(canonical)


@dataclass(frozen=True)
class NB201Config:
    """One NAS-Bench-201 network at one input size, batch and precision (validated).

    Parameters
    ----------
    arch : str
        Architecture string (see :func:`parse_arch`).
    resolution : int
        Square input side in pixels; a multiple of 4 (two stride-2 reductions), 32 for CIFAR.
    batch : int
        Batch size (>= 1).
    precision : {"fp32", "fp16"}
    num_classes : int
        Classifier outputs (10 for CIFAR-10).
    """

    arch: str
    resolution: int = RESOLUTION
    batch: int = 1
    precision: str = "fp32"
    num_classes: int = NUM_CLASSES
    family: str = field(default=FAMILY, init=False)

    def __post_init__(self) -> None:
        try:
            parse_arch(self.arch)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        resolution = check_int("resolution", self.resolution)
        if resolution < 4 or resolution % 4:
            raise ConfigError(
                f"resolution={self.resolution!r} must be a positive multiple of 4 for NB201 "
                "(two stride-2 reductions)"
            )
        batch = check_int("batch", self.batch)
        if batch < 1:
            raise ConfigError(f"batch must be >= 1, got {self.batch!r}")
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"precision={self.precision!r} is unknown; valid values: {list(PRECISIONS)}"
            )
        num_classes = check_int("num_classes", self.num_classes)
        if num_classes < 1:
            raise ConfigError(f"num_classes must be >= 1, got {self.num_classes!r}")
        object.__setattr__(self, "resolution", resolution)
        object.__setattr__(self, "batch", batch)
        object.__setattr__(self, "num_classes", num_classes)

    @property
    def config_id(self) -> str:
        """Content hash (16 hex digits), identical on every machine and run."""
        return nb201_config_id(self.arch, self.resolution, self.batch, self.precision,
                               self.num_classes)

    @property
    def ops(self) -> tuple[str, ...]:
        """The 6 edge operations in :data:`EDGES` order."""
        return arch_ops(self.arch)

    def to_dict(self) -> dict[str, Any]:
        """Config columns as a plain dict (with ``family``)."""
        return {c: getattr(self, c) for c in NB201_COLUMNS}

    def build_model(self):
        """Build the network (see :func:`build_nb201`)."""
        return build_nb201(self)


def config_from_row(row: Mapping[str, Any]) -> NB201Config:
    """Validate one row (mapping) into an :class:`NB201Config`; defaults fill missing values."""
    if "arch" not in row or is_missing(row["arch"]):
        raise ConfigError("nb201 config is missing column 'arch'")
    kw = {}
    for c in ("resolution", "batch", "precision", "num_classes"):
        if c in row and not is_missing(row[c]):
            kw[c] = row[c]
    return NB201Config(arch=row["arch"], **kw)


def config_ids(df: pd.DataFrame) -> list[str]:
    """Content hashes of every row (vectorised over unique configs)."""
    if "arch" not in df.columns:
        raise ConfigError("nb201 configs are missing column(s) ['arch']")
    cols = {
        "arch": df["arch"],
        "resolution": df["resolution"] if "resolution" in df else RESOLUTION,
        "batch": df["batch"] if "batch" in df else 1,
        "precision": df["precision"] if "precision" in df else "fp32",
        "num_classes": df["num_classes"].fillna(NUM_CLASSES) if "num_classes" in df
        else NUM_CLASSES,
    }
    key = pd.DataFrame(cols, index=df.index)
    codes, uniques = pd.MultiIndex.from_frame(key).factorize()
    ids = np.array([nb201_config_id(*u) for u in uniques], dtype=object)
    return ids[codes].tolist()


def nb201_grid(
    archs: list[str] | None = None, batches: tuple[int, ...] = (1,),
    resolution: int = RESOLUTION, precision: str = "fp32", num_classes: int = NUM_CLASSES,
) -> pd.DataFrame:
    """A frame of NB201 configs (all 15,625 archs by default) with ``config_id``."""
    archs = all_archs() if archs is None else list(archs)
    df = pd.DataFrame(
        [(a, b) for b in batches for a in archs], columns=["arch", "batch"]
    )
    df.insert(0, "family", FAMILY)
    df["resolution"] = int(resolution)
    df["precision"] = precision
    df["num_classes"] = int(num_classes)
    df = df[list(NB201_COLUMNS)]
    df.insert(0, "config_id", config_ids(df))
    return df


# --------------------------------------------------------------------------- model
def build_nb201(config: NB201Config):
    """Build the NAS-Bench-201 network of ``config`` (fp32, eval mode, default device).

    Build under ``with torch.device("meta"):`` to count without allocating.
    """
    tiny = nb201_modules()[0]
    model = tiny(parse_arch(config.arch), STEM_CHANNELS, CELLS_PER_STAGE, config.num_classes)
    return model.eval()


# --------------------------------------------------------------------------- analytic features
UNIT_COLUMNS: tuple[str, ...] = (*_COMMON_UNIT_COLUMNS, *OP_COUNT_COLUMNS, *EXTRA_UNIT_COLUMNS)


@lru_cache(maxsize=65536)
def _nb201_unit(arch: str, resolution: int, num_classes: int) -> tuple[int, ...]:
    """Per-sample counts of one architecture at one resolution (see :data:`UNIT_COLUMNS`).

    The peak estimate follows the eager forward: the input batch stays alive; inside a cell
    every node tensor is held until the cell returns; a running layer holds its input and
    output; the generator ``sum`` of a node allocates a new partial sum for every edge.
    """
    ops = arch_ops(arch)
    n = {"conv": 0, "bn": 0, "act": 0, "pool": 0, "add": 0}
    macs = params = act = peak = mb = 0
    inp = 3 * resolution * resolution

    def live(*elems: int) -> None:
        nonlocal peak
        peak = max(peak, inp + sum(elems))

    def relu_conv_bn(cin, cout, k, h_out, h_in, held):
        """ReLU -> conv -> BN; ``held`` = elements alive besides this op's tensors."""
        nonlocal macs, params, act, mb
        e_in, e_out = cin * h_in * h_in, cout * h_out * h_out
        n["act"] += 1
        act += e_in
        mb += 2 * e_in + 2 * e_out  # the ReLU (a new tensor) and the BN read and write
        live(held, e_in)  # ReLU output (its input is part of ``held``)
        n["conv"] += 1
        macs += cout * cin * k * k * h_out * h_out
        params += cout * cin * k * k
        act += e_out
        live(held, e_in, e_out)
        n["bn"] += 1
        params += 2 * cout
        act += e_out
        live(held, e_out, e_out)
        return e_out

    # stem: conv 3 -> 16, BN
    c, h = STEM_CHANNELS, resolution
    u = c * h * h
    n["conv"] += 1
    macs += c * 3 * 9 * h * h
    params += c * 3 * 9
    act += u
    live(u)
    n["bn"] += 1
    params += 2 * c
    act += u
    mb += 2 * u
    live(u, u)
    for stage in range(3):
        if stage > 0:  # reduction block C -> 2C, H -> H/2 (input x held for the shortcut)
            cin, c, h_in, h = c, 2 * c, h, h // 2
            x = cin * h_in * h_in
            a = relu_conv_bn(cin, c, 3, h, h_in, x)
            b = relu_conv_bn(c, c, 3, h, h, x + a)  # conv_a's output is conv_b's input
            pooled = cin * h * h
            act += pooled
            n["pool"] += 1
            mb += x + pooled
            live(x, b, pooled)
            n["conv"] += 1
            macs += c * cin * h * h
            params += c * cin
            act += c * h * h
            live(x, b, pooled, c * h * h)
            live(b, c * h * h, c * h * h)  # residual add
            n["add"] += 1
            mb += 3 * c * h * h
        u = c * h * h
        for _ in range(CELLS_PER_STAGE):
            held = u  # node 0 (the cell input)
            for node in (1, 2, 3):
                partial = 0
                for (_src, dst), op in zip(EDGES, ops, strict=True):
                    if dst != node:
                        continue
                    if op in _CONV_K:
                        relu_conv_bn(c, c, _CONV_K[op], h, h, held + partial)
                        new = u
                    elif op == "avg_pool_3x3":
                        act += u
                        n["pool"] += 1
                        mb += 2 * u
                        live(held, partial, u)
                        new = u
                    elif op == "none":
                        act += u
                        live(held, partial, u)
                        new = u
                    else:  # skip_connect aliases its input
                        new = 0
                    live(held, partial, new, u)  # partial sum: a new tensor
                    if partial:  # ``0 + first`` adds a scalar; later edges add two tensors
                        n["add"] += 1
                        mb += 3 * u
                    partial = u
                held += u  # the node stays alive until the cell returns
    # lastact BN + ReLU (in place), global pool, classifier
    n["bn"] += 1
    params += 2 * c
    act += u
    live(u, u)
    n["act"] += 1
    act += u
    act += c
    n["pool"] += 1
    mb += 2 * u + 2 * u + u + c  # lastact BN, in-place ReLU, global pool
    live(u, c)
    macs += c * num_classes
    params += c * num_classes + num_classes
    act += num_classes
    live(c, num_classes)
    counts = [sum(op == name for op in ops) for name in OPS]
    return (
        n["conv"], n["bn"], n["act"], 1, 4 * STEM_CHANNELS, macs, params, act, peak,
        *counts, longest_conv_path(ops), 0, n["pool"], n["add"], 0, 0, 0, mb,
    )


def nb201_static_features(df: pd.DataFrame) -> pd.DataFrame:
    """Analytic static features of NB201 rows (vectorised over unique arch x resolution).

    Parameters
    ----------
    df : pandas.DataFrame
        Column ``arch``; optional ``resolution`` (32), ``batch`` (1), ``precision`` ("fp32"),
        ``num_classes`` (10).

    Returns
    -------
    pandas.DataFrame
        ``carb_lib.dataset.features.STATIC_FEATURE_COLUMNS`` plus :data:`OP_COUNT_COLUMNS`,
        index-aligned with ``df``. ``flops`` and the byte columns are for the whole batch.

    Raises
    ------
    ConfigError
        Naming the row and value of an invalid arch, resolution or precision.
    """
    if "arch" not in df.columns:
        raise ConfigError("nb201 configs are missing column(s) ['arch']")
    idx = df.index

    def col(name, default):
        if name not in df.columns:
            return pd.Series(default, index=idx)
        return df[name].where(df[name].notna(), default)

    key = pd.DataFrame({"arch": df["arch"], "resolution": col("resolution", RESOLUTION),
                        "num_classes": col("num_classes", NUM_CLASSES)}, index=idx)
    codes, uniques = pd.MultiIndex.from_frame(key).factorize()
    rows = []
    for arch, res, nc in uniques:
        try:
            parse_arch(arch)
            r = check_int("resolution", res)
            if r < 4 or r % 4:
                raise ValueError(f"resolution={res!r} must be a positive multiple of 4")
            rows.append(_nb201_unit(arch, r, check_int("num_classes", nc)))
        except (ValueError, ConfigError) as exc:
            bad = (key["arch"] == arch) & (key["resolution"] == res)
            raise ConfigError(f"row {bad.idxmax()!r}: {exc}") from None
    table = np.array(rows, dtype=np.float64).reshape(len(uniques), len(UNIT_COLUMNS))
    units = pd.DataFrame(table[codes], columns=list(UNIT_COLUMNS), index=idx)

    bpe = bytes_per_element(col("precision", "fp32"))
    batch = col("batch", 1).to_numpy(dtype=np.float64)
    if (batch < 1).any() or not np.all(np.mod(batch, 1) == 0):
        i = int(np.flatnonzero((batch < 1) | (np.mod(batch, 1) != 0))[0])
        raise ConfigError(f"row {idx[i]!r}: batch={batch[i]!r} must be an integer >= 1")
    out = scale_units(units, batch, bpe)
    for c in OP_COUNT_COLUMNS:
        out[c] = units[c].to_numpy().astype(np.int64)
    extra = scale_extra_units(units, batch, bpe, out["flops"].to_numpy())
    for c in EXTRA_STATIC_FEATURES:
        out[c] = extra[c].to_numpy()
    for name in ALLOC_FEATURES.values():  # no walk for cells (carb_lib.families.allocator has one)
        out[name] = np.nan
    return out


# --------------------------------------------------------------------------- measured
def measured_nb201_features(config: NB201Config, model=None) -> dict[str, int]:
    """Measure the static features of ``config`` from its built model on the ``meta`` device.

    FLOPs with ``FlopCounterMode``; parameters by counting; layer calls and output sizes with
    forward hooks on conv, BN, ReLU, pooling, linear and ``none`` (Zero) modules (``skip``
    aliases its input and is not counted); op counts and the longest conv path from the built
    cells' modules. Nothing is allocated.

    Parameters
    ----------
    config : NB201Config
    model : torch.nn.Module, optional
        The config's network already built on the ``meta`` device at its precision (reused
        across batch sizes and resolutions by :func:`carb_lib.dataset.features.compare_features`).

    Returns
    -------
    dict
        ``n_conv``, ``n_bn``, ``n_act``, ``n_fc``, ``max_channels``, ``flops``, ``params``,
        ``param_bytes``, ``activation_bytes`` and :data:`OP_COUNT_COLUMNS`.
    """
    from torch import nn

    if model is None:
        model = meta_model(config)
    counted = (nn.Conv2d, nn.BatchNorm2d, nn.ReLU, nn.Linear, nn.AvgPool2d,
               nn.AdaptiveAvgPool2d)
    out = measure_meta_model(model, config, [
        m for m in model.modules() if isinstance(m, counted) or type(m).__name__ == "Zero"],
        extras=EXTRA_STATIC_FEATURES)

    # op counts from the modules of the first cell (every cell has the same genotype)
    cell = next(m for m in model.modules() if type(m).__name__ == "InferCell")
    ops = []
    for layer in cell.layers:
        name = type(layer).__name__
        if name == "Zero":
            ops.append("none")
        elif name == "Identity":
            ops.append("skip_connect")
        elif name == "Pool":
            ops.append("avg_pool_3x3")
        else:
            k = layer.op[1].kernel_size[0]
            ops.append({1: "nor_conv_1x1", 3: "nor_conv_3x3"}[k])
    for name in OPS:
        out[_OP_COLUMN[name]] = sum(op == name for op in ops)
    out["longest_conv_path"] = longest_conv_path(tuple(ops))
    return out


# --------------------------------------------------------------------------- learners
#: The learners' encoding of the arch (:func:`encode_nb201_config`): one count per operation.
MATRIX_COLUMNS: tuple[str, ...] = tuple(f"nb201_n_{op}" for op in OPS)
#: Their value in rows of other families (no operation).
NOT_APPLICABLE: float = 0.0


def _op_counts(arch: pd.Series) -> np.ndarray:
    """Counts of each :data:`OPS` operation per arch string, shape (rows, ops)."""

    def table(uniques):
        # one parse per distinct arch string, with the family's own (validating) parser
        rows = [[ops.count(op) for op in OPS] for ops in map(arch_ops, uniques)]
        return np.asarray(rows, dtype=float).reshape(len(uniques), len(OPS))

    codes, uniques = pd.factorize(arch, use_na_sentinel=True)
    counts = np.vstack([table(uniques), np.zeros((1, len(OPS)))])  # missing -> 0 ops
    return counts[codes]


def encode_nb201_config(df: pd.DataFrame, rows: np.ndarray | None = None) -> pd.DataFrame:
    """The learners' numeric encoding of the NB201 config column ``arch``.

    Parameters
    ----------
    df : pandas.DataFrame
        Rows of any families (validated beforehand).
    rows : numpy.ndarray of bool, optional
        Which rows are NB201 rows; default ``df["family"] == "nb201"``.

    Returns
    -------
    pandas.DataFrame
        float64 columns :data:`MATRIX_COLUMNS` (``nb201_n_<op>`` for every op of :data:`OPS`,
        in that order): how many of the cell's 6 edges carry the op; :data:`NOT_APPLICABLE`
        (0.0) in rows of other families and where ``arch`` is missing. Each distinct arch
        string is parsed (and validated) once.
    """
    mine = family_rows(df, FAMILY, rows)
    counts = np.full((len(df), len(OPS)), NOT_APPLICABLE)
    if mine.any():
        counts[mine] = _op_counts(df["arch"][mine])
    return pd.DataFrame(counts, index=df.index, columns=list(MATRIX_COLUMNS))


# --------------------------------------------------------------------------- the family
class NB201Family(Family):
    """The ``nb201`` family (see the module docstring)."""

    name = FAMILY
    config_type = NB201Config
    own_columns = OWN_COLUMNS
    required_columns = REQUIRED_COLUMNS
    categories = {}
    extra_feature_columns = (*OP_COUNT_COLUMNS, *EXTRA_STATIC_FEATURES)
    matrix_columns = MATRIX_COLUMNS
    not_applicable = NOT_APPLICABLE
    # columns in every model matrix: the layout of the models fitted before other families
    always_in_matrix = True

    from_row = staticmethod(config_from_row)
    config_ids = staticmethod(config_ids)
    build_model = staticmethod(build_nb201)
    static_features = staticmethod(nb201_static_features)
    measured_features = staticmethod(measured_nb201_features)
    encode_config = staticmethod(encode_nb201_config)

    def arch_features(self, df: pd.DataFrame) -> pd.DataFrame:
        """The per-edge operation codes of every row's cell (:func:`edge_encoding`, float64)."""
        return edge_encoding(df["arch"]).astype(np.float64)


#: The family object (registered by :mod:`carb_lib.families`).
NB201 = NB201Family()

__all__ = [
    "OPS", "EDGES", "NB201_COLUMNS", "OP_COUNT_COLUMNS", "NB201Config", "parse_arch",
    "arch_ops", "arch_from_ops", "all_archs", "EDGE_COLUMNS", "edge_encoding",
    "longest_conv_path", "nb201_config_id", "config_from_row", "config_ids", "nb201_grid",
    "build_nb201", "nb201_static_features", "measured_nb201_features", "encode_nb201_config",
    "MATRIX_COLUMNS", "NOT_APPLICABLE", "NB201Family", "NB201",
]
