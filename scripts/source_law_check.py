"""Should the ResNet source of a cross-family prediction be the kernel law alone, no trees?

The source model (``CARBRegressor``, default preset, kernel law) is the law's constants fitted
on ResNet rows, ExtraTrees on ``log(y / law)`` and a small-batch corrector. The trees and the
corrector learn what ResNet rows do beyond the law, which a family the source never saw may not
share. Session 32 saw (post hoc, on session 31's rows of the fifth CPU, pre-registration AC's)
that the law alone (``source_params={"learners": (), "regime_shrink": 0.0}``) took efficientnet's
offset k = 10 cell from 10.85 to 8.92 % and vgg's from 4.85 to 7.29 %. This script asks it on
the **validation sets only** (:data:`source_corrector_check.SETS`, none of session 31's or 32's
rows), with the rule of pre-registration AD, fixed before this script first ran: the law alone
becomes the cross-family source if, on the offset k = 10 latency MAPE averaged over a set's
families, it is ahead on at least 4 of the 5 sets and the mean paired gap over all set x seed
units is below zero by more than one standard error.

``python scripts/source_law_check.py --out results/cross_family/source_law_check``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from source_corrector_check import choose  # noqa: E402

#: The candidate: the kernel law's constants alone, no learners, no small-batch corrector.
LAW_ALONE: dict = {"learners": (), "regime_shrink": 0.0}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    choose("law alone", LAW_ALONE, seeds=a.seeds, out=a.out,
           command=f"python scripts/source_law_check.py --seeds {a.seeds} --out {a.out}",
           adopt="the law alone becomes the cross-family source")
    return 0


if __name__ == "__main__":
    sys.exit(main())
