"""Print the README's CARB model tables (markdown) from the CSVs notebook 03 wrote.

Usage (after ``carb reproduce --profile full --only 03_carb``)::

    python scripts/carb_protocol_report.py [--results results/carb] [--platform cpu_epyc_2c]

Nothing is computed here except formatting: every number is read from ``results/carb/``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd


def pm(row: pd.Series, col: str, scale: float = 1.0, digits: int = 3) -> str:
    m, s = row[f"{col}_mean"] * scale, row.get(f"{col}_sd", float("nan")) * scale
    return f"{m:.{digits}f} ± {s:.{digits}f}" if pd.notna(s) else f"{m:.{digits}f}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=Path("results/carb"))
    ap.add_argument("--platform", default=None)
    args = ap.parse_args(argv)
    plats = [args.platform] if args.platform else sorted(
        p.name for p in args.results.iterdir() if p.is_dir())
    for plat in plats:
        d = args.results / plat
        print(f"## {plat}\n")
        s = pd.read_csv(d / "protocol_summary.csv")
        print("| split | target | R² | MAPE % | within ±10 % | Spearman | seeds |")
        print("|---|---|---|---|---|---|---|")
        for _, r in s[(s.part == "test") & (s.model == "carb")].iterrows():
            print(f"| {r.kind} | {r.target} | {pm(r, 'r2', digits=4)} | {pm(r, 'mape_pct', digits=2)}"
                  f" | {pm(r, 'within_10pct', 100, 1)} | {pm(r, 'spearman', digits=4)} | {r.runs} |")
        print("\n| ablation (random split, test) | target | R² | MAPE % | within ±10 % |")
        print("|---|---|---|---|---|")
        a = pd.read_csv(d / "ablation_test.csv")
        for _, r in a.iterrows():
            print(f"| {r.model} | {r.target} | {pm(r, 'r2', digits=4)} | "
                  f"{pm(r, 'mape_pct', digits=2)} | {pm(r, 'within_10pct', 100, 1)} |")
        print("\n| extrapolation split | model | target | held-out values | MAPE % mean / worst"
              " | worst R² |")
        print("|---|---|---|---|---|---|")
        e = pd.read_csv(d / "extrapolation_summary.csv")
        for _, r in e[e.model != "b1_flops"].iterrows():
            print(f"| {r.kind} | {r.model} | {r.target} | {r.splits} | {r.mape_pct_mean:.2f} / "
                  f"{r.mape_pct_max:.2f} ({r.worst_held_out}) | {r.r2_min:.4f} |")
        c = pd.read_csv(d / "coverage_summary.csv")
        print("\n| conformal coverage | target | regime | nominal | coverage | median hi/lo |")
        print("|---|---|---|---|---|---|")
        for _, r in c.iterrows():
            print(f"| {r.kind} | {r.target} | {r.regime} | {r.nominal} | "
                  f"{pm(r, 'coverage', digits=3)} | {pm(r, 'median_hi_over_lo', digits=3)} |")
        ch = pd.read_csv(d / "default_choice.csv")
        print("\nbest on validation:", dict(zip(ch.target, ch.best_on_val, strict=True)),
              "carb rank:", dict(zip(ch.target, ch.carb_rank, strict=True)))
    cmp = args.results / "preset_comparison.csv"
    if cmp.exists():
        print("\n| preset | target | R² | MAPE % | fit s |\n|---|---|---|---|---|")
        for _, r in pd.read_csv(cmp).iterrows():
            print(f"| {r.preset} | {r.target} | {pm(r, 'r2', digits=4)} | "
                  f"{pm(r, 'mape_pct', digits=2)} | {pm(r, 'fit_s', digits=1)} |")
    k = args.results / "base_constants.csv"
    if k.exists():
        print("\n| platform | target | precision | quantity | value [95 % CI] | unit |")
        print("|---|---|---|---|---|---|")
        for _, r in pd.read_csv(k).iterrows():
            print(f"| {r.platform} | {r.target} | {r.precision} | {r.quantity} | "
                  f"{r.value:.4g} [{r.value_lo:.4g}, {r.value_hi:.4g}] | {r.unit} |")


if __name__ == "__main__":
    main()
