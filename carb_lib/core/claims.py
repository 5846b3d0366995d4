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


__all__ = ["CLAIM_COLUMNS", "OPTIONAL_CLAIM_COLUMNS", "COLUMN_ORDER", "KEY"]


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
}
#: How a claim is judged (by claim id prefix): ``("at_least", margin)``: ours >= paper - margin;
#: ``("at_most", margin)``: ours <= paper + margin; ``("about", rel)``: our CI holds the paper's
#: value, or without a CI ours is within ``rel`` of it (relative).
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
    "transfer_energy_rank_rho": ("at_least", 0.02),
    "divergence_": ("about", 0.25),
    "fp16_": ("about", 0.25),
    "small_batch_": ("about", 0.25),
    "transfer_slope_": ("about", 0.25),
}
#: Columns of the reviewer table (:func:`reviewer_table`).
REVIEW_COLUMNS: list[str] = ["claim", "paper (reported)", "ours", "ours 95% CI", "n", "n counts",
                             "platform", "verdict", "why", "claim_id", "source"]


def _lookup(table: Mapping[str, Any], claim_id: str, default: Any = None) -> Any:
    hits = [k for k in table if str(claim_id).startswith(k)]
    return table[max(hits, key=len)] if hits else default


def _num(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return None if v != v else v  # NaN -> None


def verdict(row: Mapping[str, Any]) -> str:
    """``supported``, ``not supported`` or ``not testable`` for one claims row (see
    :data:`RULES`; a row without a paper value or a rule is ``not testable``)."""
    testable = str(row.get("testable")).strip().lower() in ("true", "1", "1.0")
    ours, paper = _num(row.get("our_value")), _num(row.get("paper_value"))
    rule = _lookup(RULES, row.get("claim_id", ""))
    if not testable or ours is None or paper is None or rule is None:
        return "not testable"
    kind, margin = rule
    if kind == "at_least":
        ok = ours >= paper - margin
    elif kind == "at_most":
        ok = ours <= paper + margin
    else:
        lo, hi = _num(row.get("our_ci_low")), _num(row.get("our_ci_high"))
        ok = lo <= paper <= hi if lo is not None and hi is not None \
            else abs(ours / paper - 1) <= margin
    return "supported" if ok else "not supported"


def _why(row: Mapping[str, Any], judged: str) -> str:
    reason = row.get("reason")
    reason = "" if reason is None or (isinstance(reason, float) and reason != reason) \
        else str(reason).strip()
    if judged != "not testable":
        kind, margin = _lookup(RULES, row["claim_id"])
        rule = {"at_least": f"supported if ours >= paper - {margin:g}",
                "at_most": f"supported if ours <= paper + {margin:g}",
                "about": f"supported if our CI holds the paper's value (no CI: within "
                         f"{margin:.0%})"}[kind]
        return f"{rule}; {reason}" if reason else rule
    if _num(row.get("paper_value")) is None:
        return "the paper reports no number (ours only)" + (f"; {reason}" if reason else "")
    if str(row.get("testable")).strip().lower() in ("true", "1", "1.0") \
            and _lookup(RULES, row.get("claim_id", "")) is None:
        return "no rule to judge it" + (f"; {reason}" if reason else "")
    return reason or "not computable on this data"


def _fmt(value: Any) -> str:
    v = _num(value)
    if v is None:
        return ""
    return f"{v:.4g}" if abs(v) < 1e5 else f"{v:,.0f}"


def reviewer_table(claims: pd.DataFrame) -> pd.DataFrame:
    """The "paper claim vs ours" table of a claims table (:data:`REVIEW_COLUMNS`).

    ``paper (reported)`` is the paper's reported number (never ours); ``ours`` our value and
    ``ours 95% CI`` its interval where the notebook gives one; ``n`` counts what ``n counts``
    says: measured rows our value is computed from, unless another unit is named (HELP
    devices, device pairs, screened candidates); ``verdict`` is supported / not supported /
    not testable, ``why`` gives the rule or the reason.
    """
    rows = []
    for r in claims.to_dict("records"):
        judged = verdict(r)
        lo, hi = _fmt(r.get("our_ci_low")), _fmt(r.get("our_ci_high"))
        n = _num(r.get("n"))
        rows.append({
            "claim": r.get("claim"),
            "paper (reported)": _fmt(r.get("paper_value")),
            "ours": _fmt(r.get("our_value")) if judged != "not testable"
            or _num(r.get("paper_value")) is None else "",
            "ours 95% CI": f"[{lo}, {hi}]" if lo and hi else "",
            "n": "" if n is None else int(n),
            "n counts": _lookup(N_COUNTS, r.get("claim_id", ""), "measured rows"),
            "platform": r.get("platform"),
            "verdict": judged,
            "why": _why(r, judged),
            "claim_id": r.get("claim_id"),
            "source": r.get("source"),
        })
    order = {"supported": 0, "not supported": 1, "not testable": 2}
    out = pd.DataFrame(rows, columns=REVIEW_COLUMNS)
    key = out["verdict"].map(order)
    return out.assign(_k=key).sort_values(["_k", "claim_id", "platform"], kind="stable") \
        .drop(columns="_k").reset_index(drop=True)


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
    for col in CLAIM_COLUMNS:
        if col not in combined.columns:
            combined[col] = None
    cols = [c for c in COLUMN_ORDER if c in combined.columns]
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
    md = (f"# {title}The paper's claims against ours\n\n"
          "paper (reported): the number the paper reports (arXiv 2608.10506, or HELP's for the "
          "help_ rows), never ours. n counts what the next column says.\n\n"
          + markdown_table(review.drop(columns=["claim_id", "source"])) + "\n")
    atomic_write(results_dir / f"claims_vs_paper{tag}.md", lambda fh: fh.write(md.encode()))
    return combined


__all__ += ["CLAIMS_DIR", "N_COUNTS", "RULES", "REVIEW_COLUMNS", "verdict", "reviewer_table",
            "write_claims", "build_claims", "markdown_table"]
