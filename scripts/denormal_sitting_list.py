"""Fresh new-family configs for pre-registration AC (session 31): none measured on this CPU before.

Usage::

    python scripts/denormal_sitting_list.py OUT.parquet MEASURED.parquet [MEASURED2 ...] \
        --per-family 900 --seed 31

Each family (``mobilenetv2``, ``vgg``, ``efficientnet``) gets ``--per-family`` seeded independent
draws of its sampler (:func:`new_families_campaign.independent`, seed ``--seed + 1000 * i``),
whole-batch FLOPs under ``--cap-gflop`` (4), fp16 with probability ``--fp16-share`` (0.25) and
fp16 rows above ``--fp16-cap-gflop`` (0.25) dropped, none of them a config of any ``MEASURED``
file. A family whose sampler runs short of twice that many new draws gets ``--per-family``
draws; one short of those too (vgg) gets its grid's remaining configs under the caps in a
seeded order instead. ``carb profile`` shuffles the list, so a campaign stopped by its time budget covers the
families evenly. The list is a function of the arguments and of the ``MEASURED`` files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from new_families_campaign import NEW_FAMILIES, _drop_slow_fp16, independent  # noqa: E402
from new_families_continue import _rest_of_grid  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="the list (.parquet), a new file")
    ap.add_argument("measured", type=Path, nargs="+", help="datasets measured on this CPU so far")
    ap.add_argument("--per-family", type=int, default=900)
    ap.add_argument("--cap-gflop", type=float, default=4.0)
    ap.add_argument("--fp16-cap-gflop", type=float, default=0.25)
    ap.add_argument("--fp16-share", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=31)
    a = ap.parse_args(argv)
    if a.out.exists():
        raise SystemExit(f"{a.out} exists; a list is never overwritten")
    missing = [str(p) for p in a.measured if not p.is_file()]
    if missing:
        raise SystemExit(f"no such file(s): {missing}")
    if a.per_family < 1 or not 0 <= a.fp16_share <= 1:
        raise SystemExit(f"--per-family must be >= 1 and --fp16-share in [0, 1], got "
                         f"{a.per_family} and {a.fp16_share}")
    done = set(pd.concat([pd.read_parquet(p, columns=["config_id"]) for p in a.measured])
               ["config_id"].astype(str))
    parts = []
    for i, family in enumerate(NEW_FAMILIES):
        ind = None
        for n in (2 * a.per_family, a.per_family):  # the second when the space runs short
            try:
                ind = independent(family, n, a.cap_gflop * 1e9, a.seed + 1000 * i,
                                  a.fp16_share, done)
                break
            except SystemExit:
                continue
        if ind is None:  # a small space (vgg): every config left under the caps, seeded
            ind = _rest_of_grid(family, a.cap_gflop * 1e9, a.seed + 1000 * i, done)
        parts.append(_drop_slow_fp16(ind, a.fp16_cap_gflop * 1e9).head(a.per_family))
    out = pd.concat(parts, ignore_index=True).drop(columns=["flops"])
    assert out["config_id"].is_unique and not set(out["config_id"]) & done
    a.out.parent.mkdir(parents=True, exist_ok=True)
    out.to_parquet(a.out, index=False)
    print(out.groupby(["family", "precision"]).size().unstack().to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
