"""The ``carb:zoo`` block of the docs (:mod:`carb_lib.app.readme`): notebook 07's scores of the
measured torchvision zoo, beside the re-measurement ceiling."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

_METHODS = {"leave_network_out": "network left out of the fit (CARB, shared features)",
            "zero_zoo": "no zoo network in the fit (CARB, design space only)",
            "flops_only": "baseline: FLOPs only",
            "operators_summed": "baseline: operators timed alone, summed",
            "remeasurement": "a second measurement (`carb audit`): the ceiling"}


def _pct(v: float) -> str:
    return "–" if pd.isna(v) else f"{100 * v:.1f} %"


def zoo_block(results: Path) -> str:
    """A markdown table: per method, latency median error, share within ±10 %, Spearman within
    batch, and the share of peaks exact to the byte (``results/zoo/scores.csv`` and
    ``remeasurement_ceiling.csv``, written by notebook 07)."""
    d = Path(results) / "zoo"
    path = d / "scores.csv"
    if not path.is_file():
        return "*(no zoo scores: run `make reproduce` with measured zoo rows)*\n"
    s = pd.read_csv(path)
    s = s[s["kind"] == "all"]
    ceiling = d / "remeasurement_ceiling.csv"
    if ceiling.is_file():
        s = pd.concat([s, pd.read_csv(ceiling)], ignore_index=True)
    lat = s[s["target"] == "latency_ms"].set_index("method")
    mem = s[s["target"] == "peak_mem_mib"].set_index("method")
    rows = ["| method | rows | latency median error | latency within ±10 % "
            "| latency Spearman within batch (lowest) | peak memory exact to the byte |",
            "|---|---|---|---|---|---|"]
    for m, label in _METHODS.items():
        if m not in lat.index:
            continue
        r = lat.loc[m]
        exact = mem.loc[m, "exact_share"] if m in mem.index else float("nan")
        rows.append(f"| {label} | {int(r['n'])} | {r['median_ape_pct']:.1f} % "
                    f"| {_pct(r['within_10pct'])} | {r['spearman_within_batch']:.3f} "
                    f"({r['spearman_within_batch_min']:.3f}) | {_pct(exact)} |")
    return "\n".join(rows) + "\n"
