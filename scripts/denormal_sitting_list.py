"""Fresh new-family configs for pre-registration AC (session 31): none measured on this CPU before.

Usage::

    python scripts/denormal_sitting_list.py OUT.parquet MEASURED.parquet [MEASURED2 ...] \
        --per-family 900 --seed 31

Each family (``mobilenetv2``, ``vgg``, ``efficientnet``) gets ``--per-family`` seeded independent
draws of its sampler (:func:`new_families_campaign.independent`, seed ``--seed + 1000 * i``),
whole-batch FLOPs under ``--cap-gflop`` (4), fp16 with probability ``--fp16-share`` (0.25) and
fp16 rows above ``--fp16-cap-gflop`` (0.25) dropped, none of them a config of any ``MEASURED``
file; a family whose sampler runs short of twice that many new draws (vgg, and efficientnet on
the fifth CPU) gets its grid's remaining configs under the caps in a seeded order instead (AC's
list, at ``10255bd``; session 31's later fallback to ``--per-family`` draws changed vgg's list,
and session 32 took it out). ``carb profile`` shuffles the list, so a campaign stopped by its time budget covers the
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


def list_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments every fresh-config list takes: ``out`` and ``measured``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("out", type=Path, help="the list (.parquet), a new file")
    ap.add_argument("measured", type=Path, nargs="+", help="datasets measured on this CPU so far")
    return ap


def measured_configs(out: Path, measured: list[Path]) -> set[str]:
    """The config ids of the ``measured`` files; one line and exit 1 (``SystemExit``) if
    ``out`` exists or a ``measured`` file is missing."""
    if out.exists():
        raise SystemExit(f"{out} exists; a list is never overwritten")
    missing = [str(p) for p in measured if not p.is_file()]
    if missing:
        raise SystemExit(f"no such file(s): {missing}")
    return set(pd.concat([pd.read_parquet(p, columns=["config_id"]) for p in measured])
               ["config_id"].astype(str))


def write_list(out: pd.DataFrame, path: Path, done: set[str]) -> None:
    """Write the list ``out`` (without its ``flops`` column) to ``path``, after checking that its
    configs are distinct and none of them is in ``done``."""
    assert out["config_id"].is_unique and not set(out["config_id"]) & done
    path.parent.mkdir(parents=True, exist_ok=True)
    out.drop(columns=["flops"]).to_parquet(path, index=False)


def main(argv: list[str] | None = None) -> int:
    ap = list_parser(__doc__)
    ap.add_argument("--per-family", type=int, default=900)
    ap.add_argument("--cap-gflop", type=float, default=4.0)
    ap.add_argument("--fp16-cap-gflop", type=float, default=0.25)
    ap.add_argument("--fp16-share", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=31)
    a = ap.parse_args(argv)
    done = measured_configs(a.out, a.measured)
    if a.per_family < 1 or not 0 <= a.fp16_share <= 1:
        raise SystemExit(f"--per-family must be >= 1 and --fp16-share in [0, 1], got "
                         f"{a.per_family} and {a.fp16_share}")
    parts = []
    for i, family in enumerate(NEW_FAMILIES):
        try:
            ind = independent(family, 2 * a.per_family, a.cap_gflop * 1e9, a.seed + 1000 * i,
                              a.fp16_share, done)
        except SystemExit:  # a small space (vgg): every config left under the caps, seeded
            ind = _rest_of_grid(family, a.cap_gflop * 1e9, a.seed + 1000 * i, done)
        parts.append(_drop_slow_fp16(ind, a.fp16_cap_gflop * 1e9).head(a.per_family))
    out = pd.concat(parts, ignore_index=True)
    write_list(out, a.out, done)
    print(out.groupby(["family", "precision"]).size().unstack().to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
