"""Peak memory on a GPU against the allocator model built for the CPU.

On a CPU the allocator model (:mod:`carb_lib.families._alloc`, column ``alloc_peak_bytes``)
gives the peak of PyTorch's CPU allocator to the byte. A GPU row's ``peak_mem_mib`` is
``torch.cuda.max_memory_allocated`` and ``peak_reserved_mib`` what the CUDA caching allocator
reserved; neither follows the CPU allocator's blocks, and cuDNN may allocate workspaces the
model does not know. :func:`gpu_memory_gap` says how far the CPU model is, per family and
precision, and how much the caching allocator reserved beyond what was allocated. It measures
the gap; it does not attribute it (no allocation trace is stored).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["gpu_memory_gap"]

MIB = 2**20


def gpu_memory_gap(rows: pd.DataFrame) -> pd.DataFrame:
    """Per family and precision: the measured peak over the allocator model's, and the caching
    allocator's reserve over the measured peak.

    Parameters
    ----------
    rows : pandas.DataFrame
        Ok GPU rows with ``peak_mem_mib``, ``alloc_peak_bytes`` (see
        :func:`carb_lib.evaluation.prepare_dataset`) and optionally ``peak_reserved_mib``.

    Returns
    -------
    pandas.DataFrame
        ``family``, ``precision``, ``n``, ``measured_over_model_median`` (and its p10 / p90),
        ``gap_mib_median`` (measured minus model), ``reserved_over_allocated_median`` (NaN
        without ``peak_reserved_mib``), ``exact_share`` (rows within 0.5 MiB of the model).

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"family": "resnet", "precision": "fp32",
    ...                      "peak_mem_mib": [30.0, 40.0], "alloc_peak_bytes": [20 * 2**20] * 2,
    ...                      "peak_reserved_mib": [32.0, 42.0]})
    >>> gpu_memory_gap(rows)[["n", "measured_over_model_median", "gap_mib_median"]]
       n  measured_over_model_median  gap_mib_median
    0  2                        1.75            15.0
    """
    need = {"peak_mem_mib", "alloc_peak_bytes", "family", "precision"}
    missing = sorted(need - set(rows.columns))
    if missing:
        raise ValueError(f"GPU memory gap: the rows have no column {', '.join(missing)}")
    peak = pd.to_numeric(rows["peak_mem_mib"], errors="coerce")
    model = pd.to_numeric(rows["alloc_peak_bytes"], errors="coerce") / MIB
    reserved = pd.to_numeric(rows.get("peak_reserved_mib", pd.Series(np.nan, rows.index)),
                             errors="coerce")
    ok = np.isfinite(peak) & np.isfinite(model) & (model > 0)
    d = pd.DataFrame({"family": rows["family"], "precision": rows["precision"],
                      "ratio": peak / model, "gap": peak - model, "reserve": reserved / peak,
                      "exact": (peak - model).abs() <= 0.5})[ok]
    out = d.groupby(["family", "precision"], sort=True).agg(
        n=("ratio", "size"), measured_over_model_median=("ratio", "median"),
        measured_over_model_p10=("ratio", lambda r: r.quantile(0.1)),
        measured_over_model_p90=("ratio", lambda r: r.quantile(0.9)),
        gap_mib_median=("gap", "median"),
        reserved_over_allocated_median=("reserve", "median"),
        exact_share=("exact", "mean")).reset_index()
    return out
