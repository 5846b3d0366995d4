"""The kernel law with small batches held out, on every sitting of the fifth CPU, with no
weight-traffic term and with session 20's term combined as ``max`` or ``sum``.

Session 31's steady sitting left the small-batch R² at 0.890: ten wide fp32 ResNets at 32-48 px
and batch 1-4, whose weights stream from memory, were predicted at 0.60-0.68 of their time.
``KernelModel(cache=knee)`` reads every weighted operator's weights from memory in networks
whose weights exceed the probe's cache; ``traffic`` says whether that read overlaps the
operator's time alone (``max``, the default since session 20) or adds to it (``sum``). This
script runs ``kernel_law_comparison(..., splits=["batch_small"])`` on each sitting with its own
operators (one kernel model per sitting and variant, ``--seeds`` model seeds) and writes
``traffic_check.txt`` and ``traffic_check.csv``.

Session 32 ran it after seeing session 31's sitting with ``sum`` (post hoc). It is the
evidence for pre-registration AG, not a blind test.

``python scripts/traffic_check.py --out results/carb/traffic_check_cpu_xeon_gnr_2c``
"""

from __future__ import annotations

import argparse
import io
import warnings
from pathlib import Path

import pandas as pd

from carb_lib import kernels
from carb_lib.cache_probe import cache_knee
from carb_lib.dataset import read_dataset
from carb_lib.evaluation import prepare_dataset
from carb_lib.evaluation.kernel_law import kernel_law_comparison

PLATFORM = "cpu_xeon_gnr_2c"
#: Sittings with operators and ResNet rows of one sitting: tag -> heap.
SITTINGS: dict[str, str] = {"session20": "default", "session29_kept": "kept",
                            "session30_default": "default", "session30_kept": "kept",
                            "session31_steady": "kept"}
VARIANTS = ("none", "max", "sum")


def check(rows: pd.DataFrame, bench: pd.DataFrame, knee, seeds: int) -> pd.DataFrame:
    """The kernel law's small-batch scores (per variant and seed) on one sitting."""
    out = []
    for v in VARIANTS:
        km = kernels.KernelModel() if v == "none" else kernels.KernelModel(cache=knee, traffic=v)
        s = kernel_law_comparison(rows, bench, splits=["batch_small"], seeds=seeds,
                                  kernel_model=km).scores
        out.append(s[s["law"] == "kernel"].assign(traffic=v))
    return pd.concat(out, ignore_index=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--probe", type=Path, default=Path(f"data/kernels/{PLATFORM}_cache_probe.csv"))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    knee = cache_knee(pd.read_csv(a.probe))
    parts = []
    for tag, heap in SITTINGS.items():
        print(f"{tag} ...", flush=True)
        rows = prepare_dataset(read_dataset(f"data/other_cpus/{PLATFORM}_{tag}.parquet"))
        bench = kernels.read_bench(f"data/kernels/{PLATFORM}_{tag}.parquet")
        parts.append(check(rows.reset_index(drop=True), bench, knee, a.seeds)
                     .assign(sitting=tag, heap=heap))
    scores = pd.concat(parts, ignore_index=True)
    tab = scores.pivot_table(index=["sitting", "heap"], columns="traffic",
                             values=["r2", "mape_pct"], aggfunc="mean")
    buf = io.StringIO()
    buf.write(f"# python scripts/traffic_check.py --probe {a.probe} --seeds {a.seeds} "
              f"--out {a.out}\n")
    buf.write(f"{PLATFORM}: weights past {knee.cache_mib:.0f} MiB read from memory at "
              f"{knee.memory_gb_per_s:.1f} GB/s; kernel law, batches <= 8 held out, mean over "
              f"{a.seeds} model seeds\n\n")
    buf.write(tab.round(3).to_string() + "\n")
    a.out.mkdir(parents=True, exist_ok=True)
    scores.to_csv(a.out / "traffic_check.csv", index=False)
    (a.out / "traffic_check.txt").write_text(buf.getvalue())
    print(buf.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
