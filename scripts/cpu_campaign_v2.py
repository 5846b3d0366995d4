"""Config lists of the version-2 CPU campaign (data/cpu_epyc_2c/design/rows.parquet, see data/README.md).

Designed for modelling, not only coverage:

* ``sweeps_fp32``: complete batch sweeps (all 9 batch sizes) of ``--n-sweeps`` architectures
  (block, depth, width, stem, resolution) drawn at random (seeded) among those whose batch-256
  config is within ``--sweep-cap`` GFLOP;
* ``sweeps_fp16``: complete fp16 sweeps of ``--n-sweeps-fp16`` of those architectures (the
  smallest ones: fp16 runs ~20x slower than fp32 on this CPU);
* ``fill``: every other config of the grid within the compute caps (fp32 ``--cap-fp32``,
  fp16 ``--cap-fp16`` GFLOP per batch), measured last in a seeded random order under the
  campaign's time budget.

Usage: ``python scripts/cpu_campaign_v2.py OUT_DIR [options]`` writes
``OUT_DIR/{sweeps_fp32,sweeps_fp16,fill}.parquet`` (config columns and config_id) and prints
the counts; ``scripts/cpu_campaign_v2.sh`` runs the three phases.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib.dataset.features import with_static_features
from carb_lib.families.space import CONFIG_COLUMNS, paper_grid

ARCH = ["block", "depth", "width", "early_downsample", "resolution"]


def plan(
    *,
    n_sweeps: int,
    n_sweeps_fp16: int,
    sweep_cap_gflop: float,
    cap_fp32: float,
    cap_fp16: float,
    seed: int = 0,
) -> dict[str, pd.DataFrame]:
    g = with_static_features(paper_grid())
    cols = [*CONFIG_COLUMNS, "config_id"]
    b256 = g[(g.batch == 256) & (g.precision == "fp32")]
    eligible = b256[b256.flops <= sweep_cap_gflop * 1e9][ARCH]
    if len(eligible) < n_sweeps:
        raise SystemExit(
            f"only {len(eligible)} architectures have batch 256 within {sweep_cap_gflop} GFLOP"
        )
    rng = np.random.default_rng(seed)
    chosen = eligible.iloc[np.sort(rng.choice(len(eligible), n_sweeps, replace=False))]
    sweeps32 = g[g.precision == "fp32"].merge(chosen, on=ARCH)
    small = (
        b256.merge(chosen, on=ARCH).sort_values("flops", kind="stable").head(n_sweeps_fp16)[ARCH]
    )
    sweeps16 = g[g.precision == "fp16"].merge(small, on=ARCH)
    taken = set(sweeps32.config_id) | set(sweeps16.config_id)
    under = ((g.precision == "fp32") & (g.flops <= cap_fp32 * 1e9)) | (
        (g.precision == "fp16") & (g.flops <= cap_fp16 * 1e9)
    )
    fill = g[under & ~g.config_id.isin(taken)]
    return {
        "sweeps_fp32": sweeps32[cols],
        "sweeps_fp16": sweeps16[cols],
        "fill": fill[cols],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--n-sweeps", type=int, default=400)
    ap.add_argument("--n-sweeps-fp16", type=int, default=40)
    ap.add_argument("--sweep-cap", type=float, default=40.0, help="GFLOP at batch 256")
    ap.add_argument("--cap-fp32", type=float, default=2.0)
    ap.add_argument("--cap-fp16", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    parts = plan(
        n_sweeps=a.n_sweeps,
        n_sweeps_fp16=a.n_sweeps_fp16,
        sweep_cap_gflop=a.sweep_cap,
        cap_fp32=a.cap_fp32,
        cap_fp16=a.cap_fp16,
        seed=a.seed,
    )
    a.out_dir.mkdir(parents=True, exist_ok=True)
    for name, df in parts.items():
        df.to_parquet(a.out_dir / f"{name}.parquet", index=False)
        print(f"{name}: {len(df)} configs ({df.precision.value_counts().to_dict()})")


if __name__ == "__main__":
    main()
