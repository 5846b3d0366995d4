"""The config list of pre-registration L (session 25): probe networks, and ResNet rows to
re-measure beside them.

* ``--n`` probe networks (:func:`carb_lib.probe_nets.probe_configs`: networks ``0 .. n-1`` of
  the draw, float32, batch 1-128 and resolution 32-224 drawn with ``--seed``, under
  ``--cap-gflop`` per call);
* ``--resnet`` configs of the quiet ResNet rows ``QUIET`` (seeded; stored latency at most
  ``--max-ms``), measured in the same passes: their fastest pass against the stored value is
  the host's speed today relative to that sitting (``scripts/probe_source_test.py`` puts the
  probe rows on the quiet rows' scale with it).

``--reuse DATASET`` takes the probe configs of the first ``--n`` networks of an earlier probe
dataset instead of drawing them (the same networks, batches and resolutions, measured again).

Writes ``OUT/list.parquet`` (both, for ``carb profile --configs``), ``OUT/probe.parquet`` and
``OUT/resnet.parquet`` (each part's configs).

``python scripts/probe_list.py data/other_cpus/cpu_epyc_zen5_2c.parquet --out runs/probe_list``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from carb_lib.campaign import read_config_list
from carb_lib.dataset import read_dataset
from carb_lib.families import get_family
from carb_lib.probe_nets import probe_configs


def resnet_sample(quiet: pd.DataFrame, n: int, *, max_ms: float, seed: int) -> pd.DataFrame:
    """``n`` configs of the ``ok`` rows of ``quiet`` with latency at most ``max_ms`` (seeded),
    as config columns of their family."""
    ok = quiet[(quiet["status"] == "ok") & (quiet["latency_ms"] <= max_ms)]
    if len(ok) < n:
        raise SystemExit(f"probe_list: only {len(ok)} rows of {max_ms:g} ms or less, need {n}")
    pick = ok.sample(n=n, random_state=seed)
    fam = get_family(str(pick["family"].iloc[0]))
    cols = list(dict.fromkeys(["config_id", "family",
                               *[c for c in fam.config_columns if c in pick.columns]]))
    return pick[cols].reset_index(drop=True)


def reused(earlier: pd.DataFrame, n: int) -> pd.DataFrame:
    """The config columns of the ``n`` rows of ``earlier`` with the lowest network seeds."""
    import json

    net = earlier["module_kwargs"].map(lambda k: json.loads(k)["seed"])
    pick = earlier.assign(_net=net).sort_values("_net").head(n)
    if len(pick) < n:
        raise SystemExit(f"probe_list: the earlier dataset holds {len(pick)} networks, need {n}")
    cols = ["config_id", "family", "module", "module_kwargs", "input_shape", "batch",
            "precision", "resolution", "num_classes"]
    return pick[cols].reset_index(drop=True)


def write_lists(out: Path, parts: dict[str, pd.DataFrame]) -> Path:
    """``out/list.parquet``, the parts' configs in order (checked now as ``carb profile`` will
    check it), and each part as ``out/<name>.parquet``; returns the list's path."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "list.parquet"
    pd.concat(parts.values(), ignore_index=True).to_parquet(path, index=False)
    read_config_list(path)
    for name, part in parts.items():
        part.to_parquet(out / f"{name}.parquet", index=False)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("quiet", type=Path, help="the platform's quiet ResNet rows")
    ap.add_argument("--n", type=int, default=1200, help="probe networks")
    ap.add_argument("--resnet", type=int, default=100, help="ResNet configs to re-measure")
    ap.add_argument("--cap-gflop", type=float, default=4.0)
    ap.add_argument("--max-ms", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reuse", type=Path, default=None,
                    help="an earlier probe dataset: re-measure its first --n networks")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.reuse is not None:
        probe = reused(read_dataset(args.reuse), args.n)
    else:
        probe = probe_configs(args.n, seed=args.seed, max_gflop=args.cap_gflop)
    resnet = resnet_sample(read_dataset(args.quiet), args.resnet, max_ms=args.max_ms,
                           seed=args.seed)
    write_lists(args.out, {"probe": probe, "resnet": resnet})
    print(f"{len(probe)} probe networks (batch {probe['batch'].min()}-{probe['batch'].max()}, "
          f"resolution {probe['resolution'].min()}-{probe['resolution'].max()}) and "
          f"{len(resnet)} ResNet configs -> {args.out / 'list.parquet'}")


if __name__ == "__main__":
    main()
