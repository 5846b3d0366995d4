"""Pre-registration M's test: probe networks and ResNet rows of ONE sitting as the source.

Pre-registration L added probe rows of a slow sitting (1.47x) to ResNet rows of a quiet one, and
the probe source did not help. Here both come from one sitting (``scripts/probe_sitting_campaign.sh``),
so the source shares one host speed. For each target data set and family (as
``scripts/probe_source_test.py``: ``fresh``, ``passes``, ``s12``), the kernel-law source model
(latency only, shared features, default preset) is fitted on

* ``resnet``: this sitting's ResNet rows alone (the paired baseline);
* ``resnet+probe``: those and this sitting's probe rows (**the judged source**);
* ``resnet_s12``: session 12's 2,656 quiet ResNet rows (pre-registration L's baseline, beside);

and scored zero-shot and with ``offset`` at k = 10, 5 seeds, paired per seed. Also written:
``agreement.txt``, the halves check of this sitting's passes, and this sitting's probe rows
against pre-registration L's rows of the same configs.

``python scripts/probe_sitting_test.py cpu_epyc_zen5_2c --out results/cross_family/probe/cpu_epyc_zen5_2c/sitting2``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_source_test import judged_bench, ratio_line, score_data_sets, speed_factor  # noqa: E402

from carb_lib.dataset import read_dataset  # noqa: E402
from carb_lib.evaluation.cross_family import kernel_law_rows  # noqa: E402
from carb_lib.passes import pass_agreement, read_passes  # noqa: E402


def agreement(out: Path, platform: str) -> str:
    """The halves check of this sitting, and its probe rows against L's."""
    halves = pass_agreement(read_passes(out / "pass_rows.parquet"))
    return (f"halves: {halves}\n"
            + ratio_line("probe rows of this sitting / pre-registration L's",
                         read_dataset(out / "probe_rows.parquet"),
                         read_dataset(f"data/other_cpus/probe_nets/{platform}.parquet")) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    p = args.platform
    nets, fams = Path("data/other_cpus"), Path("data/other_cpus/new_families")
    bench = judged_bench(p)
    factor, n_pairs = speed_factor(read_dataset(args.out / "resnet_rows.parquet"),
                                   read_dataset(nets / f"{p}.parquet"))
    today, probe, s12_resnet, s12, passes, fresh = kernel_law_rows(
        bench, args.out / "resnet_rows.parquet", args.out / "probe_rows.parquet",
        nets / f"{p}.parquet", fams / f"{p}.parquet", fams / f"{p}_passes.parquet",
        fams / f"{p}_fresh_depthwise.parquet")
    sources = {"resnet": (today, False),
               "resnet+probe": (pd.concat([today, probe], ignore_index=True), False),
               "resnet_s12": (s12_resnet, False)}
    _, gains = score_data_sets(sources, fresh=fresh, passes=passes, s12=s12, seeds=args.seeds,
                            out=args.out)
    (args.out / "speed.txt").write_text(
        f"host speed this sitting / quiet rows: median ratio {factor:.4f} over {n_pairs} "
        f"ResNet configs\nprobe rows: {len(probe)}; ResNet rows of this sitting: {len(today)}\n")
    (args.out / "agreement.txt").write_text(agreement(args.out, p))
    print((args.out / "speed.txt").read_text() + (args.out / "agreement.txt").read_text())
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(gains.round(2))


if __name__ == "__main__":
    main()
