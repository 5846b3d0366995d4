"""The GPU blocks of docs/gpu.md and docs/memory.md (:mod:`carb_lib.app.readme`), from notebook
05's run on the GPU rows: the paper's energy claims judged on every family's rows
(:mod:`carb_lib.screening.energy_claims`), energy as power x time beside CARB on energy, the
energy error beside the energy re-measurement noise of the same window length
(``gpu-energy-model``), and the GPU's peak memory against the allocator model
(``gpu-memory``, :mod:`carb_lib.evaluation.gpu_memory`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from carb_lib.app.readme_common import _read, _source
from carb_lib.core.claims import band_text, verdict

__all__ = ["gpu_energy_model", "gpu_memory"]

#: The GPU whose rows the full profile runs notebooks 03-05 on.
GPU_PLATFORM = "gpu_nvidia_h200"


def _ci(mean: float, low: float, high: float, fmt: str = ".3g") -> str:
    if pd.isna(low) or pd.isna(high):
        return f"**{mean:{fmt}}**"
    return f"**{mean:{fmt}}** [{low:{fmt}}, {high:{fmt}}]"


def gpu_energy_model(results: Path) -> str:
    """Three tables from the full profile's run of notebook 05 on the GPU rows."""
    from carb_lib.screening.energy_claims import summary

    claims = _read(results, "claims.csv")
    c = claims[(claims["platform"] == GPU_PLATFORM)
               & claims["claim_id"].str.endswith("_all_families")]
    out = [f"| claim (paper) | paper (reported) | ours on `{GPU_PLATFORM}`, every family [95 % "
           "CI] | n (test rows) | verdict (band) |", "|---|---|---|---|---|"]
    for r in c.to_dict("records"):
        if not bool(r["testable"]) or pd.isna(r["our_value"]):
            out.append(f"| {r['claim']} | {r['paper_value']:.3g} | not testable: {r['reason']} "
                       "| – | – |")
            continue
        out.append(f"| {r['claim']} | {r['paper_value']:.3g} | "
                   f"{_ci(r['our_value'], r['our_ci_low'], r['our_ci_high'])} | {int(r['n'])} | "
                   f"{verdict(r)}; band: {band_text(r)} |")
    rel_scores = f"{GPU_PLATFORM}/cross_family/energy_scores.csv"
    s = summary(_read(results, rel_scores)).set_index("measure")
    out += ["", "Energy as power x time (CARB's latency times a log-linear model of the rows' "
            "average power) against CARB fitted on energy, and B2 (measured latency alone), "
            "on the same splits:", "",
            "| energy model | R² [95 % CI] | MAPE % [95 % CI] |", "|---|---|---|"]
    for name, r2_key, mape_key in (
            ("CARB on energy", "carb_r2_energy_j", "carb_mape_energy_j"),
            ("predicted latency x predicted power", "power_x_latency_r2_energy_j",
             "power_x_latency_mape_energy_j"),
            ("B2: linear in measured latency", "b2_latency_proxy_r2_energy_j", None)):
        if r2_key not in s.index:
            continue
        a = s.loc[r2_key]
        m = "–" if mape_key is None or mape_key not in s.index else \
            _ci(s.loc[mape_key, "mean"], s.loc[mape_key, "ci_low"], s.loc[mape_key, "ci_high"],
                ".1f")
        out.append(f"| {name} | {_ci(a['mean'], a['ci_low'], a['ci_high'])} | {m} |")
    rel_noise = f"{GPU_PLATFORM}/cross_family/energy_vs_noise.csv"
    if (results / rel_noise).exists():
        v = _read(results, rel_noise)
        out += ["", "CARB's energy MAPE by the rows' window policy, beside the energy "
                "re-measurement noise of the same window (every pair of repeats of a config "
                "scored as a prediction of the other; a perfect model scores about 1/√2 of it):",
                "", "| window policy | CARB energy MAPE % [95 % CI] (test rows per split) | "
                "re-measurement MAPE % [95 % CI] (configs) | ratio |", "|---|---|---|---|"]
        for r in v.itertuples():
            noise = "no noise file" if pd.isna(r.noise_mape_pct) else \
                f"{_ci(r.noise_mape_pct, r.noise_ci_low, r.noise_ci_high, '.1f')} " \
                f"({int(r.noise_n_configs)})"
            ratio = "–" if pd.isna(r.model_over_noise) else f"{r.model_over_noise:.2f}"
            out.append(f"| {r.window_policy_s:g} s | "
                       f"{_ci(r.model_mape_pct, r.model_ci_low, r.model_ci_high, '.1f')} "
                       f"({int(r.model_n_test)}) | {noise} | {ratio} |")
        return "\n".join(out) + "\n" + _source("claims.csv", rel_scores, rel_noise)
    return "\n".join(out) + "\n" + _source("claims.csv", rel_scores)


def gpu_memory(results: Path) -> str:
    """The measured GPU peak against the CPU allocator model, per family and precision."""
    rel = f"{GPU_PLATFORM}/cross_family/gpu_memory_gap.csv"
    g = _read(results, rel)
    out = ["| family | precision | rows | measured / model, median [p10, p90] | measured - "
           "model, median MiB | reserved / allocated, median |", "|---|---|---|---|---|---|"]
    for r in g.itertuples():
        out.append(f"| {r.family} | {r.precision} | {r.n} | {r.measured_over_model_median:.2f} "
                   f"[{r.measured_over_model_p10:.2f}, {r.measured_over_model_p90:.2f}] | "
                   f"{r.gap_mib_median:.1f} | {r.reserved_over_allocated_median:.2f} |")
    return "\n".join(out) + "\n" + _source(rel)
