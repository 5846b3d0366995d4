"""The ``carb:field`` block of docs/transfer.md (:mod:`carb_lib.app.readme`): every run of
``benchmarks/field_check.py`` (``results/benchmarks/field_<platform>.csv``), one row per run:
how right the default path was on the machine it ran on, beside the same-hour audit and the
re-measurement noise of the run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def _pct(v: float) -> str:
    return "–" if pd.isna(v) else f"{v:.1f} %"


def _share(v: float) -> str:
    return "–" if pd.isna(v) else f"{100 * v:.0f} %"


def field_block(results: Path) -> str:
    """Two markdown tables (host speed and calibration; prediction error by path) from every
    ``results/benchmarks/field_*.csv`` except the per-config ``*_configs.csv``."""
    files = sorted(p for p in (Path(results) / "benchmarks").glob("field_*.csv")
                   if not p.name.endswith("_configs.csv"))
    if not files:
        return "*(no field check yet: run `python benchmarks/field_check.py`)*\n"
    runs = pd.concat([pd.read_csv(p) for p in files], ignore_index=True)
    head = ["| CPU kind (platform) | date (UTC) | field rows | audit: this host / stored "
            "(95 % CI) | host factor (n timings) | factor inside the audit's CI | calibration "
            "as timed before (torch's default threads, heap kept) |",
            "|---|---|---|---|---|---|---|"]
    err = ["| CPU kind (platform) | uncalibrated | calibrated | audit's factor by hand | "
           "fitted model alone (no transfer model) | calibration as timed before | "
           "re-measurement noise (rows timed twice) | peak memory exact |",
           "|---|---|---|---|---|---|---|---|"]
    for _, r in runs.iterrows():
        kind = f"{r['cpu_id'].split(' | ')[0]} (`{r['platform']}`)"
        applied = ("band factors applied" if bool(r["host_factor_per_band"]) else "applied") \
            if bool(r["host_factor_applied"]) else "not applied"
        head.append(
            f"| {kind} | {r['date_utc']} | {int(r['n_field'])} | {r['audit_median_ratio']:.3f} "
            f"[{r['audit_ratio_lo']:.3f}, {r['audit_ratio_hi']:.3f}] (n = {int(r['audit_n'])}) "
            f"| {r['host_factor']:.3f}, {applied} ({int(r['host_factor_n'])}) "
            f"| {'yes' if bool(r['factor_inside_audit_interval']) else 'no'} "
            f"| {r['legacy_host_factor']:.3f}, "
            f"{'applied' if bool(r['legacy_applied']) else 'not applied'} |")

        def cell(v: str, r: pd.Series = r) -> str:
            return (f"{_pct(r[f'{v}_median_abs_log_ratio_pct'])} "
                    f"({_share(r[f'{v}_within_10pct'])} within ±10 %)")
        err.append(
            f"| {kind} | {cell('plain')}, interval coverage "
            f"{_share(r['plain_interval_coverage'])} | {cell('calibrated')}, interval coverage "
            f"{_share(r['calibrated_interval_coverage'])} | {cell('audit_factor')} | "
            f"{cell('fitted_model_only')} | {cell('legacy_calibration')} | "
            f"{_pct(r['noise_median_abs_log_ratio_pct'])} (n = {int(r['noise_n'])}) | "
            f"{int(r['memory_exact_rows'])} of {int(r['n_field'])} |")
    src = ", ".join(f"`results/benchmarks/{p.name}`" for p in files)
    return ("\n".join(head) + "\n\nLatency, median |log(measured / predicted)| (share within "
            "±10 %):\n\n" + "\n".join(err) + f"\n\n*Source: {src} "
            "(`python benchmarks/field_check.py`).*\n")
