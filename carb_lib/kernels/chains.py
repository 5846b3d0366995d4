"""What a chain of operators costs beyond its parts.

The kernel law sums operators timed alone (:func:`carb_lib.kernels.law.bench_kernels`). Eager
PyTorch on a CPU runs a network's convolution, batch norm and activation as separate calls, one
after the other on the same tensor: each call pays its dispatch once, and the second reads what
the first has just written (from cache, where it fits), which an operator timed alone re-reads
from wherever its input settled after the previous call. :func:`find_chains` picks runs of
consecutive operators of networks' operator lists (:func:`carb_lib.kernels.op_lists.network_ops`)
whose kinds follow a pattern (:data:`CHAIN_PATTERNS`) and whose shapes connect;
:func:`time_chains` times each chain as one call (its operators in sequence, each on the
previous one's output) and each of its operators alone as the operator benchmark does, the two
alternated within each round, and reports ``ratio`` = chain time / sum of the parts' times:
below 1, sequencing saves; above 1, it adds. ``benchmarks/chain_overhead.py`` runs it on the
chains of the design families on this CPU.

Examples
--------
>>> import pandas as pd
>>> from carb_lib.kernels.chains import find_chains
>>> ops = pd.DataFrame({"arch_id": 0, "kind": ["conv", "bn", "relu", "maxpool"],
...                     "cin": [3, 8, 8, 8], "cout": 8, "k": [3, 1, 1, 3], "stride": [2, 1, 1, 2],
...                     "pad": [1, 0, 0, 1], "groups": 1, "h_in": [32, 16, 16, 16],
...                     "h_out": [16, 16, 16, 8]})
>>> find_chains(ops)[["chain_id", "pattern", "kind"]].to_dict("list")
{'chain_id': [0, 0, 0], 'pattern': ['conv+bn+relu', 'conv+bn+relu', 'conv+bn+relu'], 'kind': ['conv', 'bn', 'relu']}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from carb_lib.kernels.law import _layer, _module, _time_call, timing_protocol
from carb_lib.kernels.operators import OP_COLUMNS

__all__ = ["CHAIN_PATTERNS", "chain_summary", "find_chains", "time_chains"]

#: Kinds of consecutive operators timed as one chain, longest first (a run is matched by the
#: first pattern it starts): the post-ops eager PyTorch runs after a convolution.
CHAIN_PATTERNS: tuple[tuple[str, ...], ...] = (
    ("conv", "bn", "relu"), ("conv", "bn", "relu6"), ("conv", "bn", "silu"),
    ("dwconv", "bn", "relu"), ("dwconv", "bn", "relu6"), ("dwconv", "bn", "silu"),
    ("conv", "bn"), ("dwconv", "bn"), ("conv", "relu"),
)


def _connects(a: pd.Series, b: pd.Series) -> bool:
    """``b`` reads what ``a`` writes: its channels and spatial size in are ``a``'s out."""
    return int(b["cin"]) == int(a["cout"]) and int(b["h_in"]) == int(a["h_out"])


def find_chains(ops: pd.DataFrame, *,
                patterns: Sequence[tuple[str, ...]] = CHAIN_PATTERNS) -> pd.DataFrame:
    """The chains of ``ops`` (``arch_id`` and :data:`OP_COLUMNS`, a network's operators in call
    order): runs of consecutive operators whose kinds follow one of ``patterns`` and whose
    shapes connect, each run once; the same chain (same kinds and shapes) in several networks
    is kept once.

    Returns
    -------
    pandas.DataFrame
        ``chain_id``, ``pattern`` (kinds joined by ``+``), ``position`` (in the chain) and
        :data:`OP_COLUMNS`, one row per operator of a chain.
    """
    missing = [c for c in ("arch_id", *OP_COLUMNS) if c not in ops.columns]
    if missing:
        raise ValueError(f"operator rows lack {missing}: give network_ops' rows")
    pats = sorted({tuple(p) for p in patterns}, key=len, reverse=True)
    seen: set[tuple] = set()
    out: list[dict[str, Any]] = []
    for _, net in ops.groupby("arch_id", sort=False):
        rows = [r for _, r in net.iterrows()]
        i = 0
        while i < len(rows):
            for pat in pats:
                run = rows[i:i + len(pat)]
                if len(run) == len(pat) \
                        and all(str(r["kind"]) == k for r, k in zip(run, pat, strict=True)) \
                        and all(_connects(a, b) for a, b in zip(run, run[1:], strict=False)):
                    key = tuple(tuple(r[c] for c in OP_COLUMNS) for r in run)
                    if key not in seen:
                        seen.add(key)
                        cid = len(seen) - 1
                        out += [{"chain_id": cid, "pattern": "+".join(pat), "position": j,
                                 **{c: r[c] for c in OP_COLUMNS}} for j, r in enumerate(run)]
                    i += len(pat) - 1
                    break
            i += 1
    return pd.DataFrame(out, columns=["chain_id", "pattern", "position", *OP_COLUMNS])


def _chain_module(nn: Any, r: pd.Series) -> Any:
    """The module of one operator of a chain (those of :data:`CHAIN_PATTERNS`)."""
    if str(r["kind"]) in ("add", "mul"):
        raise ValueError(f"a chain holds modules, one after another; got {r['kind']!r}")
    return _layer(r, nn)


def _chain_call(chain: pd.DataFrame, batch: int, dtype: Any):
    """A no-argument call running the chain's operators in sequence on one random input."""
    import torch

    first = chain.iloc[0]
    x = torch.randn(batch, int(first["cin"]), int(first["h_in"]), int(first["h_in"])).to(dtype)
    nn = torch.nn
    mods = [_chain_module(nn, r) for _, r in chain.iterrows()]
    seq = nn.Sequential(*mods).to(dtype).eval()
    return lambda: seq(x)


def time_chains(chains: pd.DataFrame, *, batches: Iterable[int] = (1,),
                precision: str = "fp32", threads: int = 1, keep_heap: bool = True,
                window_s: float = 0.02, n_windows: int = 5, rounds: int = 3,
                progress: bool = True) -> pd.DataFrame:
    """Time each chain of :func:`find_chains` as one call and each of its operators alone.

    Parameters
    ----------
    chains : pandas.DataFrame
        :func:`find_chains`' rows.
    batches : iterable of int, default=(1,)
        Images per call; every chain is timed at each.
    precision : {"fp32", "fp16"}, default="fp32"
    threads : int, default=1
        Intra-op threads (the protocol of every stored row: 1).
    keep_heap : bool, default=True
        Keep this process's heap first (:func:`carb_lib.measure.heap.keep_heap`), as the zoo
        rows and the kept-heap benchmarks were timed.
    window_s, n_windows : float, int
        Each timing as :func:`carb_lib.kernels.law.bench_kernels` times an operator.
    rounds : int, default=3
        Rounds of (chain, then each part); the chain's and each part's time is its median over
        the rounds, so that a drift of the host's speed within a chain's timing is shared.

    Returns
    -------
    pandas.DataFrame
        One row per chain and batch: ``chain_id``, ``pattern``, ``batch``, ``precision``,
        ``chain_ms``, ``parts_ms`` (the sum of the parts' times), ``ratio`` (chain / parts),
        ``first_part_ms`` (the leading convolution alone), ``threads``, ``heap_kept``,
        ``cpu_id``, ``torch_version``, ``measured_at``.
    """
    import torch
    from tqdm.auto import tqdm

    from carb_lib.measure import heap
    from carb_lib.measure.devices import cpu_identity

    if precision not in ("fp32", "fp16"):
        raise ValueError(f"precision must be 'fp32' or 'fp16', got {precision!r}")
    if threads < 1 or rounds < 1 or n_windows < 1:
        raise ValueError(f"threads, rounds and n_windows must be >= 1, got {threads}, {rounds} "
                         f"and {n_windows}")
    batches = [int(b) for b in batches]
    if not batches or min(batches) < 1:
        raise ValueError(f"batches must be >= 1, got {batches}")
    dtype = torch.float16 if precision == "fp16" else torch.float32
    if keep_heap:
        heap.keep_heap()
    out: list[dict[str, Any]] = []
    groups = list(chains.groupby("chain_id", sort=True))
    with timing_protocol(threads) as flushed:
        prov = {"threads": int(threads), "heap_kept": heap.heap_kept(),
                "cpu_id": cpu_identity(), "torch_version": torch.__version__,
                "denormals_flushed": bool(flushed)}
        for (cid, chain), b in tqdm([(g, b) for g in groups for b in batches], desc="chains",
                                    disable=not progress):
            chain = chain.sort_values("position")
            whole = _chain_call(chain, b, dtype)
            parts = [_module({**r.to_dict(), "batch": b}, dtype) for _, r in chain.iterrows()]
            t_chain, t_parts = [], []
            for _ in range(rounds):
                t_chain.append(_time_call(whole, window_s, n_windows)[0])
                t_parts.append([_time_call(p, window_s, n_windows)[0] for p in parts])
            chain_ms = 1e3 * float(np.median(t_chain))
            part_ms = 1e3 * np.median(np.asarray(t_parts), axis=0)
            out.append({"chain_id": int(cid), "pattern": str(chain["pattern"].iloc[0]),
                        "batch": b, "precision": precision, "chain_ms": chain_ms,
                        "parts_ms": float(part_ms.sum()), "ratio": chain_ms / float(part_ms.sum()),
                        "first_part_ms": float(part_ms[0]),
                        "measured_at": pd.Timestamp.now(tz="UTC"), **prov})
    return pd.DataFrame(out)


def chain_summary(rows: pd.DataFrame, by: Sequence[str] = ("pattern", "batch")) -> pd.DataFrame:
    """Per group of :func:`time_chains`' rows: ``n``, the median, 10th and 90th percentile of
    ``ratio``, and ``added_ms_share``: (sum of chain times - sum of parts' times) / sum of
    parts' times, the share a sum of operators timed alone misses (negative: overcounts)."""
    def one(g: pd.DataFrame) -> pd.Series:
        r = g["ratio"].to_numpy(float)
        return pd.Series({"n": len(g), "ratio_median": float(np.median(r)),
                          "ratio_p10": float(np.percentile(r, 10)),
                          "ratio_p90": float(np.percentile(r, 90)),
                          "added_ms_share": float(g["chain_ms"].sum() / g["parts_ms"].sum() - 1)})

    by = list(by)
    parts = [one(g).rename(k if isinstance(k, tuple) else (k,)) for k, g in rows.groupby(by)]
    table = pd.DataFrame(parts)
    table.index = pd.MultiIndex.from_tuples(table.index, names=by)
    return table.reset_index().astype({"n": int})
