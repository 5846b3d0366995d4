"""The config list of the interleaved heap test (pre-registration AB, session 30).

From a CPU's measured ResNet rows (``ROWS``, ``ok`` rows only): every config whose network maps a
buffer past 32 MiB per call with the default heap (:func:`carb_lib.cache_probe.network_mmap_mib`,
allocator ``--variant``: the rows that can pay for page faults), and a seeded sample of
``--n-none`` of the others. Shuffled (``--seed``) and cut into ``--slices`` slices of near-equal
size, so that each slice's configs can be timed by both arms (default heap, heap kept) back to
back. Writes ``OUT/list.parquet`` (every config, with ``mapped_mib`` and ``slice``) and
``OUT/slice<i>.parquet`` (the config columns of slice i).

``python scripts/heap_interleaved_list.py data/other_cpus/cpu_xeon_gnr_2c_session30_default.parquet runs/x_list``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from passes_list import config_part  # noqa: E402

from carb_lib.cache_probe import network_mmap_mib  # noqa: E402
from carb_lib.dataset import read_dataset  # noqa: E402
from carb_lib.families._alloc import parse_variant  # noqa: E402


def interleaved_list(rows: pd.DataFrame, *, n_none: int, slices: int, variant: int | str,
                     seed: int = 0) -> pd.DataFrame:
    """Config columns of the chosen configs with ``mapped_mib`` and ``slice`` (0 .. slices-1)."""
    if slices < 1 or n_none < 0:
        raise ValueError(f"slices must be >= 1 and n_none >= 0, got {slices} and {n_none}")
    ok = rows.loc[rows["status"].astype(str) == "ok"].drop_duplicates("config_id")
    ok = ok.reset_index(drop=True)
    mib = network_mmap_mib(ok, variant)
    none = ok.index[mib == 0]
    pick = np.random.default_rng(seed).choice(len(none), min(n_none, len(none)), replace=False)
    chosen = np.concatenate([ok.index[mib > 0], none[np.sort(pick)]])
    out = config_part(ok.loc[chosen]).assign(mapped_mib=mib[chosen])
    out = out.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    out["slice"] = np.arange(len(out)) * slices // max(len(out), 1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rows", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--n-none", type=int, default=400)
    ap.add_argument("--slices", type=int, default=10)
    ap.add_argument("--variant", default="16+fp16")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    if not a.rows.is_file():
        print(f"heap_interleaved_list: no rows file {a.rows}", file=sys.stderr)
        return 2
    try:
        lst = interleaved_list(read_dataset(a.rows), n_none=a.n_none, slices=a.slices,
                               variant=parse_variant(a.variant), seed=a.seed)
    except ValueError as exc:
        print(f"heap_interleaved_list: {exc}", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    lst.to_parquet(a.out / "list.parquet", index=False)
    for i, part in lst.groupby("slice"):
        part.drop(columns=["mapped_mib", "slice"]).to_parquet(a.out / f"slice{i}.parquet",
                                                              index=False)
    print(f"{len(lst):,} configs ({int((lst['mapped_mib'] > 0).sum())} map past 32 MiB) in "
          f"{a.slices} slices -> {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
