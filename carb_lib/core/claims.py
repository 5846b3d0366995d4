"""The shared claims table ``results/claims.csv`` (and ``claims_synthetic.csv``).

Every notebook that tests a number of the paper writes its rows here: characterization (01),
transfer (02), CARB (03), screening (04). One row per ``(claim_id, platform)``.

Columns
-------
Required (:data:`CLAIM_COLUMNS`): ``claim_id``, ``claim`` (the paper's statement),
``paper_value`` (the paper's *reported* number), ``our_value``, ``platform``, ``n``,
``testable`` (bool), ``reason`` (why not testable, or how comparable). Optional
(:data:`OPTIONAL_CLAIM_COLUMNS`): ``our_ci_low``, ``our_ci_high``, ``dataset``, ``method``,
``source``. Any other column is kept, after these.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from carb_lib.core.tables import atomic_write

#: Columns every claim row has (missing ones are added empty by :func:`build_claims`).
CLAIM_COLUMNS: list[str] = [
    "claim_id",
    "claim",
    "paper_value",
    "our_value",
    "platform",
    "n",
    "testable",
    "reason",
]
#: Optional columns some notebooks add (confidence interval, provenance).
OPTIONAL_CLAIM_COLUMNS: list[str] = ["our_ci_low", "our_ci_high", "dataset", "method", "source"]
#: Column order of the written table (required and optional columns; others follow).
COLUMN_ORDER: list[str] = [
    "claim_id",
    "claim",
    "paper_value",
    "our_value",
    "our_ci_low",
    "our_ci_high",
    "platform",
    "dataset",
    "n",
    "testable",
    "reason",
    "method",
    "source",
]
KEY: tuple[str, str] = ("claim_id", "platform")
#: Columns of a target the project set itself (never the paper's): its value and where it is
#: stated. ``claims.csv`` always has them, after ``paper_value``.
TARGET_COLUMNS: list[str] = ["target_value", "target_source"]


__all__ = ["CLAIM_COLUMNS", "OPTIONAL_CLAIM_COLUMNS", "COLUMN_ORDER", "KEY", "TARGET_COLUMNS"]


# --------------------------------------------------------------------------- one table per run
#: Folder (under ``results/``) with one claims file per notebook, each replaced whole by its
#: notebook's run; ``claims.csv`` is rebuilt from these, never appended to.
CLAIMS_DIR = "claims"
#: What ``n`` counts in the reviewer table, by claim id prefix (default: measured rows).
N_COUNTS: dict[str, str] = {
    "help_fewshot_spearman": "HELP devices",
    "help_flops_spearman": "HELP devices",
    "transfer_": "device pairs",
    "screening_eliminated_fraction": "candidates",
    "screening_time_s": "candidates",
    "cpu_transfer_": "runs",
    "platform_": "seeds",
    "host_calibration_": "campaign pairs",
}
#: How a claim is judged (by claim id prefix): the tolerance band around its reference value
#: (the paper's number, or our target's). ``("at_least", m)``: ours >= ref - m;
#: ``("at_most", m)``: ours <= ref + m; ``("about", r)``: ours within ``r`` (relative) of ref;
#: for claims that state no number, ``("above", x)``: ours > x and ``("below", x)``: ours < x.
#: A claim is *supported* when its whole interval lies inside the band, *contradicted* when it
#: lies wholly outside, *inconclusive* otherwise (see :func:`verdict`).
RULES: dict[str, tuple[str, float]] = {
    "carb_r2_": ("at_least", 0.02),
    "static_r2_": ("at_least", 0.02),
    "lobto_r2_": ("at_least", 0.02),
    "b2_latency_proxy": ("at_least", 0.02),
    "b1_flops_r2_": ("at_most", 0.10),
    "help_fewshot_spearman": ("at_least", 0.02),
    "help_flops_spearman": ("about", 0.10),
    "screening_budget_accuracy": ("at_least", 0.02),
    "screening_eliminated_fraction": ("at_least", 0.005),
    "screening_false_accept_rate": ("at_most", 0.02),
    "screening_hw_budget_checks": ("at_least", 0.0),
    "screening_hw_energy_error_j": ("about", 0.25),
    "screening_time_s": ("below", 60.0),
    "transfer_energy_rank_rho": ("at_least", 0.02),
    "transfer_latency_needs_platform_model": ("above", 1.0),
    "distinct_scaling": ("above", 0.0),
    "divergence_": ("about", 0.25),
    "fp16_": ("about", 0.25),
    "small_batch_": ("about", 0.25),
    "transfer_slope_": ("about", 0.25),
    # our targets (``target_value``): met when ours is on the target's side of it
    "cpu_transfer_zero_shot_ape_over_noise": ("at_most", 0.0),
    "cpu_transfer_few_shot_k10_ape_over_noise": ("at_most", 0.0),
    "cpu_transfer_zero_shot_spearman": ("at_least", 0.0),
    "platform_latency_mape_over_noise": ("at_most", 0.0),
    "platform_small_batch_r2": ("at_least", 0.0),
    "host_calibration_ape_change_pp": ("at_most", 0.0),
}
#: Claims whose value is a count over a fixed set (no sampling noise): the value alone decides.
NOISE_FREE: tuple[str, ...] = ("screening_eliminated_fraction",)
#: Into how many groups of rows ``n`` splits, by claim id prefix (default one): the
#: high/low-demand tiers of the divergence claims.
GROUPS: dict[str, int] = {"divergence_": 2}
#: Fewer measured rows than this in a group: the verdict is inconclusive whatever the interval.
MIN_GROUP_ROWS = 10
#: How the interval of a row was computed, by claim id prefix (rows without one: "none").
INTERVAL_METHODS: dict[str, str] = {
    "carb_r2_": "t interval over random splits",
    "static_r2_": "t interval over random splits",
    "b1_flops_r2_": "t interval over random splits",
    "b2_latency_proxy": "t interval over random splits",
    "divergence_": "bootstrap percentile over rows",
    "fp16_": "bootstrap percentile over pairs",
    "small_batch_": "bootstrap percentile over pairs",
    "transfer_slope_": "interquartile range over pairs",
    # the energy claims on every row of a GPU (carb_lib.screening.energy_claims)
    "lobto_r2_energy_j_all_families": "t interval over model seeds",
    "screening_budget_accuracy_": "t interval over random splits",
    "screening_false_accept_rate_": "t interval over random splits",
    "host_calibration_": "bootstrap percentile over campaign pairs",
}
#: Columns of the reviewer table (:func:`reviewer_table`). ``target`` / ``target source``: the
#: value and origin of a target the project set itself (``paper (reported)`` stays empty).
REVIEW_COLUMNS: list[str] = ["claim", "paper (reported)", "target", "target source", "ours",
                             "ours 95% CI", "interval method", "n", "n counts", "platform",
                             "verdict", "why", "claim_id", "source"]
#: Verdicts that judge a value (every testable row with a value gets one of these, with a
#: parenthesis for the inconclusive ones).
JUDGED = ("supported", "contradicted", "inconclusive")


def _lookup(table: Mapping[str, Any], claim_id: str, default: Any = None) -> Any:
    hits = [k for k in table if str(claim_id).startswith(k)]
    return table[max(hits, key=len)] if hits else default


def _num(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return None if v != v else v  # NaN -> None


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and value != value) \
        else str(value).strip()


def reference(row: Mapping[str, Any]) -> float | None:
    """The number a row is judged against: our ``target_value`` for our targets, else the
    paper's ``paper_value`` (``None``: neither)."""
    target = _num(row.get("target_value"))
    return target if target is not None else _num(row.get("paper_value"))


def band(row: Mapping[str, Any]) -> tuple[float, float] | None:
    """The tolerance band ``(low, high)`` of a row (:data:`RULES`; ``None``: no rule, or a
    relative rule without a reference value)."""
    rule = _lookup(RULES, row.get("claim_id", ""))
    if rule is None:
        return None
    kind, tol = rule
    if kind == "above":
        return (tol, math.inf)
    if kind == "below":
        return (-math.inf, tol)
    ref = reference(row)
    if ref is None:
        return None
    if kind == "at_least":
        return (ref - tol, math.inf)
    if kind == "at_most":
        return (-math.inf, ref + tol)
    half = abs(ref) * tol
    return (ref - half, ref + half)


def _groups(row: Mapping[str, Any]) -> list[int] | None:
    n = _num(row.get("n"))
    if n is None or _lookup(N_COUNTS, row.get("claim_id", "")) is not None:
        return None
    k = _lookup(GROUPS, row.get("claim_id", ""), 1)
    n = int(n)
    return [n // k + (1 if i < n % k else 0) for i in range(k)]


def interval_method(row: Mapping[str, Any]) -> str:
    """How the row's interval was computed (:data:`INTERVAL_METHODS`), ``"count (exact)"`` for
    :data:`NOISE_FREE` claims, ``"none"`` when the row has no interval."""
    cid = str(row.get("claim_id", ""))
    if any(cid.startswith(p) for p in NOISE_FREE):
        return "count (exact)"
    lo, hi = _num(row.get("our_ci_low")), _num(row.get("our_ci_high"))
    if lo is None or hi is None:
        return "none"
    return _lookup(INTERVAL_METHODS, cid, "95% interval")


def _testable(row: Mapping[str, Any]) -> bool:
    return str(row.get("testable")).strip().lower() in ("true", "1", "1.0")


def verdict(row: Mapping[str, Any]) -> str:
    """``supported``, ``contradicted``, ``inconclusive`` or ``not testable`` for one claims row.

    Supported: the row's interval lies inside the claim's tolerance band (:func:`band`);
    contradicted: it lies wholly outside; otherwise inconclusive. A row without an interval is
    ``inconclusive (no interval)`` unless its value is an exact count (:data:`NOISE_FREE`);
    fewer than :data:`MIN_GROUP_ROWS` measured rows in a group gives e.g.
    ``inconclusive (n = 5+5)``. A row without a value (or without a rule) is ``not testable``.
    """
    ours = _num(row.get("our_value"))
    b = band(row)
    if not _testable(row) or ours is None or b is None:
        return "not testable"
    groups = _groups(row)
    if groups and min(groups) < MIN_GROUP_ROWS:
        return f"inconclusive (n = {'+'.join(map(str, groups))})"
    if interval_method(row) == "count (exact)":
        lo = hi = ours
    else:
        lo, hi = _num(row.get("our_ci_low")), _num(row.get("our_ci_high"))
        if lo is None or hi is None:
            return "inconclusive (no interval)"
    if b[0] <= lo and hi <= b[1]:
        return "supported"
    if hi < b[0] or lo > b[1]:
        return "contradicted"
    return "inconclusive"


def _fmt(value: Any) -> str:
    v = _num(value)
    if v is None:
        return ""
    return f"{v:.4g}" if abs(v) < 1e5 else f"{v:,.0f}"


def band_text(row: Mapping[str, Any]) -> str:
    """The band in words, e.g. ``ours >= 0.972`` or ``ours in [8.4, 14]``."""
    b = band(row)
    if b is None:
        return ""
    if b[1] == math.inf:
        return f"ours >= {_fmt(b[0])}" if _lookup(RULES, row["claim_id"])[0] != "above" \
            else f"ours > {_fmt(b[0])}"
    if b[0] == -math.inf:
        return f"ours <= {_fmt(b[1])}" if _lookup(RULES, row["claim_id"])[0] != "below" \
            else f"ours < {_fmt(b[1])}"
    return f"ours in [{_fmt(b[0])}, {_fmt(b[1])}]"


def is_target(row: Mapping[str, Any]) -> bool:
    """Whether the row is one of our own targets (it has a ``target_value``)."""
    return _num(row.get("target_value")) is not None


def _point_in_band(row: Mapping[str, Any]) -> bool | None:
    ours, b = _num(row.get("our_value")), band(row)
    if ours is None or b is None:
        return None
    return b[0] <= ours <= b[1]


def _why(row: Mapping[str, Any], judged: str) -> str:
    reason = _text(row.get("reason"))
    if judged == "not testable":
        if _testable(row) and _num(row.get("our_value")) is not None:
            return "no rule to judge it" + (f"; {reason}" if reason else "")
        return reason or "not computable on this data"
    ok = _point_in_band(row)
    head = f"band: {band_text(row)}"
    if is_target(row):
        head = (f"target {'met' if ok else 'missed'}: ours {_fmt(row['our_value'])} "
                f"(target: {band_text(row)})")
    elif judged.startswith("inconclusive (no interval)"):
        head += f"; our value is {'inside' if ok else 'outside'} it"
    if judged.startswith("inconclusive (n ="):
        head += "; too few rows per group to judge"
    elif judged.startswith("inconclusive (no"):
        head += "; no interval to judge it"
    elif judged == "inconclusive":
        head += "; our interval straddles its edge"
    return f"{head}; {reason}" if reason else head


def short_why(row: Mapping[str, Any], judged: str | None = None) -> str:
    """The reason of a verdict in at most 15 words (the long ``why`` is in the full table)."""
    judged = verdict(row) if judged is None else judged
    reason = _text(row.get("reason")).lower()
    if judged == "not testable":
        if "energy" in reason and ("not measured" in reason or "nan" in reason
                                   or "no energy" in reason):
            return "no energy counter on this platform"
        if "two devices" in reason or "measured on 1 platform" in reason:
            return "needs the same configs measured on two GPUs"
        if "--validate" in reason:
            return "needs the shortlist re-measured on the hardware"
        return " ".join(reason.split()[:15]) or "not computable on this data"
    ok = _point_in_band(row)
    where = "inside" if ok else "outside"
    if judged.startswith("inconclusive (n ="):
        return "too few rows per tier to judge"
    if judged.startswith("inconclusive (no"):
        return f"no interval; value {where} band ({band_text(row)})"
    if judged == "inconclusive":
        return f"interval straddles band ({band_text(row)})"
    if interval_method(row) == "count (exact)":
        return f"exact count {where} band ({band_text(row)})"
    return f"interval {where} band ({band_text(row)})"


def reviewer_table(claims: pd.DataFrame) -> pd.DataFrame:
    """The "paper claim vs ours" table of a claims table (:data:`REVIEW_COLUMNS`).

    ``paper (reported)`` is the paper's reported number (never ours, never our target);
    ``target`` / ``target source`` our own targets; ``ours`` our value and ``ours 95% CI`` its
    interval where the notebook gives one, computed as ``interval method`` says; ``n`` counts
    what ``n counts`` says: measured rows our value is computed from, unless another unit is
    named (HELP devices, device pairs, screened candidates); ``verdict`` is supported /
    contradicted / inconclusive / not testable (:func:`verdict`), ``why`` gives the band and the
    reason. The paper's claims come first, then our targets.
    """
    rows = []
    for r in claims.to_dict("records"):
        judged = verdict(r)
        lo, hi = _fmt(r.get("our_ci_low")), _fmt(r.get("our_ci_high"))
        n = _num(r.get("n"))
        rows.append({
            "claim": r.get("claim"),
            "paper (reported)": _fmt(r.get("paper_value")),
            "target": _fmt(r.get("target_value")),
            "target source": _text(r.get("target_source")),
            "ours": _fmt(r.get("our_value")) if judged != "not testable" else "",
            "ours 95% CI": f"[{lo}, {hi}]" if lo and hi else "",
            "interval method": interval_method(r),
            "n": "" if n is None else int(n),
            "n counts": _lookup(N_COUNTS, r.get("claim_id", ""), "measured rows"),
            "platform": r.get("platform"),
            "verdict": judged,
            "why": _why(r, judged),
            "claim_id": r.get("claim_id"),
            "source": r.get("source"),
            "_t": is_target(r),
        })
    order = {"supported": 0, "contradicted": 1, "inconclusive": 2, "not testable": 3}
    out = pd.DataFrame(rows, columns=[*REVIEW_COLUMNS, "_t"])
    key = out["verdict"].map(lambda v: order[v.split(" (")[0]])
    return out.assign(_k=key).sort_values(["_t", "_k", "claim_id", "platform"], kind="stable") \
        .drop(columns=["_k", "_t"]).reset_index(drop=True)


#: Rows of the one-page summary, by claim id prefix (longest match wins): a claim's platforms
#: and targets share a row. A claim id outside these gets a row of its own.
SUMMARY_GROUPS: dict[str, str] = {
    "carb_r2_": "CARB test-set R2 (memory, energy, latency)",
    "static_r2_": "CARB without telemetry features R2 (memory, energy, latency)",
    "b1_flops_r2_": "B1 FLOPs-only regression R2 stays low (memory, energy, latency)",
    "lobto_r2_": "Leave-one-batch-tier-out R2 (memory, energy, latency)",
    "help_fewshot_spearman_k10": "HELP: 10 target samples give Spearman 0.80-0.99 on unseen devices",
    "screening_hw_": "The screened shortlist holds when re-measured on hardware",
    "screening_budget_accuracy": "Budget classification is 95.8% accurate (the paper: 75 J, "
                                 "RTX 3080; here at our budgets)",
    "screening_false_accept_rate": "Budget classification has 2.1% false accepts (predicted "
                                   "within, measured over)",
    "b2_latency_proxy_r2": "B2 latency as energy proxy R2 (energy, energy above idle)",
    "transfer_slope_": "Cross-GPU slopes of log latency, energy, memory (2.09, 1.61, 0.92)",
    "cpu_transfer_zero_shot_ape_over_noise": "A new CPU: zero-shot median APE at most 2x "
                                             "the re-measurement noise",
    "cpu_transfer_zero_shot_spearman": "A new CPU: zero-shot Spearman at least 0.97",
    "cpu_transfer_few_shot_k10_ape_over_noise": "A new CPU: k = 10 median APE at most 1.3x "
                                                "the re-measurement noise",
    "platform_latency_mape_over_noise": "Every CPU: latency MAPE at most 1.5x the "
                                        "re-measurement noise",
    "platform_small_batch_r2": "Every CPU: small-batch latency R2 at least 0.95",
}
#: Columns of the one-page summary (:func:`summary_table`).
SUMMARY_COLUMNS: list[str] = ["claim", "platforms", "verdict", "ours (95% CI)", "why",
                              "claim ids"]
#: Longest text of a summary cell.
SUMMARY_CELL_MAX = 100


def summary_group(claim_id: str) -> str:
    """The summary row a claim id belongs to (:data:`SUMMARY_GROUPS`; else the id itself)."""
    return _lookup({k: k for k in SUMMARY_GROUPS}, claim_id, str(claim_id))


def _cap(text: str, limit: int = SUMMARY_CELL_MAX) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip(" ,;") + "…"


_SHORT = {"latency_ms": "latency", "peak_mem_mib": "memory", "energy_j": "energy"}
#: The reason a grouped summary row gives, by its weakest verdict.
_GROUP_REASON = {"supported": "every interval inside it", "contradicted": "an interval outside it",
                 "inconclusive": "an interval straddles it",
                 "inconclusive (no interval)": "no intervals"}


def _fmt3(value: Any) -> str:
    v = _num(value)
    return "" if v is None else f"{v:.3g}"


def _member(claim_id: str, group: str, platform: str, by_platform: bool) -> str:
    """A short name of a claim within its summary row (its target, or its platform)."""
    if by_platform:
        for part in ("cpu_", "gpu_nvidia_", "_2c"):
            platform = platform.replace(part, "")
        return platform
    rest = claim_id[len(group):].strip("_") if claim_id != group else ""
    return _SHORT.get(rest, rest)


def summary_table(claims: pd.DataFrame) -> pd.DataFrame:
    """The reviewer's one-page summary: one row per claim (its platforms and targets grouped,
    :func:`summary_group`), with the verdicts (counted where the rows differ), our values with
    their intervals, a reason of at most 15 words, and the claim ids the row stands for
    (``prefix*`` where it groups several). The paper's claims first, then our targets; no
    cell longer than :data:`SUMMARY_CELL_MAX` characters."""
    records = claims.to_dict("records")
    for r in records:
        r["_v"] = verdict(r)
        r["_g"] = summary_group(r.get("claim_id", ""))
    groups: dict[str, list[dict]] = {}
    for r in records:
        groups.setdefault(r["_g"], []).append(r)
    rank = {"contradicted": 0, "inconclusive": 1, "supported": 2, "not testable": 3}
    out = []
    for g, rs in groups.items():
        ids = sorted({str(r["claim_id"]) for r in rs})
        label = SUMMARY_GROUPS.get(g) or str(rs[0].get("claim"))
        plats = list(dict.fromkeys(str(r.get("platform")) for r in rs))
        plat_text = ", ".join(plats)
        if len(plat_text) > 60:
            plat_text = f"{len(plats)} platforms"
        verdicts = [r["_v"] for r in rs]
        if len(set(verdicts)) == 1:
            v_text = verdicts[0]
        else:
            counts: dict[str, int] = {}
            for v in sorted(verdicts, key=lambda v: rank[v.split(" (")[0]]):
                counts[v] = counts.get(v, 0) + 1
            v_text = ", ".join(f"{c} {k}" for k, c in counts.items())
        judged = [r for r in rs if r["_v"] != "not testable"]
        vals = []
        for r in judged:
            lo, hi = _fmt3(r.get("our_ci_low")), _fmt3(r.get("our_ci_high"))
            v = _fmt3(r["our_value"]) + (f" [{lo}, {hi}]" if lo and hi else "")
            name = _member(str(r["claim_id"]), g, str(r.get("platform")), len(plats) > 1)
            vals.append(f"{name} {v}" if len(judged) > 1 and name else v)
        if len(judged) <= 1:
            first = judged[0] if judged else rs[0]
            why = short_why(first, first["_v"])
        else:
            inside = sum(bool(_point_in_band(r)) for r in judged)
            worst = min(judged, key=lambda r: rank[r["_v"].split(" (")[0]])
            what = "targets met" if is_target(worst) else "values in band"
            bands = {band_text(r) for r in judged}
            where = f" ({bands.pop()})" if len(bands) == 1 else ""
            reason = ("too few rows per tier" if worst["_v"].startswith("inconclusive (n =")
                      else _GROUP_REASON[worst["_v"]])
            why = f"{inside} of {len(judged)} {what}{where}; {reason}"
        why = " ".join(why.split()[:15])
        out.append({"claim": _cap(label), "platforms": _cap(plat_text), "verdict": _cap(v_text),
                    "ours (95% CI)": _cap("; ".join(vals)), "why": _cap(why),
                    "claim ids": _cap(ids[0] if len(ids) == 1 else f"{g}*"),
                    "_t": any(is_target(r) for r in rs)})
    table = pd.DataFrame(out, columns=[*SUMMARY_COLUMNS, "_t"])
    return table.sort_values("_t", kind="stable").drop(columns="_t").reset_index(drop=True)


def claims_markdown(claims: pd.DataFrame, title: str = "") -> str:
    """``claims_vs_paper.md``: the one-page summary (:func:`summary_table`), then the long
    form (:func:`reviewer_table`) in two sections, the paper's claims and our targets."""
    review = reviewer_table(claims)
    target = review["target"].astype(str) != ""
    summary = summary_table(claims)
    long_cols = [c for c in REVIEW_COLUMNS if c != "source"]
    paper_cols = [c for c in long_cols if c not in ("target", "target source")]
    target_cols = [c for c in long_cols if c != "paper (reported)"]
    return (
        f"# {title}The paper's claims against ours\n\n"
        "A verdict is *supported* when our 95% interval lies inside the claim's tolerance band, "
        "*contradicted* when it lies wholly outside, *inconclusive* otherwise (no interval, or "
        f"fewer than {MIN_GROUP_ROWS} rows per group); *not testable* when we have no value. "
        "Bands and intervals: the long form below.\n\n"
        "## Summary\n\n"
        "One row per claim, its platforms and targets together; *values in band* / *targets "
        "met* count our point values, the verdict needs the interval; *claim ids*: the rows of "
        "the long form it stands for (`prefix*`: every id that starts so).\n\n"
        + markdown_table(summary) + "\n\n"
        "## The paper's claims\n\n"
        "paper (reported): the number the paper reports (arXiv 2608.10506, or HELP's for the "
        "help_ rows), never ours. n counts what the next column says.\n\n"
        + markdown_table(review.loc[~target, paper_cols]) + "\n\n"
        "## Our targets\n\n"
        "Targets this project set itself (the paper states none of them): target and target "
        "source say which and where.\n\n"
        + markdown_table(review.loc[target, target_cols]) + "\n")


def markdown_table(df: pd.DataFrame) -> str:
    """``df`` as a GitHub markdown table (cells as text, ``|`` escaped)."""
    def cell(v: Any) -> str:
        return "" if v is None or (isinstance(v, float) and v != v) else \
            str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(map(cell, df.columns)) + " |",
             "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |"
              for row in df.itertuples(index=False)]
    return "\n".join(lines)


def write_claims(results_dir: str | Path, source: str, rows: pd.DataFrame | Iterable[Mapping],
                 synthetic: bool = False) -> pd.DataFrame:
    """Replace notebook ``source``'s claim rows and rebuild the run's claims tables.

    The rows go to ``<results_dir>/claims/<source>.csv`` (``claims_synthetic/`` for SYNTHETIC
    data), replacing that file whole, with a ``source`` column; then :func:`build_claims`
    rebuilds ``claims.csv`` and the reviewer table from every notebook's file.

    Returns
    -------
    pandas.DataFrame
        The combined claims table as written.
    """
    new = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    new = new.assign(source=source)
    folder = Path(results_dir) / (CLAIMS_DIR + ("_synthetic" if synthetic else ""))
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / f"{source}.csv", lambda fh: new.to_csv(fh, index=False))
    return build_claims(results_dir, synthetic=synthetic)


def build_claims(results_dir: str | Path, synthetic: bool = False) -> pd.DataFrame:
    """Rebuild ``claims.csv`` (every notebook's rows, nothing else) and the reviewer table
    ``claims_vs_paper.csv`` / ``.md`` in ``results_dir`` from ``claims/*.csv`` (for SYNTHETIC
    data ``claims_synthetic/`` into ``claims_synthetic.csv``, ``claims_vs_paper_synthetic.*``).

    Returns
    -------
    pandas.DataFrame
        The combined table (empty when no notebook wrote claims).
    """
    results_dir = Path(results_dir)
    tag = "_synthetic" if synthetic else ""
    files = sorted((results_dir / (CLAIMS_DIR + tag)).glob("*.csv"))
    frames = [pd.read_csv(f) for f in files if f.stat().st_size > 0]
    combined = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=CLAIM_COLUMNS)
    for col in CLAIM_COLUMNS + TARGET_COLUMNS:
        if col not in combined.columns:
            combined[col] = None
    order = COLUMN_ORDER[:3] + TARGET_COLUMNS + COLUMN_ORDER[3:]
    cols = [c for c in order if c in combined.columns]
    cols += [c for c in combined.columns if c not in cols]
    platform = combined["platform"].astype(object).where(combined["platform"].notna(), "")
    key = combined["claim_id"].astype(str) + "\x00" + platform.astype(str)
    combined = combined.loc[~key.duplicated(keep="last"), cols]
    combined = combined.sort_values(list(KEY), kind="stable").reset_index(drop=True)
    atomic_write(results_dir / f"claims{tag}.csv", lambda fh: combined.to_csv(fh, index=False))
    review = reviewer_table(combined)
    atomic_write(results_dir / f"claims_vs_paper{tag}.csv",
                 lambda fh: review.to_csv(fh, index=False))
    title = "SYNTHETIC demo data, not measured: " if synthetic else ""
    atomic_write(results_dir / f"claims_vs_paper{tag}.md",
                 lambda fh: fh.write(claims_markdown(combined, title).encode()))
    return combined


__all__ += ["CLAIMS_DIR", "N_COUNTS", "RULES", "NOISE_FREE", "GROUPS", "MIN_GROUP_ROWS",
            "INTERVAL_METHODS", "REVIEW_COLUMNS", "JUDGED", "SUMMARY_GROUPS", "SUMMARY_COLUMNS",
            "SUMMARY_CELL_MAX", "verdict", "band", "band_text", "reference", "interval_method",
            "is_target", "short_why", "reviewer_table", "summary_table", "summary_group",
            "claims_markdown", "write_claims", "build_claims", "markdown_table"]
