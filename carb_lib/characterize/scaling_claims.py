"""The characterization claims of the paper, tested on a dataset: :func:`claims_table` turns
the results of :mod:`carb_lib.characterize.scaling` (divergence, paired effects, scaling exponents) into one
row per claim of ``results/claims.csv`` (:data:`carb_lib.core.claims.COLUMN_ORDER`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from carb_lib.core.claims import COLUMN_ORDER
from carb_lib.core.vocab import TARGETS

__all__ = ["CLAIM_COLUMNS", "PAPER_CLAIMS", "claims_table"]

#: Column order of the characterization claims (:data:`carb_lib.core.claims.COLUMN_ORDER`).
CLAIM_COLUMNS = list(COLUMN_ORDER)

#: Paper claims tested by the characterization (reported values, see paper-notes.md).
PAPER_CLAIMS: dict[str, tuple[str, float]] = {
    "divergence_energy_growth": (
        "Under high computational demand energy grows 35.4x (high vs low demand)", 35.4),
    "divergence_latency_growth": (
        "Under high computational demand latency grows 11.2x (high vs low demand)", 11.2),
    "divergence_energy_vs_latency": (
        "Energy grows about 3x faster than latency under high demand (35.4 / 11.2)",
        35.4 / 11.2),
    "fp16_memory_ratio": ("FP16 changes peak memory by 1.7x (fp32 / fp16)", 1.7),
    "fp16_energy_ratio": ("FP16 changes energy by only 1.1x (fp32 / fp16)", 1.1),
    "small_batch_j_per_gflop": ("Small batches worsen energy per GFLOP by 5.9x", 5.9),
    "distinct_scaling": (
        "Energy, latency and memory scale distinctly with the workload", math.nan),
}


def _pick(frame: pd.DataFrame | None, platform: str | None, **eq: Any) -> Mapping | None:
    if frame is None or len(frame) == 0:
        return None
    mask = pd.Series(True, index=frame.index)
    if platform is not None and "platform" in frame.columns:
        mask &= frame["platform"].astype(str) == str(platform)
    for col, val in eq.items():
        if col not in frame.columns:
            return None
        mask &= frame[col] == val
    hits = frame.loc[mask]
    return None if hits.empty else hits.iloc[0].to_dict()


def claims_table(
    results: Mapping[str, pd.DataFrame],
    platform: str,
    n: int,
    dataset: str = "measured",
    source: str = "01_characterization",
) -> pd.DataFrame:
    """One row per characterization claim of the paper, with our value on ``platform``.

    Parameters
    ----------
    results : mapping
        ``{"divergence": divergence(...), "paired_effects": paired_effects(...),
        "scaling": fit_scaling(...)}`` (any may be missing: the claim is then not testable).
    platform : str
        Platform the numbers come from.
    n : int
        Ok rows of the dataset on that platform (used where no narrower n applies; paired
        claims report their number of pairs, divergence claims the rows in both tiers).
    dataset : str
        ``"measured"`` or ``"synthetic"`` (or a file stem); written to the ``dataset`` column.
    source : str
        Notebook that produced the rows.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CLAIM_COLUMNS`. ``paper_value`` is the paper's *reported* number,
        ``our_value`` ours; claims the dataset cannot test have ``testable=False`` and a reason.
    """
    div = results.get("divergence")
    pe = results.get("paired_effects")
    sc = results.get("scaling")
    rows = []

    def add(cid, value=math.nan, lo=math.nan, hi=math.nan, n_used=None, testable=False,
            reason=None, method=None):
        claim, paper = PAPER_CLAIMS[cid]
        rows.append(dict(claim_id=cid, claim=claim, paper_value=paper, our_value=value,
                         our_ci_low=lo, our_ci_high=hi, platform=platform, dataset=dataset,
                         n=n if n_used is None else n_used, testable=bool(testable),
                         reason=reason, method=method, source=source))

    tier_method = None
    for cid, qty in (("divergence_energy_growth", "energy_j"),
                     ("divergence_latency_growth", "latency_ms"),
                     ("divergence_energy_vs_latency", "energy_over_latency")):
        r = _pick(div, platform, quantity=qty)
        if r is None:
            add(cid, reason="divergence not computed for this platform")
            continue
        tier_method = (f"median in high tier (flops >= q{r['q_high']:.2f}) / median in low tier "
                       f"(flops <= q{r['q_low']:.2f}); {r['n_boot']} bootstrap resamples, 95% "
                       "percentile CI; the paper's tier definition is not stated")
        if r["testable"]:
            add(cid, r["growth"], r["ci_low"], r["ci_high"],
                int(r["n_low"] + r["n_high"]), True, None, tier_method)
        else:
            add(cid, reason=r["reason"], method=tier_method)

    for cid, effect, metric in (("fp16_memory_ratio", "precision", "peak_mem_mib"),
                                ("fp16_energy_ratio", "precision", "energy_j"),
                                ("small_batch_j_per_gflop", "batch", "energy_j_per_gflop")):
        r = _pick(pe, platform, effect=effect, metric=metric)
        if r is None:
            add(cid, reason=f"paired effect {effect}/{metric} not computed for this platform")
            continue
        method = f"median over {r['n_pairs']} paired configs of {r['comparison']} ({metric})"
        if r["testable"]:
            add(cid, r["median_ratio"], r["ci_low"], r["ci_high"], int(r["n_pairs"]), True,
                None, method)
        else:
            add(cid, reason=r["reason"], method=method)

    exps = {}
    missing = {}
    for t in TARGETS:
        r = _pick(sc, platform, target=t, x="flops", group_by="all", model="univariate")
        if r is not None and r["testable"]:
            exps[t] = (r["exponent"], r["ci_low"], r["ci_high"])
        else:
            missing[t] = r["reason"] if r is not None else "not fitted"
    desc = "; ".join(f"{t} {e:.3f} [{lo:.3f}, {hi:.3f}]" for t, (e, lo, hi) in exps.items())
    method = "log-log OLS exponents on flops (HC3 95% CI): " + (desc or "none")
    names = list(exps)
    diffs = [abs(exps[a][0] - exps[b][0]) for i, a in enumerate(names) for b in names[i + 1:]]
    disjoint = all(exps[a][2] < exps[b][1] or exps[b][2] < exps[a][1]
                   for i, a in enumerate(names) for b in names[i + 1:])
    if missing:
        part = f"; pairwise CIs disjoint among the others: {disjoint}" if len(exps) >= 2 else ""
        add("distinct_scaling", min(diffs) if diffs else math.nan,
            reason="; ".join(f"{t}: {why}" for t, why in missing.items()) + part,
            method=method + "; our_value = smallest pairwise exponent difference")
    else:
        add("distinct_scaling", min(diffs), n_used=n, testable=True,
            reason=None,
            method=method + f"; pairwise CIs disjoint: {disjoint}; our_value = smallest "
            "pairwise exponent difference")
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)
