"""What an operator of the kernel characterization is, and the sampler that draws them.

The kernel characterization (:mod:`carb_lib.kernels.law`) times operators alone and learns their
cost from their shape. This module holds the layer beneath it: the operator vocabulary
(:data:`KERNEL_KINDS`, :data:`OP_COLUMNS`, how FLOPs are counted), :func:`sample_kernels`,
which draws operators from a *generic* grid — from no network family's configs — in versions
that each reproduce the operators they drew (a benchmark's ``sampler`` and ``sample_seed``
columns say which draw a row came from), and the benchmark file: :data:`BENCH_COLUMNS`,
:func:`read_bench` (one file, or several read as one benchmark) and :func:`check_append`.
:mod:`carb_lib.kernels.law` re-exports these names.

Examples
--------
>>> from carb_lib.kernels.operators import sample_kernels
>>> ops = sample_kernels(5, seed=0)
>>> list(ops.columns)[:3]
['kind', 'cin', 'cout']
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import PRECISIONS
from carb_lib.measure.heap import recorded_heaps

__all__ = ["BENCH_COLUMNS", "DRAW_COLUMN", "KERNEL_KINDS", "OP_COLUMNS", "SAMPLER_VERSION",
           "check_append", "read_bench", "sample_kernels"]

#: Operator kinds: convolutions (dense and depthwise), linear layers, and the memory-bound
#: operators between them.
KERNEL_KINDS: tuple[str, ...] = ("conv", "dwconv", "linear", "bn", "relu", "relu6", "silu",
                                 "sigmoid", "add", "mul", "maxpool", "avgpool")
#: An operator's shape, per image: channels in and out, square kernel, stride, padding, groups,
#: spatial size in and out (1 for linear layers and global pooling).
OP_COLUMNS: tuple[str, ...] = ("kind", "cin", "cout", "k", "stride", "pad", "groups", "h_in",
                               "h_out")
#: Operator kinds with weights (FLOPs are counted for them, output elements for the others).
_WEIGHTED = ("conv", "dwconv", "linear")
_ELTWISE = ("bn", "relu", "relu6", "silu", "sigmoid", "add", "mul", "maxpool", "avgpool")
_SPATIAL = (1, 2, 4, 7, 8, 12, 14, 16, 24, 28, 32, 48, 56, 64, 96, 112, 128, 160, 192, 224)
_SMALL_SPATIAL = (1, 2, 4, 7, 8)
_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
#: Largest operator the sampler draws (FLOPs per precision; elements in and out).
_FLOP_CAP = {"fp32": 3e9, "fp16": 3e8}
_ELEM_CAP = 6e7
#: Version 4's share of draws from the depthwise and squeeze-and-excitation regime, and what
#: that regime draws: batches, the maps a depthwise kernel overhangs (the kernel is larger
#: than the map: most taps read padding), and the late-stage maps of compact networks.
_REGIME_SHARE = 0.3
_REGIME_BATCHES = (16, 32, 64, 128, 256)
_OVERHANG = {3: (1, 2), 5: (1, 2, 4)}
_LATE_SPATIAL = (4, 7, 8, 14, 16, 28)
_SE_SPATIAL = (1, 2, 4, 7, 8, 14)
#: :func:`sample_kernels`' current version (a benchmark's ``sampler`` column says which drew
#: each operator, ``sample_seed`` with which seed).
SAMPLER_VERSION = 4


def sample_kernels(n: int, *, seed: int = 0, fp16_share: float = 0.35,
                   version: int = SAMPLER_VERSION) -> pd.DataFrame:
    """``n`` operators from the generic grid (no family's configs), with batch and precision.

    Version 4 (the default) is version 3 with 30 % of its draws taken from the regime of
    depthwise and squeeze-and-excitation (SE) blocks at batches 16-256, where a campaign of 2026-12-01 found
    the kernel model up to 80x too fast (a 5x5 depthwise conv on a 1x1 map runs at ~0.1
    GFLOP/s) and version 3 had few operators: of those draws 60 % are depthwise 3x3 / 5x5
    convolutions with 16-2048 channels, half of them on a map smaller than the kernel (1-2 px
    for 3x3, 1-4 px for 5x5), half on 4-28 px maps; 20 % are the SE's 1x1 convolutions on a
    1x1 map (reducing: 32-2048 channels in, at most as many out, 4-512; or expanding, the
    reverse); 20 % its memory-bound operators (the gate's multiply and the global pool on
    1-14 px maps, sigmoid and SiLU on the 1x1 squeezed map). The other 70 % are drawn as by
    version 3, from the same random stream (not the same operators as version 3's seed).

    Version 3 is version 2 with two changes, made after version 2's model still
    predicted the last stages of 4x-wide ResNets 1.6-2.4x too fast and VGG's pools 3-8x too
    fast. First, 25 % of the dense convolutions (not 15 %; taken from the share whose output
    channels are within 4x of the input, now 30 %) have 512-2048 channels in and out, and 60 %
    of those with a kernel above 1x1 sit at 1-8 px with 1024-2048 channels in and out (weights
    of 19-150 MB against a 32 MB L3, streamed from memory at ~1.2 GB/s by oneDNN on the Zen 3).
    Second, half of the max pools are VGG's 2x2 stride-2 pool without padding (the other half
    ResNet's 3x3 stride-2 stem pool).

    Version 2: 55 % dense convolutions (1x1, 3x3, a few 5x5 and 7x7 stems),
    15 % depthwise 3x3/5x5, 5 % linear layers, 25 % memory-bound operators; channels
    log-uniform (multiples of 8 above 8); of the dense convolutions (besides 3-channel stems)
    15 % have 512-2048 channels in and out (the large weights that dominate wide networks and
    run far below peak at small feature maps), 40 % output channels within a factor 4 of
    their input channels, the rest both independent; spatial sizes of common feature maps, down
    to 1 px for padded 3x3 and 5x5 kernels; stride 1 or 2, batch 1-256; operators above 3 GFLOP
    (fp32) / 0.3 GFLOP (fp16) or 6e7 elements are redrawn.

    Version 1 (the first 3,000 operators of ``data/cpu_epyc_zen3_2c/design/kernels.parquet``): 45 %
    dense convolutions with independent channels, 35 % memory-bound operators, and no 3x3 or
    5x5 kernel at 1 px; kept so that a seed reproduces the operators it drew.

    Parameters
    ----------
    n : int
        Operators to draw.
    seed : int, default=0
    fp16_share : float, default=0.35
        Share of float16 operators.
    version : {1, 2, 3, 4}, default=SAMPLER_VERSION

    Returns
    -------
    pandas.DataFrame
        :data:`OP_COLUMNS`, ``batch`` and ``precision``, one row per operator.

    Examples
    --------
    >>> ops = sample_kernels(200, seed=3)
    >>> bool((ops["h_out"] >= 1).all())
    True
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not 0 <= fp16_share <= 1:
        raise ValueError(f"fp16_share must be in [0, 1], got {fp16_share}")
    if version not in (1, 2, 3, 4):
        raise ValueError(f"version must be 1, 2, 3 or 4, got {version}")
    rng = np.random.default_rng(seed)
    p_conv = 0.45 if version == 1 else 0.55

    def ch(lo: float, hi: float) -> int:
        c = int(np.exp(rng.uniform(np.log(lo), np.log(hi))))
        return c if c <= 8 else int(round(c / 8) * 8)

    rows: list[dict[str, Any]] = []
    while len(rows) < n:
        if version >= 4 and rng.random() < _REGIME_SHARE:
            prec = "fp16" if rng.random() < fp16_share else "fp32"
            b = int(rng.choice(_REGIME_BATCHES))
            r, h = _regime_draw(rng, ch)
        else:
            prec = "fp16" if rng.random() < fp16_share else "fp32"
            b = int(rng.choice(_BATCHES))
            r, h = _grid_draw(rng, ch, version, p_conv)
        r.setdefault("pad", r["k"] // 2)
        if version == 1 and r["kind"] in ("conv", "dwconv", "maxpool") and h < r["k"] and h < 2:
            continue
        r["h_in"] = h
        r["h_out"] = 1 if r["kind"] == "avgpool" else (h + 2 * r["pad"] - r["k"]) // r["stride"] + 1
        flops = float(_op_flops(r["kind"] in _WEIGHTED, b, r["cin"], r["cout"], r["k"],
                                r["groups"], r["h_out"]))
        elems = b * (r["cin"] * h * h + r["cout"] * r["h_out"] ** 2)
        if r["h_out"] < 1 or flops > _FLOP_CAP[prec] or elems > _ELEM_CAP:
            continue
        rows.append({**r, "batch": b, "precision": prec})
    return pd.DataFrame(rows, columns=[*OP_COLUMNS, "batch", "precision"])


def _grid_draw(rng: np.random.Generator, ch: Any, version: int,
               p_conv: float) -> tuple[dict[str, Any], int]:
    """One operator of versions 1-3's grid (without padding and output size) and its map."""
    u = rng.random()
    h = int(rng.choice(_SPATIAL))
    if u < p_conv:
        k = int(rng.choice([1, 3, 5, 7], p=[0.45, 0.45, 0.03, 0.07]))
        cin = 3 if (k == 7 or rng.random() < 0.04) else ch(8, 2048)
        v = rng.random() if version >= 2 and cin > 3 else 1.0
        if v < (0.15 if version == 2 else 0.25):  # a wide stage: large in, large out
            cin, cout = ch(512, 2048), ch(512, 2048)
            if version >= 3 and k > 1 and rng.random() < 0.6:
                # the last stage of a wide network: small feature maps, weights past L3
                h = int(rng.choice(_SMALL_SPATIAL))
                cin, cout = ch(1024, 2048), ch(1024, 2048)
        elif v < 0.55:  # output channels within a factor 4 of the input's
            cout = ch(max(8.0, cin / 4), min(2048.0, cin * 4))
        else:
            cout = ch(8, 2048)
        r = dict(kind="conv", cin=cin, cout=cout, k=k, groups=1,
                 stride=int(rng.choice([1, 2], p=[0.75, 0.25])))
    elif u < p_conv + 0.15:
        c = ch(8, 1536)
        r = dict(kind="dwconv", cin=c, cout=c, k=int(rng.choice([3, 5])), groups=c,
                 stride=int(rng.choice([1, 2], p=[0.7, 0.3])))
    elif u < p_conv + 0.20:
        r = dict(kind="linear", cin=ch(16, 2048), cout=ch(8, 1280), k=1, groups=1, stride=1)
        h = 1
    else:
        kind = str(rng.choice(_ELTWISE))
        c = ch(8, 2048)
        r = dict(kind=kind, cin=c, cout=c, k=1, groups=1, stride=1)
        if kind == "maxpool":
            r.update(k=3, stride=2)
            if version >= 3 and rng.random() < 0.5:
                r.update(k=2, pad=0)  # VGG's 2x2 pool: no padding
    return r, h


def _regime_draw(rng: np.random.Generator, ch: Any) -> tuple[dict[str, Any], int]:
    """One operator of version 4's depthwise and squeeze-and-excitation regime and its map."""
    w = rng.random()
    if w < 0.6:  # depthwise, half of them on a map the kernel overhangs
        k = int(rng.choice([3, 5]))
        c = ch(16, 2048)
        overhang = rng.random() < 0.5
        h = int(rng.choice(_OVERHANG[k] if overhang else _LATE_SPATIAL))
        return dict(kind="dwconv", cin=c, cout=c, k=k, groups=c,
                    stride=int(rng.choice([1, 2], p=[0.75, 0.25]))), h
    if w < 0.8:  # the SE's 1x1 convolutions on the squeezed 1x1 map
        wide, narrow = ch(32, 2048), ch(4, 512)
        narrow = min(narrow, wide)
        cin, cout = (wide, narrow) if rng.random() < 0.5 else (narrow, wide)
        return dict(kind="conv", cin=cin, cout=cout, k=1, groups=1, stride=1), 1
    kind = str(rng.choice(["mul", "avgpool", "sigmoid", "silu"]))
    c = ch(16, 2048)
    h = int(rng.choice(_SE_SPATIAL)) if kind in ("mul", "avgpool") else 1
    return dict(kind=kind, cin=c, cout=c, k=1, groups=1, stride=1), h


def _op_flops(weighted: Any, batch: Any, cin: Any, cout: Any, k: Any, groups: Any,
              h_out: Any) -> np.ndarray:
    """FLOPs (2 per multiply-add) where ``weighted`` (convolutions, linear layers), output
    elements elsewhere; arrays or one operator's scalars."""
    conv = 2 * batch * cout * cin / groups * k ** 2 * h_out ** 2
    return np.where(weighted, conv, batch * cout * h_out ** 2)


def _weighted(ops: pd.DataFrame) -> np.ndarray:
    """Which operators have weights (:data:`_WEIGHTED`)."""
    return np.isin(ops["kind"].astype(str).to_numpy(), _WEIGHTED)


def _byte_parts(ops: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bytes an operator reads and writes once: input, output, weights (0 without weights)."""
    f = {c: ops[c].to_numpy(dtype=float) for c in ("cin", "cout", "k", "groups", "h_in",
                                                    "h_out", "batch")}
    bpe = np.where(ops["precision"].astype(str).to_numpy() == "fp16", 2.0, 4.0)
    w = np.where(_weighted(ops), f["cout"] * f["cin"] / f["groups"] * f["k"] ** 2 * bpe, 0.0)
    return (f["batch"] * f["cin"] * f["h_in"] ** 2 * bpe,
            f["batch"] * f["cout"] * f["h_out"] ** 2 * bpe, w)


# --------------------------------------------------------------------------- benchmark files
#: Columns of a kernel benchmark (:func:`carb_lib.kernels.law.bench_kernels`), besides its
#: provenance columns.
BENCH_COLUMNS: tuple[str, ...] = (*OP_COLUMNS, "batch", "precision", "time_ms", "cv", "n_iter")
#: The column naming a benchmark's draws (one ``carb kernels`` run, one timing session each).
DRAW_COLUMN = "sample_seed"


def _check_ops(ops: pd.DataFrame, need: tuple[str, ...] = ()) -> None:
    missing = [c for c in (*OP_COLUMNS, *need) if c not in ops.columns]
    if missing:
        raise ValueError(f"operator table lacks column(s) {missing}")
    bad = ~ops["kind"].astype(str).isin(KERNEL_KINDS)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(f"row {i}: kind={_v(ops['kind'].iloc[i])} is not one of "
                         f"{list(KERNEL_KINDS)}")
    if "precision" in need:
        bad = ~ops["precision"].astype(str).isin(PRECISIONS)
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(f"row {i}: precision={_v(ops['precision'].iloc[i])} is not one of "
                             f"{list(PRECISIONS)}")
    for c in ("cin", "cout", "k", "stride", "groups", "h_in", "h_out", *(
            ("batch",) if "batch" in need else ())):
        v = pd.to_numeric(ops[c], errors="coerce").to_numpy(dtype=float)
        bad = ~(np.isfinite(v) & (v >= 1))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"row {i}: {c}={_v(ops[c].iloc[i])} must be an integer >= 1")


def _v(x: Any) -> str:
    """A value as an error message shows it (strings quoted, numbers plain)."""
    return repr(x) if isinstance(x, str) else str(x)


def read_bench(path: Any) -> pd.DataFrame:
    """A kernel benchmark file (:func:`carb_lib.kernels.law.bench_kernels`' rows), checked: one
    clear error for a missing file, a missing column or an invalid row.

    ``path`` may also be a list of such files, e.g. a platform's benchmark and a later draw kept
    in a file of its own: their rows are concatenated, each file checked, and the files must be
    one benchmark that ``carb kernels --append`` could have written (same platform, CPU,
    threads and PyTorch; no sample seed in two files), else one clear ``ValueError``.

    Examples
    --------
    >>> from carb_lib.kernels.law import read_bench
    >>> bench = read_bench(["data/cpu_xeon_gnr_2c/design/kernels.parquet",
    ...                     "data/cpu_xeon_gnr_2c/sampler4/kernels.parquet"])  # doctest: +SKIP
    """
    from pathlib import Path

    if isinstance(path, (list, tuple)):
        if not path:
            raise ValueError("no kernel benchmark file given")
        if len(path) == 1:
            return read_bench(path[0])
        parts = [read_bench(p) for p in path]
        for i in range(1, len(parts)):
            before, part = [str(q) for q in path[:i]], parts[i]
            for col in _PROVENANCE:
                have = sorted(set().union(*(_held(d, col) for d in parts[:i])))
                mine = _held(part, col)
                if have and mine and have != mine:
                    raise ValueError(f"{path[i]}: {col} {mine} differs from {have} in {before}: "
                                     "not one benchmark")
            both = _seeds(part) & set().union(*(_seeds(d) for d in parts[:i]))
            if both:
                raise ValueError(f"{path[i]}: sample seed(s) {sorted(both)} also in {before}: "
                                 "the same draw twice")
        return pd.concat(parts, ignore_index=True)
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such kernel benchmark file (carb kernels --out ...)")
    df = pd.read_parquet(p)
    missing = [c for c in BENCH_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{p}: not a kernel benchmark, column(s) {missing} missing")
    _check_ops(df, need=("batch", "precision"))
    t = pd.to_numeric(df["time_ms"], errors="coerce").to_numpy(dtype=float)
    bad = ~(np.isfinite(t) & (t > 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{p}: row {i}: time_ms={_v(df['time_ms'].iloc[i])} must be > 0")
    return df


def check_append(old: pd.DataFrame, *, platform: str, threads: int, seed: int,
                 torch_version: str, cpu_id: str | None = None,
                 heap_kept: bool | None = None, denormals_flushed: bool | None = None) -> None:
    """Refuse to add operators to a benchmark ``old`` measured otherwise: another platform,
    CPU (``cpu_id``, where ``old`` records it), thread count or PyTorch, heap (``heap_kept``;
    operators timed before 2026-12-03 lack the column and ran with the default heap),
    denormals (``denormals_flushed``; absent before 2026-12-03: not flushed), or a sample
    seed it already holds (one clear ``ValueError``)."""
    for col, value in zip(_PROVENANCE, (platform, cpu_id, threads, torch_version), strict=True):
        if value is None:
            continue
        have = _held(old, col)
        if have and have != [str(value)]:
            raise ValueError(f"the benchmark holds {col} {have}; this run's is {_v(value)}: "
                             "measure into a new file instead")
    if heap_kept is not None:
        have = recorded_heaps(old["heap_kept"].dropna() if "heap_kept" in old else [])
        if have != [bool(heap_kept)]:
            raise ValueError(f"the benchmark holds heap_kept {have}; this run's is "
                             f"{bool(heap_kept)}: measure into a new file instead (or match it "
                             "with --keep-heap / --default-heap)")
    if denormals_flushed is not None:
        have = sorted({bool(v) for v in old["denormals_flushed"].fillna(False)}
                      if "denormals_flushed" in old else {False})
        if have != [bool(denormals_flushed)]:
            raise ValueError(f"the benchmark holds denormals_flushed {have}; this run's is "
                             f"{bool(denormals_flushed)}: measure into a new file instead (its "
                             "silu rows were timed through denormals, a campaign of 2026-12-03)")
    seeds = _seeds(old)
    if int(seed) in seeds:
        raise ValueError(f"the benchmark already holds the operators of --seed {seed} "
                         f"(seeds {sorted(seeds)}); give another seed")


#: The provenance columns that make operators one benchmark (:func:`check_append`).
_PROVENANCE = ("platform", "cpu_id", "threads", "torch_version")


def _held(df: pd.DataFrame, col: str) -> list[str]:
    """The values of provenance column ``col`` in a benchmark, as sorted strings ([] if none)."""
    return sorted({str(v) for v in df[col].dropna().unique()}) if col in df else []


def _seeds(df: pd.DataFrame) -> set[int]:
    """The sample seeds (draws) a benchmark holds."""
    return set(pd.to_numeric(df.get(DRAW_COLUMN, pd.Series(dtype=float)),
                             errors="coerce").dropna().astype(int))
