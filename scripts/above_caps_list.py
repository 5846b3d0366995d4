"""Fresh new-family configs above the campaigns' FLOP caps, for pre-registration AF (session 32).

Usage::

    python scripts/above_caps_list.py OUT.parquet MEASURED.parquet [MEASURED2 ...] --seed 32

Every campaign so far drew configs with whole-batch FLOPs <= 4 GFLOP (fp32) and <= 0.25 GFLOP
(fp16); on the fifth CPU 2,050 of efficientnet's 2,107 such configs are measured. This list
takes the next band of each family's grid: fp32 in (``--floor-gflop``, ``--cap-gflop``] (4, 8]
and fp16 in (``--fp16-floor-gflop``, ``--fp16-cap-gflop``] (0.25, 0.5], none a config of any
``MEASURED`` file, each (family, precision) in a seeded order and cut to its count
(``--efficientnet``, ``--mobilenetv2``, ``--vgg``: fp32 and fp16 counts; more than the band
holds means all of it). ``carb profile`` shuffles the list, so a campaign stopped by its time
budget covers the families evenly. The list is a function of the arguments and the
``MEASURED`` files.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from denormal_sitting_list import list_parser, measured_configs, write_list  # noqa: E402
from new_families_campaign import NEW_FAMILIES  # noqa: E402
from new_families_continue import _rest_of_grid  # noqa: E402


def band(family: str, precision: str, floor_gflop: float, cap_gflop: float, n: int, seed: int,
         done: set[str]) -> pd.DataFrame:
    """Up to ``n`` fresh grid configs of one family and precision with whole-batch FLOPs in
    (``floor_gflop``, ``cap_gflop``], seeded order."""
    g = _rest_of_grid(family, cap_gflop * 1e9, seed, done, floor=floor_gflop * 1e9)
    return g[g["precision"] == precision].head(n)


def main(argv: list[str] | None = None) -> int:
    ap = list_parser(__doc__)
    ap.add_argument("--floor-gflop", type=float, default=4.0)
    ap.add_argument("--cap-gflop", type=float, default=8.0)
    ap.add_argument("--fp16-floor-gflop", type=float, default=0.25)
    ap.add_argument("--fp16-cap-gflop", type=float, default=0.5)
    for fam, counts in zip(NEW_FAMILIES, ((220, 80), (150, 50), (400, 300)), strict=True):
        ap.add_argument(f"--{fam}", type=int, nargs=2, default=list(counts),
                        metavar=("FP32", "FP16"), help=f"counts (default {counts})")
    ap.add_argument("--seed", type=int, default=32)
    a = ap.parse_args(argv)
    done = measured_configs(a.out, a.measured)
    if not (0 <= a.floor_gflop < a.cap_gflop and 0 <= a.fp16_floor_gflop < a.fp16_cap_gflop):
        raise SystemExit("each floor must be >= 0 and below its cap, got "
                         f"{a.floor_gflop}-{a.cap_gflop} and {a.fp16_floor_gflop}-{a.fp16_cap_gflop}")
    parts = []
    for i, family in enumerate(NEW_FAMILIES):
        n32, n16 = getattr(a, family)
        seed = a.seed + 1000 * i
        parts += [band(family, "fp32", a.floor_gflop, a.cap_gflop, n32, seed, done),
                  band(family, "fp16", a.fp16_floor_gflop, a.fp16_cap_gflop, n16, seed, done)]
    out = pd.concat(parts, ignore_index=True)
    write_list(out, a.out, done)
    print(out.groupby(["family", "precision"])["flops"].agg(["size", "min", "max"])
          .assign(min=lambda d: d["min"] / 1e9, max=lambda d: d["max"] / 1e9)
          .rename(columns={"size": "configs", "min": "gflop_min", "max": "gflop_max"}).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
