"""The config list of pre-registration N (session 26): a ResNet source and depthwise targets in
one sitting.

Two parts, measured together by ``scripts/sitting_source_campaign.sh``:

* ``--resnet`` configs of the platform's quiet ResNet rows ``QUIET``, drawn exactly as
  pre-registration M drew them (:func:`probe_list.resnet_sample`, ``--seed``, stored latency at
  most ``--max-ms``): the same configs as M's sitting and as session 12's rows;
* every ``ok`` config of ``TARGETS`` (the new families' fastest-of-8-passes rows of session 23),
  so the targets of this sitting pair config by config with that earlier sitting.

Writes ``OUT/list.parquet`` (checked as ``carb profile`` will check it), ``OUT/resnet.parquet``
and ``OUT/targets.parquet``. Without ``TARGETS`` (pre-registration Q's sitting of the ResNet
configs alone) the list holds the ResNet part only; with ``--families`` only those target
families' configs join it (pre-registration S: beside vgg only).

``python scripts/sitting_source_list.py data/other_cpus/cpu_epyc_zen5_2c.parquet data/other_cpus/new_families/cpu_epyc_zen5_2c_passes.parquet --out runs/sitting_source_list``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_list import resnet_sample, write_lists  # noqa: E402

from carb_lib.dataset import read_dataset  # noqa: E402
from carb_lib.families import get_family  # noqa: E402


def target_configs(rows: pd.DataFrame) -> pd.DataFrame:
    """The config columns (``config_id``, ``family`` and each family's own) of the ``ok`` rows."""
    ok = rows[rows["status"] == "ok"]
    if ok.empty:
        raise SystemExit("sitting_source_list: the target rows hold no ok row")
    parts = []
    for fam, g in ok.groupby(ok["family"].astype(str), sort=True):
        cols = list(dict.fromkeys(["config_id", "family",
                                   *[c for c in get_family(fam).config_columns if c in g.columns]]))
        parts.append(g[cols])
    return pd.concat(parts, ignore_index=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("quiet", type=Path, help="the platform's quiet ResNet rows")
    ap.add_argument("targets", type=Path, nargs="?", default=None,
                    help="the new families' rows to measure again (none: the ResNet part alone)")
    ap.add_argument("--resnet", type=int, default=400)
    ap.add_argument("--max-ms", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--families", default=None,
                    help="comma-separated target families to keep (default: all of TARGETS')")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    resnet = resnet_sample(read_dataset(args.quiet), args.resnet, max_ms=args.max_ms,
                           seed=args.seed)
    if args.targets is None:
        path = write_lists(args.out, {"resnet": resnet})
        print(f"{len(resnet)} ResNet configs, alone -> {path}")
        return
    targets = target_configs(read_dataset(args.targets))
    if args.families:
        keep = args.families.split(",")
        missing = sorted(set(keep) - set(targets["family"].astype(str)))
        if missing:
            raise SystemExit(f"sitting_source_list: --families {','.join(missing)}: not in "
                             f"{args.targets}")
        targets = targets[targets["family"].astype(str).isin(keep)].reset_index(drop=True)
    path = write_lists(args.out, {"resnet": resnet, "targets": targets})
    counts = ", ".join(f"{f} {n}" for f, n in targets["family"].value_counts().sort_index().items())
    print(f"{len(resnet)} ResNet configs and {len(targets)} target configs ({counts}) -> {path}")


if __name__ == "__main__":
    main()
