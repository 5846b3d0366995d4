"""Fresh new-family configs at resolutions off the families' grid (pre-registration AI, session 34).

Usage::

    python scripts/off_grid_list.py OUT.parquet MEASURED.parquet [MEASURED2 ...] --seed 34

Every campaign so far drew its configs from the grid's resolutions (32, 48, 64, 96, ..., 224
px), and on the fifth CPU nearly every efficientnet config under the FLOP caps is measured. A
family's space takes any resolution from 32 to 1,024 px, so configs at ``--resolutions`` off
the grid (default 40, 56, 80, 112) are fresh, and they include the hard regime of session 31's
rows: small maps, where efficientnet's 5 x 5 depthwise convs overhang their input (at 40 and 56
px its last maps are 2 x 2). The list takes each family's configs at those resolutions and the
grid's batch sizes with whole-batch FLOPs <= ``--cap-gflop`` (fp32, 4) and <=
``--fp16-cap-gflop`` (fp16, 0.25), as every campaign's caps, none a config of a ``MEASURED``
file, in a seeded order per (family, precision), cut to its count (``--efficientnet``,
``--mobilenetv2``, ``--vgg``: fp32 and fp16 counts). ``carb profile`` shuffles the list. The
list is a function of the arguments and the ``MEASURED`` files.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from denormal_sitting_list import list_parser, measured_configs, write_list  # noqa: E402
from new_families_campaign import NEW_FAMILIES, _finish, _module  # noqa: E402

from carb_lib.families._config import RESOLUTION_RANGE  # noqa: E402
from carb_lib.families._config import RESOLUTIONS as GRID  # noqa: E402

#: Off-grid resolutions of the default list: two with efficientnet's last maps 2 x 2, two wider.
RESOLUTIONS: tuple[int, ...] = (40, 56, 80, 112)


def off_grid(family: str, precision: str, resolutions: tuple[int, ...], cap_gflop: float,
             n: int, seed: int, done: set[str]) -> pd.DataFrame:
    """Up to ``n`` configs of one family and precision at ``resolutions`` with whole-batch FLOPs
    <= ``cap_gflop`` and not in ``done``, in a seeded order (with their ``flops``)."""
    from carb_lib.features import static_features

    g = _finish(_module(family).grid(resolutions=resolutions), family)
    g = g[g["precision"] == precision].reset_index(drop=True)
    g["flops"] = static_features(g)["flops"].to_numpy()
    g = g[(g["flops"] <= cap_gflop * 1e9) & ~g["config_id"].isin(done)]
    return g.iloc[np.random.default_rng(seed).permutation(len(g))].head(n).reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    ap = list_parser(__doc__)
    ap.add_argument("--resolutions", type=int, nargs="+", default=list(RESOLUTIONS))
    ap.add_argument("--cap-gflop", type=float, default=4.0)
    ap.add_argument("--fp16-cap-gflop", type=float, default=0.25)
    for fam, counts in zip(NEW_FAMILIES, ((230, 70), (150, 50), (380, 120)), strict=True):
        ap.add_argument(f"--{fam}", type=int, nargs=2, default=list(counts),
                        metavar=("FP32", "FP16"), help=f"counts (default {counts})")
    ap.add_argument("--seed", type=int, default=34)
    a = ap.parse_args(argv)
    done = measured_configs(a.out, a.measured)
    res = tuple(sorted(set(a.resolutions)))
    lo, hi = RESOLUTION_RANGE
    if set(res) & set(GRID) or not all(lo <= r <= hi for r in res):
        raise SystemExit(f"--resolutions must be off the grid {list(GRID)} and within "
                         f"{list(RESOLUTION_RANGE)}, got {list(res)}")
    parts = []
    for i, family in enumerate(NEW_FAMILIES):
        n32, n16 = getattr(a, family)
        seed = a.seed + 1000 * i
        parts += [off_grid(family, "fp32", res, a.cap_gflop, n32, seed, done),
                  off_grid(family, "fp16", res, a.fp16_cap_gflop, n16, seed, done)]
    out = pd.concat(parts, ignore_index=True)
    write_list(out, a.out, done)
    print(out.groupby(["family", "precision", "resolution"]).size().unstack(fill_value=0)
          .to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
