"""Write the config lists of a measurement campaign of the new families, one per family.

Usage::

    python scripts/new_families_campaign.py OUT_DIR --per-family 1500 --cap-gflop 20 --seed 0
    carb profile --device cpu --configs OUT_DIR/mobilenetv2.parquet --platform <platform> ...

For each family (``mobilenetv2``, ``vgg``, ``efficientnet`` by default) ``OUT_DIR/<family>.parquet``
holds ``--per-family`` distinct configs (``config_id`` + the family's config columns), every one
with whole-batch FLOPs <= ``--cap-gflop`` GFLOP, in a seeded random order:

* **batch sweeps** (``--sweep-share``, 40 % of the rows by default): architecture x resolution x
  precision drawn with the family's seeded sampler, each measured at *every* grid batch size
  (1 .. 256) under the cap; sweeps with fewer than ``--min-sweep-points`` batch sizes under
  the cap are redrawn. These rows let a model learn the batch scaling of one network;
* **independent draws** for the rest: the family's ``sample_configs`` (uniform over its space,
  resolutions and grid batch sizes), kept when under the cap, duplicates dropped.

Precision is fp16 with probability ``--fp16-share`` (10 % by default), fp32 otherwise (the CPU
campaign is mostly fp32). ``OUT_DIR/manifest.csv`` lists rows, sweeps and FLOP ranges per family.
The lists are a function of the arguments only (same seed, same files).

``--fp16-cap-gflop`` drops fp16 rows above that many GFLOP (fp16 is ~20x slower than fp32 on a
CPU without fp16 arithmetic), and ``--interleave-seed`` also writes ``OUT_DIR/all.parquet``: the
families' lists concatenated in ``--families`` order and put in that seed's random order, so that
a campaign stopped by its time budget covers the families evenly. The Zen 3 campaign 1 list
(data card) is ``--per-family 1500 --cap-gflop 4 --seed 0 --fp16-cap-gflop 0.25
--interleave-seed 2026``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib.dataset.features import static_features
from carb_lib.families import get_family
from carb_lib.families._common import BATCH_SIZES
from carb_lib.families.space import add_config_ids

NEW_FAMILIES: tuple[str, ...] = ("mobilenetv2", "vgg", "efficientnet")


def _module(name: str):
    import importlib

    return importlib.import_module(f"carb_lib.families.{name}")


def _with_precision(df: pd.DataFrame, rng: np.random.Generator, fp16_share: float) -> pd.DataFrame:
    prec = np.where(rng.random(len(df)) < fp16_share, "fp16", "fp32")
    return df.assign(precision=prec)


def _finish(df: pd.DataFrame, family: str) -> pd.DataFrame:
    cols = ["family", *get_family(family).own_column_names, "resolution", "batch", "precision",
            "num_classes"]
    out = add_config_ids(df[cols].reset_index(drop=True))
    return out[["config_id", *cols]]


def sweeps(family: str, n_rows: int, cap_flops: float, seed: int, fp16_share: float,
           min_points: int) -> pd.DataFrame:
    """Whole batch sweeps (every grid batch size under the cap) of seeded architecture x
    resolution x precision draws, until at least ``n_rows`` rows (whole sweeps only)."""
    mod = _module(family)
    rng = np.random.default_rng([seed, 1])
    parts, total, draw = [], 0, 0
    seen: set[str] = set()
    while total < n_rows:
        draw += 1
        if draw > 200:
            raise SystemExit(f"{family}: cannot find batch sweeps with >= {min_points} points "
                             f"under the cap; raise --cap-gflop or lower --min-sweep-points")
        heads = _with_precision(mod.sample_configs(64, seed=int(rng.integers(2**31))), rng,
                                fp16_share)
        heads = heads.drop_duplicates(subset=[c for c in heads.columns
                                              if c not in ("config_id", "batch")])
        grid = heads.drop(columns=["config_id", "batch"]).merge(
            pd.DataFrame({"batch": BATCH_SIZES}), how="cross")
        grid = _finish(grid, family)
        grid["flops"] = static_features(grid)["flops"].to_numpy()
        key = [c for c in grid.columns if c not in ("config_id", "batch", "flops")]
        for _, sweep in grid.groupby(key, sort=False):
            sweep = sweep[sweep["flops"] <= cap_flops]
            if len(sweep) < min_points or sweep["config_id"].iloc[0] in seen:
                continue
            seen.update(sweep["config_id"])
            parts.append(sweep.assign(sweep_id=len(parts)))
            total += len(sweep)
            if total >= n_rows:
                break
    return pd.concat(parts, ignore_index=True)


def independent(family: str, n_rows: int, cap_flops: float, seed: int, fp16_share: float,
                exclude: set[str]) -> pd.DataFrame:
    """``n_rows`` distinct seeded draws of the family's sampler under the cap, none in
    ``exclude``."""
    mod = _module(family)
    rng = np.random.default_rng([seed, 2])
    kept: list[pd.DataFrame] = []
    have, draws = 0, 0
    while have < n_rows:
        draws += 1
        if draws > 50:
            raise SystemExit(f"{family}: too few distinct configs under the cap; raise "
                             "--cap-gflop or lower --per-family")
        cand = _with_precision(mod.sample_configs(4 * n_rows + 64,
                                                  seed=int(rng.integers(2**31))),
                               rng, fp16_share)
        cand = _finish(cand, family)
        cand["flops"] = static_features(cand)["flops"].to_numpy()
        cand = cand[(cand["flops"] <= cap_flops) & ~cand["config_id"].isin(exclude)]
        cand = cand.drop_duplicates("config_id")
        exclude = exclude | set(cand["config_id"])
        kept.append(cand)
        have += len(cand)
    return pd.concat(kept, ignore_index=True).head(n_rows)


def _drop_slow_fp16(df: pd.DataFrame, fp16_cap: float) -> pd.DataFrame:
    """``df`` without its fp16 rows above ``fp16_cap`` FLOPs (column ``flops``)."""
    return df[~((df["precision"] == "fp16") & (df["flops"] > fp16_cap))]


def campaign_configs(family: str, per_family: int, cap_gflop: float, seed: int = 0,
                     sweep_share: float = 0.4, fp16_share: float = 0.1,
                     min_points: int = 5) -> pd.DataFrame:
    """The config list of one family (``config_id``, config columns, ``flops``, ``sweep_id``:
    the batch sweep of a row, -1 for independent draws), in a seeded random order."""
    cap = cap_gflop * 1e9
    sw = sweeps(family, int(round(sweep_share * per_family)), cap, seed, fp16_share, min_points)
    ind = independent(family, per_family - len(sw), cap, seed, fp16_share,
                      set(sw["config_id"]))
    out = pd.concat([sw, ind.assign(sweep_id=-1)], ignore_index=True)
    assert out["config_id"].is_unique and (out["flops"] <= cap).all()
    order = np.random.default_rng([seed, 3]).permutation(len(out))
    return out.iloc[order].reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--per-family", type=int, default=1500, help="configs per family")
    ap.add_argument("--cap-gflop", type=float, default=20.0,
                    help="whole-batch FLOP cap, GFLOP (2 x MAC)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sweep-share", type=float, default=0.4,
                    help="share of rows in complete batch sweeps")
    ap.add_argument("--fp16-share", type=float, default=0.1, help="share of fp16 rows")
    ap.add_argument("--min-sweep-points", type=int, default=5,
                    help="fewest batch sizes under the cap for a sweep")
    ap.add_argument("--families", nargs="+", default=list(NEW_FAMILIES))
    ap.add_argument("--fp16-cap-gflop", type=float, default=None,
                    help="drop fp16 rows above this many GFLOP (default: keep them)")
    ap.add_argument("--interleave-seed", type=int, default=None,
                    help="also write all.parquet: every family's list in this seed's order")
    a = ap.parse_args(argv)
    a.out_dir.mkdir(parents=True, exist_ok=True)
    manifest, lists = [], []
    for i, family in enumerate(a.families):
        df = campaign_configs(family, a.per_family, a.cap_gflop, a.seed + 1000 * i,
                              a.sweep_share, a.fp16_share, a.min_sweep_points)
        if a.fp16_cap_gflop is not None:
            df = _drop_slow_fp16(df, a.fp16_cap_gflop * 1e9).reset_index(drop=True)
        lists.append(df.drop(columns=["flops", "sweep_id"]))
        path = a.out_dir / f"{family}.parquet"
        lists[-1].to_parquet(path, index=False)
        in_sweeps = df["sweep_id"] >= 0
        manifest.append({
            "family": family, "file": path.name, "rows": len(df),
            "sweep_rows": int(in_sweeps.sum()), "sweeps": int(df.loc[in_sweeps, "sweep_id"].nunique()),
            "fp16_rows": int((df["precision"] == "fp16").sum()),
            "gflop_min": round(df["flops"].min() / 1e9, 4),
            "gflop_median": round(df["flops"].median() / 1e9, 3),
            "gflop_max": round(df["flops"].max() / 1e9, 3), "cap_gflop": a.cap_gflop,
            "seed": a.seed,
        })  # fmt: skip
    if a.interleave_seed is not None:
        every = pd.concat(lists, ignore_index=True)
        order = np.random.default_rng(a.interleave_seed).permutation(len(every))
        every.iloc[order].reset_index(drop=True).to_parquet(a.out_dir / "all.parquet", index=False)
    out = pd.DataFrame(manifest)
    out.to_csv(a.out_dir / "manifest.csv", index=False)
    print(out.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
