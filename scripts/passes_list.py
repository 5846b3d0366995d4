"""The config list of a passes campaign on a CPU measured before (session 23, the Zen 5).

Two parts, written to OUT/ (``fresh.parquet``, ``remeasure.parquet`` and ``list.parquet``, both
together):

* **fresh**: the rows of a fresh-rows list (``scripts/new_families_continue.py``'s
  ``independent.parquet``) that no earlier campaign of this CPU measured (not in ``--done``);
* **remeasure**: a seeded sample of rows measured before on a quiet host (``--quiet``: new-family
  rows, ``--per-family`` of each family; ``--quiet-resnet``: ResNet rows, ``--n-resnet``), only
  rows whose earlier latency was at most ``--max-ms``: the check that the fastest of several
  passes on a noisy host gives back what a quiet host measured.

Usage (session 23)::

    python scripts/passes_list.py runs/zen5_rest_plan/independent.parquet \\
        --done data/other_cpus/new_families/cpu_epyc_zen5_2c_rest.parquet \\
        --quiet data/other_cpus/new_families/cpu_epyc_zen5_2c.parquet \\
        --quiet-resnet data/other_cpus/cpu_epyc_zen5_2c.parquet --out runs/zen5_passes_list
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from carb_lib.dataset import COLUMNS


def config_part(df: pd.DataFrame) -> pd.DataFrame:
    """The config columns (and config_id) of a dataset's rows."""
    keep = [c for c in df.columns if c in COLUMNS and COLUMNS[c].group == "config"]
    return df[keep].reset_index(drop=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("fresh_list", type=Path)
    ap.add_argument("--done", type=Path, required=True)
    ap.add_argument("--quiet", type=Path, required=True)
    ap.add_argument("--quiet-resnet", type=Path, required=True)
    ap.add_argument("--per-family", type=int, default=20)
    ap.add_argument("--n-resnet", type=int, default=30)
    ap.add_argument("--max-ms", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    lst = pd.read_parquet(a.fresh_list)
    done = set(pd.read_parquet(a.done, columns=["config_id"])["config_id"])
    fresh = lst[~lst["config_id"].isin(done)].reset_index(drop=True)
    quiet = pd.read_parquet(a.quiet)
    quiet = quiet[(quiet["status"] == "ok") & (quiet["latency_ms"] <= a.max_ms)]
    parts = [g.sample(a.per_family, random_state=a.seed) for _, g in quiet.groupby("family")]
    res = pd.read_parquet(a.quiet_resnet)
    res = res[(res["status"] == "ok") & (res["latency_ms"] <= a.max_ms)]
    parts.append(res.sample(a.n_resnet, random_state=a.seed))
    again = pd.concat([config_part(p) for p in parts], ignore_index=True)
    if again["config_id"].isin(fresh["config_id"]).any():
        raise SystemExit("passes_list: a re-measured config is also fresh")
    a.out.mkdir(parents=True, exist_ok=True)
    fresh.to_parquet(a.out / "fresh.parquet", index=False)
    again.to_parquet(a.out / "remeasure.parquet", index=False)
    both = pd.concat([fresh, again], ignore_index=True)
    both.to_parquet(a.out / "list.parquet", index=False)
    print(f"fresh {len(fresh)} {fresh['family'].value_counts().to_dict()}; re-measured "
          f"{len(again)} {again['family'].value_counts().to_dict()}; list {len(both)} -> {a.out}")


if __name__ == "__main__":
    main()
