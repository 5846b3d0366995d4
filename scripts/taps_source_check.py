"""Should the cross-family kernel law read the kernel model with the tap-share feature?

Session 14 found that a depthwise conv whose kernel overhangs its input map (a 5 x 5 conv on a
1 x 1 or 2 x 2 map) runs at ~0.1 GFLOP/s, and added ``KernelModel(features="taps")`` (the share
of a kernel's taps inside its input). It helped held-out operators on every CPU, and the
networks only a little (``results/carb/kernel_taps_check``, three CPUs, sampler v3 operators
only). Session 34 saw (post hoc, on pre-registration AC's rows of the fifth CPU) that the
ResNet source's kernel law *alone* predicts efficientnet fp32 within a few per cent at 48-224 px
and +0.11 (log) too fast at 32 px, where such convs run. This script asks whether the feature
helps on the **validation sets only** (:data:`source_corrector_check.SETS`, none of session
31's, 32's or 34's rows), with pre-registration AD's rule, fixed before this script first ran:
``features="taps"`` becomes the cross-family kernel model if, on the offset k = 10 latency MAPE
averaged over a set's families, it is ahead on at least 4 of the 5 sets and the mean paired gap
over all set x seed units is below zero by more than one standard error.

``python scripts/taps_source_check.py --out results/cross_family/taps_source_check``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from source_corrector_check import choose  # noqa: E402

#: The candidate: the kernel model with the tap-share feature; the source itself as default.
TAPS: dict = {"features": "taps"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    choose("taps", {}, seeds=a.seeds, out=a.out, kernel_params=TAPS,
           command=f"python scripts/taps_source_check.py --seeds {a.seeds} --out {a.out}",
           adopt="the cross-family kernel law reads KernelModel(features='taps')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
