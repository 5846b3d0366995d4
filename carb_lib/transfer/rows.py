"""The rows a transfer model or its evaluation is fitted and scored on: :func:`prepare_rows`.

Transfer (:mod:`carb_lib.transfer.cpus`, :mod:`carb_lib.transfer.calibration_eval`) and the
cross-family evaluation (:mod:`carb_lib.evaluation.cross_family`, which re-exports both names)
read their rows through it; it lives here, below the evaluation, so that the evaluation imports
transfer and transfer never imports the evaluation.

"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from carb_lib.core.vocab import EXTRA_STATIC_FEATURES, STATIC_FEATURES
from carb_lib.dataset.features import fill_static_features

__all__ = ["CROSS_FAMILY_TARGETS", "prepare_rows"]

#: Targets evaluated on every platform (CPU rows carry no energy);
#: :func:`carb_lib.evaluation.cross_family.cross_family_targets` adds ``energy_j`` where the rows
#: hold it (GPU rows).
CROSS_FAMILY_TARGETS: tuple[str, ...] = ("peak_mem_mib", "latency_ms")


def prepare_rows(df: pd.DataFrame, targets: Sequence[str] = CROSS_FAMILY_TARGETS) -> pd.DataFrame:
    """``ok`` rows with a finite, positive value of every target, their static features
    (:data:`~carb_lib.core.vocab.STATIC_FEATURES` and the family-agnostic extras) filled in where the
    dataset does not store them."""
    missing = [t for t in targets if t not in df.columns]
    if missing:
        raise ValueError(f"target column(s) {missing} are absent from the rows")
    keep = df["status"].astype(str).eq("ok") if "status" in df.columns else pd.Series(True, df.index)
    for t in targets:
        y = pd.to_numeric(df[t], errors="coerce")
        keep &= np.isfinite(y) & (y > 0)
    out = df.loc[keep].reset_index(drop=True)
    return fill_static_features(out, (*STATIC_FEATURES, *EXTRA_STATIC_FEATURES))
