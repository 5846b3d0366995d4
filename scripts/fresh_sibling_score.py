"""Score pre-registration J (``results/cross_family/siblings/fresh_PREREGISTRATION.md``).

Reads ``DIR/summary.csv`` (``scripts/fresh_sibling_test.py``) and ``DIR/pass_rows.parquet``
(every pass's rows), writes ``DIR/halves.txt`` (the halves check ``carb merge`` logs, from
:func:`carb_lib.passes.pass_agreement`) and ``DIR/scores.txt`` (J1-J8 as written before the
campaign). ``python scripts/fresh_sibling_score.py results/cross_family/siblings/fresh_cpu_epyc_zen5_2c``
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from carb_lib.passes import pass_agreement, read_passes

L, M = "latency_ms", "peak_mem_mib"
SOURCES = ("resnet", "resnet+siblings", "everything")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", type=Path)
    d = ap.parse_args().dir
    frames = read_passes(d / "pass_rows.parquet")
    a, b = pass_agreement(frames), pass_agreement(frames, interleaved=True)
    (d / "halves.txt").write_text(
        "# from pass_rows.parquet with carb_lib.passes.pass_agreement (the halves check carb "
        "merge logs)\n"
        f"halves (passes 1-{a.halves[0]} vs {a.halves[0] + 1}-{a.n_passes}): median |log ratio| "
        f"{100 * a.median_abs_log_ratio:.1f} %, within 5 % {100 * a.within_5:.0f} %, within 10 % "
        f"{100 * a.within_10:.0f} %\n"
        f"even vs odd passes: median |log ratio| {100 * b.median_abs_log_ratio:.1f} %, within 10 % "
        f"{100 * b.within_10:.0f} %\n"
        f"pass speeds (1 = fastest): {' '.join(f'{x:.2f}' for x in a.pass_speed)}\n")
    s = pd.read_csv(d / "summary.csv")

    def g(fam: str, tgt: str, src: str, model: str, col: str = "mape_pct_mean") -> float:
        r = s[(s.family == fam) & (s.target == tgt) & (s.source == src) & (s.model == model)]
        if len(r) != 1:
            raise SystemExit(f"{fam} / {tgt} / {src} / {model}: {len(r)} rows in summary.csv")
        return float(r[col].iloc[0])

    e, m = "efficientnet", "mobilenetv2"
    sib = {f: g(f, L, "resnet+siblings", "offset") for f in (e, m)}
    base = {f: g(f, L, "resnet", "offset") for f in (e, m)}
    every = {f: g(f, L, "everything", "offset") for f in (e, m)}
    rho = {f: g(f, L, "resnet+siblings", "offset", "spearman_mean") for f in (e, m)}
    mem = max(g(f, M, src, "zero_shot") for f in (e, m) for src in SOURCES)
    halves = 100 * a.median_abs_log_ratio
    checks = [
        ("J1", "efficientnet: resnet+siblings >= 2 points below resnet",
         base[e] - sib[e] >= 2, f"{base[e]:.2f} -> {sib[e]:.2f}"),
        ("J2", "mobilenetv2: resnet+siblings below resnet", sib[m] < base[m],
         f"{base[m]:.2f} -> {sib[m]:.2f}"),
        ("J3", "efficientnet: resnet+siblings <= 12 %", sib[e] <= 12,
         f"{sib[e]:.2f} ± {g(e, L, 'resnet+siblings', 'offset', 'mape_pct_sd'):.2f}"),
        ("J4", "mobilenetv2: resnet+siblings <= 12 %", sib[m] <= 12,
         f"{sib[m]:.2f} ± {g(m, L, 'resnet+siblings', 'offset', 'mape_pct_sd'):.2f}"),
        ("J5", "Spearman >= 0.95 for both with resnet+siblings", min(rho.values()) >= 0.95,
         f"{rho[e]:.3f} / {rho[m]:.3f}"),
        ("J6", "memory zero-shot MAPE <= 1 % for both with every source", mem <= 1,
         f"max {mem:.2g} %"),
        ("J7", "halves check: median |log ratio| <= 6 %", halves <= 6, f"{halves:.1f} %"),
        ("J8", "everything <= resnet+siblings for both", all(every[f] <= sib[f] for f in (e, m)),
         f"{every[e]:.2f} / {every[m]:.2f}"),
    ]
    lines = ["# pre-registration J judged from summary.csv and halves.txt (latency: offset, "
             "k = 10, mean over 5 seeds)"]
    lines += [f"{k} {'HELD' if ok else 'MISSED'}: {t} ({v})" for k, t, ok, v in checks]
    (d / "scores.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
