"""The config list of pre-registration J (session 24): fresh depthwise networks at batch >= 16.

Draws ``--per-family`` configs of efficientnet and mobilenetv2 from each family's sampler
(every architecture of 20,000 seeded draws, at the grid's batch sizes >= ``--min-batch`` in
float32, whole-batch FLOPs under ``--cap-gflop``), and drops every config that a file of ``--measured``
holds. (Not every architecture: the efficientnet space has 336 architectures and the Zen 5 files
hold 330. A family's own rows never enter the sibling test's source, so its architectures are
new to that model anyway.) Writes ``OUT/list.parquet``.

``python scripts/fresh_depthwise_list.py --measured data/other_cpus/new_families/cpu_epyc_zen5_2c*.parquet --out runs/fresh_depthwise_list``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from new_families_campaign import _finish, _module  # noqa: E402

from carb_lib.families._common import BATCH_SIZES  # noqa: E402
from carb_lib.features import static_features  # noqa: E402

FAMILIES = ("efficientnet", "mobilenetv2")


def fresh_list(measured: list[Path], *, per_family: int, min_batch: int, cap_gflop: float,
               seed: int) -> pd.DataFrame:
    """Every architecture the family's sampler draws (20,000 draws), at every grid batch size
    >= ``min_batch`` in float32, under the cap and never measured; ``per_family`` of them per
    family, drawn with ``seed``."""
    old = pd.concat([pd.read_parquet(p, columns=["config_id"]) for p in measured])
    parts = []
    for fam in FAMILIES:
        archs = _module(fam).sample_configs(20000, seed=seed)
        archs = archs.drop(columns=["config_id", "batch", "precision"], errors="ignore").drop_duplicates()
        grid = archs.assign(precision="fp32").merge(
            pd.DataFrame({"batch": [b for b in BATCH_SIZES if b >= min_batch]}), how="cross")
        grid = _finish(grid, fam)
        grid["flops"] = static_features(grid)["flops"].to_numpy()
        grid = grid[(grid["flops"] <= cap_gflop * 1e9) & ~grid["config_id"].isin(old["config_id"])]
        if len(grid) < per_family:
            raise SystemExit(f"{fam}: only {len(grid)} fresh configs; lower --per-family")
        parts.append(grid.sample(per_family, random_state=seed))
    return pd.concat(parts, ignore_index=True).drop(columns=["flops"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--measured", type=Path, nargs="+", required=True)
    ap.add_argument("--per-family", type=int, default=100)
    ap.add_argument("--min-batch", type=int, default=16)
    ap.add_argument("--cap-gflop", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=2424)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    lst = fresh_list(a.measured, per_family=a.per_family, min_batch=a.min_batch,
                     cap_gflop=a.cap_gflop, seed=a.seed)
    a.out.mkdir(parents=True, exist_ok=True)
    lst.to_parquet(a.out / "list.parquet", index=False)
    print(lst.groupby(["family", "batch"]).size().unstack(0).fillna(0).astype(int).to_string())
    print(f"{len(lst)} configs -> {a.out / 'list.parquet'}")


if __name__ == "__main__":
    main()
