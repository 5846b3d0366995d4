"""Write the config lists that continue the new families' campaign towards N rows per family.

Usage::

    python scripts/new_families_continue.py data/new_families/cpu_epyc_zen3_2c.parquet \
        runs/newfam_plan2 --per-family 1500 --cap-gflop 4 --seed 0

Reads the rows already measured (``MEASURED``) and writes two lists into ``OUT_DIR``, each to be
measured by its own ``carb profile --configs`` run (a campaign shuffles its list, so the two
phases are two lists):

* ``sweeps.parquet`` — **phase 1**: the not yet measured rows of every batch sweep that the
  first campaign touched (the sweeps of ``new_families_campaign.py`` with the same arguments),
  so that each touched (architecture, resolution, precision) group gets all of its batch sizes;
* ``independent.parquet`` — **phase 2**: fresh seeded independent draws of each family's sampler
  (seed ``--seed + 1000 * i + 500``, whole-batch FLOPs under the cap), none measured or in phase 1,
  as many as bring the family to ``--per-family`` rows.

fp16 rows above ``--fp16-cap-gflop`` (0.25) are dropped in both lists, as in the first campaign
(fp16 is ~20x slower than fp32 on a CPU without fp16 arithmetic). ``OUT_DIR/manifest.csv``
counts the rows. The lists are a function of the arguments and of ``MEASURED``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from new_families_campaign import (  # noqa: E402
    NEW_FAMILIES,
    _drop_slow_fp16,
    campaign_configs,
    independent,
)


def _rest_of_grid(family: str, cap: float, seed: int, exclude: set[str], *,
                  floor: float = 0.0) -> pd.DataFrame:
    """Every config of the family's grid with whole-batch FLOPs in (``floor``, ``cap``] and not
    in ``exclude``, seeded order."""
    import numpy as np
    from new_families_campaign import _finish, _module

    from carb_lib.features import static_features

    g = _finish(_module(family).grid(), family)
    g["flops"] = static_features(g)["flops"].to_numpy()
    g = g[(g["flops"] > floor) & (g["flops"] <= cap) & ~g["config_id"].isin(exclude)]
    return g.iloc[np.random.default_rng(seed).permutation(len(g))].reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("measured", type=Path, help="dataset of the rows measured so far")
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--per-family", type=int, default=1500)
    ap.add_argument("--cap-gflop", type=float, default=4.0)
    ap.add_argument("--fp16-cap-gflop", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--families", nargs="+", default=list(NEW_FAMILIES))
    a = ap.parse_args(argv)
    done = pd.read_parquet(a.measured, columns=["config_id", "family"])
    cap, fp16_cap = a.cap_gflop * 1e9, a.fp16_cap_gflop * 1e9
    phase1, phase2, manifest = [], [], []
    for i, family in enumerate(a.families):
        seed = a.seed + 1000 * i
        plan = campaign_configs(family, a.per_family, a.cap_gflop, seed)
        measured = set(done.loc[done["family"] == family, "config_id"])
        touched = plan.loc[plan["config_id"].isin(measured) & (plan["sweep_id"] >= 0), "sweep_id"]
        sw = plan[plan["sweep_id"].isin(set(touched)) & ~plan["config_id"].isin(measured)]
        sw = _drop_slow_fp16(sw, fp16_cap)
        need = a.per_family - len(measured) - len(sw)
        ind = pd.DataFrame(columns=plan.columns)
        if need > 0:
            exclude = measured | set(sw["config_id"])
            try:
                ind = independent(family, 3 * need + 64, cap, seed + 500, 0.1,
                                  exclude | set(plan["config_id"]))
                ind = _drop_slow_fp16(ind, fp16_cap)
            except SystemExit:  # a small space: take every config left under the caps
                ind = _rest_of_grid(family, cap, seed + 500, exclude)
                ind = _drop_slow_fp16(ind, fp16_cap)
                print(f"{family}: its space holds only {len(ind)} more configs under the caps; "
                      f"{min(need, len(ind))} of them are listed ({need} wanted)",
                      file=sys.stderr)
            ind = ind.head(need).assign(sweep_id=-1)
        phase1.append(sw)
        phase2.append(ind)
        manifest.append({"family": family, "measured": len(measured), "sweep_rows": len(sw),
                         "sweeps": int(sw["sweep_id"].nunique()), "independent_rows": len(ind),
                         "total": len(measured) + len(sw) + len(ind)})
    a.out_dir.mkdir(parents=True, exist_ok=True)
    for name, parts in (("sweeps", phase1), ("independent", phase2)):
        df = pd.concat(parts, ignore_index=True).drop(columns=["flops", "sweep_id"])
        assert df["config_id"].is_unique
        df.to_parquet(a.out_dir / f"{name}.parquet", index=False)
    out = pd.DataFrame(manifest)
    out.to_csv(a.out_dir / "manifest.csv", index=False)
    print(out.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
