"""The transfer blocks of the docs (:mod:`carb_lib.app.readme`): the HELP comparison
(``fewshot``, ``fewshot-batches``) and the host calibration measured on stored campaigns
(``host-calibration``), from ``results/transfer/``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from carb_lib.app.readme_common import _read, _source

__all__ = ["fewshot", "fewshot_batches", "host_calibration"]


def _fewshot_rows(h: pd.DataFrame) -> list[str]:
    out = []
    for _, r in h.iterrows():
        bold = "**" if r["group"] == "mean over devices" else ""
        helped = "not reported" if pd.isna(r["help_reported"]) else f"{r['help_reported']:.3f}"
        b = r.get("batch")
        label = r["group"] if pd.isna(b) or "batch" in str(r["group"]) else \
            f"{r['group']} (batch {int(b)})"
        out.append(f"| {label} | {bold}{r['ours']:.3f}{bold} | {helped} |")
    return out


def _fewshot_header(h: pd.DataFrame) -> list[str]:
    chosen = "ours" if "ours_default" not in h.columns else \
        "ours (method chosen on the other devices)"
    return [f"| k = 10, Spearman | {chosen} | HELP (reported, on its own unseen devices) |",
            "|---|---|---|"]


def fewshot(results: Path) -> str:
    h = _read(results, "transfer/help_comparison.csv")
    main = h[~h["group"].str.contains("batch")]
    return "\n".join(_fewshot_header(h) + _fewshot_rows(main)) + "\n" + \
        _source("transfer/help_comparison.csv")


def fewshot_batches(results: Path) -> str:
    h = _read(results, "transfer/help_comparison.csv")
    rest = h[h["group"].str.contains("batch")]
    methods = sorted({str(m).split(": ")[-1] for m in h.get("our_method", pd.Series(dtype=str))
                      .dropna() if str(m).startswith("chosen")})
    note = (f"\nFew-shot methods chosen on the other devices (over every target): "
            f"{', '.join(methods)}.\n" if methods else "")
    return "\n".join(_fewshot_header(h) + _fewshot_rows(rest)) + "\n" + note + \
        _source("transfer/help_comparison.csv")


def host_calibration(results: Path) -> str:
    s = _read(results, "transfer/host_calibration_summary.csv").set_index("calibration")
    names = {"none": "none", "ladder": "the model's ladder (`--calibrate`)",
             "reference": "3 reference rows of the other campaign",
             "configs": "5 queried configs (`--calibrate-on-query 5`)"}
    out = ["| calibration | median APE % | within ±10 % | interval coverage (nominal "
           f"{s['nominal'].iloc[0]:.0%}) | factor applied | change of median APE, pp (95 % CI "
           "over pairs) |", "|---|---|---|---|---|---|"]
    for cal, r in s.iterrows():
        change = ("" if cal == "none" else f"{r['ape_change_pp']:+.1f} "
                  f"[{r['ape_change_ci_low']:+.1f}, {r['ape_change_ci_high']:+.1f}]")
        out.append(f"| {names.get(cal, cal)} | {r['median_ape_pct']:.1f} | "
                   f"{r['within_10pct']:.0%} | {r['coverage']:.0%} | "
                   f"{'' if cal == 'none' else format(r['applied_share'], '.0%')} | {change} |")
    n = s["n_pairs"].iloc[0]
    return ("\n".join(out) + f"\n\nMean over {n} ordered campaign pairs, "
            f"{int(s['n_seeds'].iloc[0])} model seeds each.\n"
            + _source("transfer/host_calibration_summary.csv"))
