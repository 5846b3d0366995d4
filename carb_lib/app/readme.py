"""Result tables of README.md and docs/, written from ``results/`` so that they cannot drift.

Each generated block sits between ``<!-- carb:NAME -->`` and ``<!-- /carb:NAME -->`` in one of
the pages of :data:`PAGES` (README.md and the topic pages under ``docs/``); :data:`BLOCKS` maps
every NAME to a function that renders it from the files in ``results/`` (the tables
``make reproduce`` and ``make bench`` write; every number is traceable to the file named under
the block). Every block appears on at least one page. ``carb reproduce --profile full``
rewrites the blocks after the run; ``carb readme`` does it on demand and ``carb readme --check``
(and the test suite) fails when a page differs from what ``results/`` gives. The ``cli`` block
is the command reference of ``docs/cli.md``, written from the command line's own definitions.

Paper values are the *reported* ones recorded in ``results/claims.csv`` (column
``paper_value``), never ours.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from carb_lib.app.readme_allocator import allocator_precision_block
from carb_lib.app.readme_cli import cli_reference
from carb_lib.app.readme_common import ReadmeError, _read, _source
from carb_lib.app.readme_energy import gpu_energy_model, gpu_memory
from carb_lib.app.readme_field import field_block
from carb_lib.app.readme_platforms import platforms_block, platforms_splits_block
from carb_lib.app.readme_transfer import fewshot, fewshot_batches, host_calibration
from carb_lib.app.readme_zoo import ZOO_BLOCKS
from carb_lib.core.claims import band_text, verdict
from carb_lib.core.vocab import TARGET_SHORT

MARK = re.compile(r"(<!-- carb:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /carb:(?P=name) -->)",
                  re.S)




#: A MAPE (%) below this is floating-point rounding, not model error (a ratio of two is noise).
ROUNDING_MAPE_PCT = 1e-6


def _x(v: float, digits: int = 1) -> str:
    return f"x{v:.{digits}f}"


def _claim(claims: pd.DataFrame, cid: str, platform: str | None = None) -> pd.Series:
    c = claims[claims["claim_id"] == cid]
    if platform is not None and len(c[c["platform"] == platform]):
        c = c[c["platform"] == platform]
    if c.empty:
        raise ReadmeError(f"claim {cid!r} is not in results/claims.csv")
    return c.iloc[0]


def _paper(claims: pd.DataFrame, cid: str, fmt: str = "{:g}") -> str:
    v = _claim(claims, cid)["paper_value"]
    return "–" if pd.isna(v) else fmt.format(float(v))


# --------------------------------------------------------------------------- blocks
def static_features_bench(results: Path) -> str:
    df = _read(results, "benchmarks/static_features.csv")
    r = df.loc[df["n_configs"].idxmax()]
    return (f"**Benchmark** (`benchmarks/bench_static_features.py`, one core, cold "
            f"per-architecture cache, median of {int(r['repeats'])} repeats): "
            f"{int(r['n_configs']):,} configurations of an extended space (10 resolutions, 18 "
            f"batch sizes) in {r['median_s']:.2f} s (fastest repeat {r['min_s']:.2f} s) — "
            f"**{r['configs_per_s'] / 1e6:.2f} M configs/s** (target ≥ 1 M/s).\n"
            + _source("benchmarks/static_features.csv"))


def small_batch_headline(results: Path, p: str, roofline: float, kernel: float) -> str:
    """The headline's small-batch line: the kernel law with no operator timed at a held-out batch
    (``carb/<p>/kernel_law_strict.csv``, notebook 03) in bold, the one whose operators were
    timed at every batch beside it."""
    strict = _read(results, f"carb/{p}/kernel_law_strict.csv")
    r2 = strict[strict["split"] == "batch_small"].groupby("law")["r2"].mean()
    return (f"| small batches held out, latency R² (`{p}`) | roofline law {roofline:.3f}, "
            f"kernel law **{r2['kernel_strict']:.3f}** with no operator timed at a held-out "
            f"batch ({kernel:.3f} with operators timed at every batch) | – |")


def alloc_headline(alloc: pd.DataFrame, exact: int, rows: int, results: Path) -> str:
    """The headline's allocator line: distinct (platform, config) pairs where the check counted
    them (``pairs`` in ``allocator_exact_by_precision.csv``), else measured rows."""
    err = f"largest error {alloc['max_rel_err_pct'].max():.2f} %"
    path = results / "benchmarks" / "allocator_exact_by_precision.csv"
    prec = pd.read_csv(path) if path.exists() else pd.DataFrame()
    if "pairs" in prec.columns and prec["pairs"].notna().all():
        return (f"| peak memory, allocator model | exact to the byte on "
                f"**{int(prec['exact_pairs'].sum()):,} of {int(prec['pairs'].sum()):,}** distinct "
                f"(platform, config) pairs ({rows:,} measured rows in {len(alloc)} files; {err}) "
                "| – |")
    return (f"| peak memory, allocator model | exact to the byte on **{exact:,} of {rows:,}** "
            f"measured rows ({len(alloc)} files; {err}) | – |")


def allocator_check(results: Path) -> str:
    """The allocator model against every measured CPU row (``benchmarks/check_allocator.py``)."""
    df = _read(results, "benchmarks/allocator_check.csv")
    out = ["| dataset | families | rows | allocator variant learned | exact to the byte | "
           "largest error | exact with 8 / 16 / 16+fp16 | MAPE of the byte estimate | "
           "meta simulation exact | s per simulated row |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in df.iterrows():
        out.append(f"| `{r['dataset']}` | {r['families'].replace(',', ', ')} | {int(r['rows']):,} | "
                   f"{r['law_block']} | "
                   f"**{int(r['exact_rows']):,}** ({100 * r['exact_share']:.1f} %) | "
                   f"{_num(r['max_rel_err_pct'], 2)} % | {int(r['exact_rows_block8']):,} / "
                   f"{int(r['exact_rows_block16']):,} / "
                   f"{int(r['exact_rows_block16+fp16']):,} | "
                   f"{r['bytes_estimate_mape_pct']:.1f} % | "
                   f"{int(r['sim_exact_rows'])} / {int(r['sim_rows'])} | "
                   f"{r['sim_s_per_row']:.2f} |")
    out += ["", "The variant is oneDNN's channel block (8 channels on AVX2, 16 on AVX-512), "
            "and `16+fp16` where oneDNN also runs the fp16 convolutions (AVX512-FP16: the "
            "Intel Xeon); the memory base law learns it from each dataset's rows "
            "(`BaseLaw.alloc_block`)."]
    srcs = ["benchmarks/allocator_check.csv"]
    speed = results / "benchmarks" / "allocator_speed.csv"
    if speed.exists():
        sp = pd.read_csv(speed)
        parts = [f"{r['configs']}: {int(r['n_configs']):,} configs in {r['median_s']:.2f} s"
                 for _, r in sp.iterrows()]
        out += ["", "Static features with the allocator walk (one core, cold caches, median of "
                f"{int(sp['repeats'].iloc[0])}): " + "; ".join(parts) + "."]
        srcs.append("benchmarks/allocator_speed.csv")
    return "\n".join(out) + "\n" + _source(*srcs)


def characterization(results: Path) -> str:
    div = _read(results, "characterization/divergence.csv")
    eff = _read(results, "characterization/paired_effects.csv")
    scal = _read(results, "characterization/scaling.csv")
    claims = _read(results, "claims.csv")
    plats = sorted(div.loc[div["testable"].astype(bool), "platform"].astype(str).unique())
    out = []
    for p in plats:
        d = div[div["platform"] == p].set_index("quantity")
        e = eff[eff["platform"] == p].set_index(["effect", "metric"])

        def growth(q, d=d):
            r = d.loc[q]
            if not bool(r["testable"]):
                return "not testable (no energy counter)" if q.startswith("energy") else \
                    "not testable"
            return (f"**{_x(r['growth'])}** [{r['ci_low']:.1f}, {r['ci_high']:.1f}] "
                    f"(n = {int(r['n_low'])} low + {int(r['n_high'])} high)")

        def effect(key, bold=False, e=e):
            if key not in e.index or not bool(e.loc[key, "testable"]):
                return "not testable"
            r = e.loc[key]
            v = _x(r["median_ratio"], 2)
            return (f"{'**' + v + '**' if bold else v} [{r['ci_low']:.2f}, {r['ci_high']:.2f}] "
                    f"({int(r['n_pairs']):,} pairs)")

        s = scal[(scal["platform"] == p) & (scal["target"] == "latency_ms")
                 & (scal["x"] == "flops") & (scal["group_by"] == "all")].iloc[0]
        energy_note = ("not testable (no energy counter)" if not bool(d.loc["energy_j", "testable"])
                       else f"{growth('energy_j')} / {growth('energy_over_latency')}")
        out += [f"| finding ({p}, {int(s['n']):,} ok rows) | ours | paper (reported, GPUs) |",
                "|---|---|---|",
                f"| latency growth, low → high demand (median, bootstrap 95 % CI) | "
                f"{growth('latency_ms')} | {_paper(claims, 'divergence_latency_growth', 'x{:.1f}')} |",
                f"| peak-memory growth, low → high demand | {growth('peak_mem_mib')} | – |",
                f"| energy growth / energy vs latency divergence | {energy_note} | "
                f"{_paper(claims, 'divergence_energy_growth', 'x{:.1f}')} / "
                f"{_paper(claims, 'divergence_energy_vs_latency', 'x{:.1f}')} |",
                f"| fp32 / fp16 peak memory (median ratio) | "
                f"{effect(('precision', 'peak_mem_mib'), True)} | "
                f"{_paper(claims, 'fp16_memory_ratio', 'x{:.1f}')} |",
                f"| fp32 / fp16 latency (< 1: fp16 slower) | {effect(('precision', 'latency_ms'))} | – |",
                f"| batch 1 vs batch 256, ms per GFLOP | "
                f"{effect(('batch', 'latency_ms_per_gflop'))} | J/GFLOP "
                f"{_paper(claims, 'small_batch_j_per_gflop', 'x{:.1f}')} (energy) |",
                f"| latency exponent vs FLOPs (pooled, HC3 95 % CI) | {s['exponent']:.2f} "
                f"[{s['ci_low']:.2f}, {s['ci_high']:.2f}] (n = {int(s['n']):,}) | – |", ""]
    return "\n".join(out) + _source("characterization/divergence.csv",
                                    "characterization/paired_effects.csv",
                                    "characterization/scaling.csv", "claims.csv")


def _num(v: float, digits: int) -> str:
    """``v`` with ``digits`` decimals, or in scientific notation when that would show 0."""
    if pd.notna(v) and v != 0 and abs(v) < 0.5 * 10.0**-digits:
        return f"{v:.1e}"
    return f"{v:.{digits}f}"


def _pm(r: pd.Series, col: str, scale: float = 1.0, digits: int = 3) -> str:
    m, sd = r[f"{col}_mean"] * scale, r.get(f"{col}_sd", float("nan")) * scale
    return f"{_num(m, digits)} ± {_num(sd, digits)}" if pd.notna(sd) else _num(m, digits)


def _noise_floor_table(results: Path, rel: str, names: dict[str, str],
                       sources: list[str]) -> list[str]:
    """Lines of the model-vs-re-measurement table (``<rel>/remeasurement_noise.csv``), if written."""
    if not (results / rel / "remeasurement_noise.csv").exists():
        return []
    f = _read(results, f"{rel}/remeasurement_noise.csv")
    sources.append(f"{rel}/remeasurement_noise.csv")
    timed = f["target"] != "peak_mem_mib"  # memory re-measures exactly: show it only alone
    f = f[timed] if timed.any() else f
    out = ["", "Against the re-measurement noise: the audit's re-measurement of stored rows (fresh "
           "processes, later) scored as a prediction of the stored value, beside CARB's test "
           f"part ({f['kind'].iloc[0]} split, mean ± sd over seeds); ratio = CARB MAPE / "
           "re-measurement MAPE:", "",
           "| target | subset | audit rows | re-measurement MAPE % | CARB MAPE % | ratio | "
           "re-measurement within ±10 % | CARB within ±10 % | re-measurement R² | CARB R² |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in f.iterrows():
        out.append(f"| {names.get(r['target'], r['target'])} | {r['subset']} | {r['n_audit']} | "
                   f"{_num(r['mape_pct_remeasure'], 2)} | {_pm(r, 'mape_pct', digits=2)} | "
                   f"{_num(r['mape_ratio'], 2)} | {100 * r['within_10pct_remeasure']:.1f} % | "
                   f"{_pm(r, 'within_10pct', 100, 1)} % | {r['r2_remeasure']:.4f} | "
                   f"{_pm(r, 'r2', digits=4)} |")
    return out


def carb_metrics(results: Path) -> str:
    """The model tables from the evaluation protocol of notebook 03 (one block per platform)."""
    names = {"peak_mem_mib": "peak memory", "latency_ms": "latency", "energy_j": "energy"}
    plats = sorted(d.name for d in (results / "carb").iterdir()
                   if (d / "protocol_summary.csv").exists())  # fmt: skip
    if not plats:
        raise ReadmeError(f"{results / 'carb'}: no <platform>/protocol_summary.csv")
    out, sources = [], []
    for p in plats:
        rel = f"carb/{p}"
        s = _read(results, f"{rel}/protocol_summary.csv")
        a = _read(results, f"{rel}/ablation_test.csv")
        e = _read(results, f"{rel}/extrapolation_summary.csv")
        c = _read(results, f"{rel}/coverage_summary.csv")
        sources += [f"{rel}/{f}" for f in ("protocol_summary.csv", "ablation_test.csv",
                                           "extrapolation_summary.csv", "coverage_summary.csv")]
        main = s[(s["part"] == "test") & (s["model"] == "carb")]
        runs = int(main["runs"].max()) if len(main) else 0
        out += [f"**{p}**, test part, mean ± sd over {runs} seeds (random: stratified 70/15/15; "
                "grouped: unseen architectures):", "",
                "| split | target | R² | MAPE % | within ±10 % | Spearman |",
                "|---|---|---|---|---|---|"]  # fmt: skip
        for _, r in main.iterrows():
            out.append(f"| {r['kind']} | {names.get(r['target'], r['target'])} | "
                       f"{_pm(r, 'r2', digits=4)} | {_pm(r, 'mape_pct', digits=2)} | "
                       f"{_pm(r, 'within_10pct', 100, 1)} % | {_pm(r, 'spearman', digits=3)} |")  # fmt: skip
        out += _noise_floor_table(results, rel, names, sources)
        out += ["", "Ablation (random split, test MAPE %, mean ± sd):", "",
                "| model | " + " | ".join(names.get(t, t) for t in sorted(a["target"].unique()))
                + " |", "|---|" + "---|" * a["target"].nunique()]  # fmt: skip
        for model, g in a.groupby("model", sort=False):
            cells = [
                _pm(g[g["target"] == t].iloc[0], "mape_pct", digits=2) if (g["target"] == t).any()
                else "–" for t in sorted(a["target"].unique())
            ]
            out.append(f"| {model} | " + " | ".join(cells) + " |")
        out += ["", "Extrapolation (held-out part; MAPE % mean / worst held-out value):", "",
                "| split | model | target | MAPE % | worst R² |", "|---|---|---|---|---|"]
        for _, r in e[e["model"] != "b1_flops"].iterrows():
            out.append(f"| {r['kind']} | {r['model']} | {names.get(r['target'], r['target'])} | "
                       f"{_num(r['mape_pct_mean'], 2)} / {_num(r['mape_pct_max'], 2)} | "
                       f"{r['r2_min']:.3f} |")
        cov = c[c["kind"].isin(["random", "grouped"])]
        out += ["", "Conformal intervals (test coverage at the nominal level, per batch regime):",
                "", "| split | target | regime | nominal | coverage | median hi/lo |",
                "|---|---|---|---|---|---|"]  # fmt: skip
        for _, r in cov.iterrows():
            out.append(f"| {r['kind']} | {names.get(r['target'], r['target'])} | {r['regime']} | "
                       f"{r['nominal']} | {_pm(r, 'coverage', digits=3)} | "
                       f"{_pm(r, 'median_hi_over_lo', digits=2)} |")  # fmt: skip
        out.append("")
    return "\n".join(out) + _source(*sources)


def carb_bench(results: Path) -> str:
    b = _read(results, "benchmarks/carb.csv")
    out = ["| preset | fit (rows) | predict 1,000,000 rows (median) | with intervals | model size "
           "| target |", "|---|---|---|---|---|---|"]

    def target(r, what):
        if pd.isna(r.get("target_s")):
            return f"{what}: no target"
        ok = str(r.get("meets_target")).lower() == "true"
        return f"{what} < {r['target_s']:g} s {'✓' if ok else '✗'}"

    for preset, g in b.groupby("preset", sort=False):
        fit = g[g["measure"] == "fit"].iloc[0]
        pred = g[g["measure"] == "predict"].iloc[0]
        iv = g[g["measure"] == "predict_interval"]
        iv_s = f"{iv['seconds'].iloc[0]:.1f} s" if len(iv) else "–"
        iv_t = ""
        if len(iv):
            ok = iv["seconds"].iloc[0] <= 10.0
            iv_t = f", with intervals ≤ 10 s {'✓' if ok else '✗'}"
        size = float(g["model_mib"].iloc[0])
        size_s = f"{size / 1024:.1f} GiB" if size >= 1024 else f"{size:.0f} MiB"
        out.append(f"| {preset} | {fit['seconds']:.1f} s ({int(fit['rows']):,}) | "
                   f"**{pred['seconds']:.1f} s** (of {int(pred['repeats'])}) | {iv_s} | {size_s} | "
                   f"{target(fit, 'fit')}, {target(pred, 'predict')}{iv_t} |")
    return "\n".join(out) + "\n" + _source("benchmarks/carb.csv")


def default_choice(results: Path) -> str:
    """The screening default's choice (validation + speed) and its test accuracy beside paper."""
    ch = _read(results, "benchmarks/default_choice.csv")
    cmp = _read(results, "carb/preset_comparison.csv")
    val_cols = sorted(c for c in ch.columns if c.startswith("val_mape_pct_mean_"))
    tnames = [TARGET_SHORT.get(c.removeprefix("val_mape_pct_mean_"),
                               c.removeprefix("val_mape_pct_mean_")) for c in val_cols]
    r0 = ch.iloc[0]
    out = [f"Choice (`benchmarks/choose_default.py`): validation MAPE % on "
           f"`{Path(str(r0['dataset'])).name}` (mean ± sd over {int(r0['seeds'])} seeds), "
           f"`predict_interval` on {int(r0['predict_rows']):,} SYNTHETIC rows (median, 2 cores), "
           "saved size; the lowest relative validation MAPE within ≤ 10 s and ≤ 200 MB wins:", "",
           "| candidate | " + " | ".join(f"val MAPE {t}" for t in tnames)
           + " | relative | with intervals | size | within limits |",
           "|---|" + "---|" * (len(tnames) + 4)]
    for _, r in ch.iterrows():
        cells = [f"{r[c]:.2f} ± {r[c.replace('_mean_', '_sd_')]:.2f}" for c in val_cols]
        name = f"**{r['candidate']}** (chosen)" if bool(r["chosen"]) else r["candidate"]
        out.append(f"| {name} | " + " | ".join(cells) + f" | {r['relative_val_mape']:.3f} | "
                   f"{r['interval_s']:.1f} s | {r['disk_mib']:.0f} MiB | "
                   f"{'✓' if bool(r['feasible']) else '✗'} |")
    cmp = cmp[cmp["part"] == "test"] if "part" in cmp.columns else cmp
    out += ["", f"Test MAPE % of the default beside the `paper` preset (the largest), same "
            f"random splits, mean ± sd over {int(cmp['runs'].max())} seeds; target: default ≤ "
            "1.10 x paper:", "", "| platform | target | default | paper | ratio | fit default / "
            "paper |", "|---|---|---|---|---|---|"]
    for (plat, t), g in cmp.groupby(["platform", "target"], sort=False):
        d, pp = g[g["preset"] == "default"], g[g["preset"] == "paper"]
        if not (len(d) and len(pp)):
            continue
        d, pp = d.iloc[0], pp.iloc[0]
        if max(d["mape_pct_mean"], pp["mape_pct_mean"]) < ROUNDING_MAPE_PCT:
            ratio_s = "both exact (rounding error) ✓"
        else:
            ratio = d["mape_pct_mean"] / pp["mape_pct_mean"]
            ratio_s = f"{ratio:.2f} {'✓' if ratio <= 1.10 else '✗'}"
        out.append(f"| {plat} | {TARGET_SHORT.get(t, t)} | {_pm(d, 'mape_pct', digits=2)} | "
                   f"{_pm(pp, 'mape_pct', digits=2)} | {ratio_s} | {d['fit_s_mean']:.0f} s / "
                   f"{pp['fit_s_mean']:.0f} s |")
    return "\n".join(out) + "\n" + _source("benchmarks/default_choice.csv",
                                            "carb/preset_comparison.csv")


def transfer_summary(results: Path) -> str:
    pw = _read(results, "transfer/pairwise.csv")
    claims = _read(results, "claims.csv")
    tr, sp = pw[pw["kind"] == "transfer"], pw[pw["kind"] == "specific"]
    slope = _claim(claims, "transfer_slope_latency")
    ratio = _claim(claims, "transfer_latency_needs_platform_model")
    return (f"Over {len(tr)} (source, target) pairs of settings, a model moved unchanged to "
            f"another setting keeps a median Spearman of {tr['spearman'].median():.2f} but its "
            f"median MAPE rises to {tr['mape_pct'].median():.0f} % (each setting's own model: "
            f"median Spearman {sp['spearman'].median():.2f}, median MAPE "
            f"{sp['mape_pct'].median():.1f} %, over {len(sp)} settings). Between different "
            f"desktop GPUs at the same batch, the slope of log latency is "
            f"{slope['our_value']:.2f} (median over {int(slope['n'])} pairs, IQR "
            f"{slope['our_ci_low']:.2f}-{slope['our_ci_high']:.2f}; paper, reported: "
            f"{slope['paper_value']:.2f} between RTX 5090 and 3080) and moving a model unchanged "
            f"costs {ratio['our_value']:.1f}x its own MAPE (median over {int(ratio['n'])} "
            "cross-GPU pairs).\n" + _source("transfer/pairwise.csv", "claims.csv"))


def screening(results: Path) -> str:
    s = _read(results, "screening/scenarios.csv")
    labels = {"paper_style": "paper-style", "edge_memory": "edge, memory-tight",
              "batch1_latency": "batch-1 service"}
    out = ["| scenario (tightest budget) | candidates → survivors → front → shortlist | "
           "eliminated | budget accuracy | false accepts | front recall (screened) | "
           "hypervolume ratio |", "|---|---|---|---|---|---|---|"]
    for _, r in s.iterrows():
        out.append(
            f"| {labels.get(r['scenario'], r['scenario'])} (`{r['tightest_budget']}`) | "
            f"{int(r['candidates']):,} → {int(r['survivors']):,} → {int(r['front'])} → "
            f"{int(r['shortlist'])} | {100 * r['eliminated_fraction']:.1f} % | "
            f"{r['budget_accuracy']:.2f} | {100 * r['false_accept_rate']:.2f} % | "
            f"{r['front_recall_screened']:.2f} | {r['hypervolume_ratio']:.2f} |")
    return "\n".join(out) + "\n" + _source("screening/scenarios.csv")


def cross_family(results: Path, sub: str = "") -> str:
    """Notebook 05: zero-shot, few-shot and own-model accuracy on the new families (its
    ``results_dir`` is ``results/<sub>``)."""
    s = _read(results, f"{sub}cross_family/summary.csv").set_index(["family", "target", "model", "k"])
    checks = _read(results, f"{sub}cross_family/issue_targets.csv")
    target_of = {short: t for t, short in TARGET_SHORT.items()}  # issue_targets writes short names
    judged = {(r["family"], target_of[r["target"]], r["model"], int(r["k"]), r["metric"])
              for _, r in checks.iterrows()}

    def cell(fam, t, model, k, metric):
        if (fam, t, model, k) not in s.index:
            return "–"
        r = s.loc[(fam, t, model, k)]
        d = 1 if metric == "mape_pct" else 3
        if model == "own_model" and metric == "mape_pct" and r[f"{metric}_mean"] < 1:
            d = 2
        text = f"{r[f'{metric}_mean']:.{d}f} ± {r[f'{metric}_sd']:.{d}f}"
        return f"**{text}**" if (fam, t, model, k, metric) in judged else text

    sources = [f"{sub}cross_family/summary.csv", f"{sub}cross_family/issue_targets.csv"]
    floor = None
    if (results / f"{sub}cross_family/remeasurement_noise.csv").exists():  # notebook 05 with an audit
        f = _read(results, f"{sub}cross_family/remeasurement_noise.csv")
        floor = f[f["subset"] == "all"].set_index(["family", "target"])
        sources.append(f"{sub}cross_family/remeasurement_noise.csv")

    def remeasured(fam, t, metric):
        if floor is None or (fam, t) not in floor.index:
            return "–"
        r = floor.loc[(fam, t)]
        text = f"{r[metric]:.{1 if metric == 'mape_pct' else 3}f}"
        return text + (f" ({int(r['n'])})" if metric == "mape_pct" else "")

    extra = (" re-measured (audit rows) |", "---|") if floor is not None else ("", "")
    method = _judged_method(checks)
    few = [(method, 10), (method, 50)] + ([("blend", 10)] if method != "blend" else [])
    out = ["| family | metric | zero-shot | " + " | ".join(f"{m}, k={k}" for m, k in few)
           + " | FLOPs only, k=10 | own model (rows) |" + extra[0],
           "|---|---|---|" + "---|" * len(few) + "---|---|" + extra[1]]
    rows = [("peak_mem_mib", "mape_pct", "memory MAPE %"),
            ("latency_ms", "mape_pct", "latency MAPE %"),
            ("latency_ms", "spearman", "latency Spearman")]
    for fam in sorted({f for f, *_ in s.index}):
        for t, metric, lab in rows:
            own = cell(fam, t, "own_model", 0, metric)
            if metric == "mape_pct" and (fam, t, "own_model", 0) in s.index:
                own += f" ({int(s.loc[(fam, t, 'own_model', 0), 'n_train']):,})"
            line = (f"| {fam} | {lab} | {cell(fam, t, 'zero_shot', 0, metric)} | "
                    + "".join(f"{cell(fam, t, m, k, metric)} | " for m, k in few)
                    + f"{cell(fam, t, 'flops', 10, metric)} | {own} |")
            out.append(line + (f" {remeasured(fam, t, metric)} |" if floor is not None else ""))
    met = int(checks["met"].sum())
    out.append(f"\nBold: the cells the accuracy targets judge (mean over seeds, few-shot method "
               f"`{method}`); **met: {met} of {len(checks)}**.")
    if floor is not None:
        out.append("*Re-measured*: the audit's second measurement of stored rows scored as a "
                   "prediction of the stored value (the data's own re-measurement noise).")
    return "\n".join(out) + "\n" + _source(*sources)


def _judged_method(checks: pd.DataFrame) -> str:
    """The few-shot method whose k-row cells the accuracy targets judge (notebook 05's
    ``few_shot_method``), read from ``issue_targets.csv``."""
    few = checks.loc[checks["k"].astype(int) > 0, "model"].astype(str).unique()
    if len(few) != 1:
        raise ReadmeError(f"issue_targets.csv judges {len(few)} few-shot methods "
                         f"({sorted(few)}); expected one")
    return str(few[0])


def cross_family_laws(results: Path, sub: str = "") -> str:
    """Notebook 05: the roofline and the kernel latency law side by side on the new families
    (its ``results_dir`` is ``results/<sub>``)."""
    if not (results / f"{sub}cross_family/law_comparison.csv").exists():
        return ("_Not computed: notebook 05 ran without `kernel_bench` (`carb kernels`)._\n")
    c = _read(results, f"{sub}cross_family/law_comparison.csv")
    checks = _read(results, f"{sub}cross_family/issue_targets.csv")
    method = _judged_method(checks)
    labels = {("zero_shot", 0): "zero-shot", ("loglinear", 10): "loglinear, k=10",
              ("blend", 10): "blend, k=10", ("blend", 50): "blend, k=50",
              (method, 10): f"{method}, k=10", (method, 50): f"{method}, k=50",
              ("own_model", 0): "own model"}
    out = ["| family | model | MAPE % roofline → kernel | within ±10 % roofline → kernel | "
           "Spearman roofline → kernel |", "|---|---|---|---|---|"]
    for _, r in c.iterrows():
        key = (r["model"], int(r["k"]))
        if key not in labels:
            continue
        bold = "**" if key == (method, 10) else ""
        out.append(
            f"| {r['family']} | {labels[key]} | {r['roofline_mape_pct']:.1f} → "
            f"{bold}{r['kernel_mape_pct']:.1f}{bold} | {100 * r['roofline_within_10pct']:.1f} → "
            f"{100 * r['kernel_within_10pct']:.1f} % | {r['roofline_spearman']:.3f} → "
            f"{bold}{r['kernel_spearman']:.3f} ± {r['kernel_spearman_sd']:.3f}{bold} |")
    sources = [f"{sub}cross_family/law_comparison.csv"]
    if (results / f"{sub}cross_family/issue_targets_kernel_law.csv").exists():
        k = _read(results, f"{sub}cross_family/issue_targets_kernel_law.csv")
        out.append(f"\nAccuracy targets met with the kernel law: **{int(k['met'].sum())} of {len(k)}** "
                   f"(roofline law: {int(checks['met'].sum())} of {len(checks)}); bold: the "
                   "judged cells.")
        sources.append(f"{sub}cross_family/issue_targets_kernel_law.csv")
    return "\n".join(out) + "\n" + _source(*sources)


def cross_family_siblings(results: Path, sub: str = "") -> str:
    """Notebook 05: the kernel law with the ResNet-only source beside a source that also holds
    the other new families' rows (``cross_family_evaluation(siblings=True)``)."""
    rel = f"{sub}cross_family/siblings_comparison.csv"
    if not (results / rel).exists():
        return ("_Not computed: notebook 05 ran without `kernel_bench` or with one new "
                "family._\n")
    c = _read(results, rel)
    plain = _read(results, f"{sub}cross_family/issue_targets_kernel_law.csv")
    sib = _read(results, f"{sub}cross_family/issue_targets_kernel_law_siblings.csv")
    method = _judged_method(plain)
    out = ["| family | model | latency MAPE % ResNet only → with siblings | within ±10 % | "
           "Spearman |", "|---|---|---|---|---|"]
    for _, r in c.iterrows():
        k = int(r["k"])
        label = "zero-shot" if r["model"] == "zero_shot" else f"{r['model']}, k={k}"
        bold = "**" if (r["model"], k) == (method, 10) else ""
        out.append(
            f"| {r['family']} | {label} | {r['resnet_only_mape_pct']:.1f} → "
            f"{bold}{r['with_siblings_mape_pct']:.1f}{bold} | "
            f"{100 * r['resnet_only_within_10pct']:.1f} → "
            f"{100 * r['with_siblings_within_10pct']:.1f} % | {r['resnet_only_spearman']:.3f} → "
            f"{r['with_siblings_spearman']:.3f} ± {r['with_siblings_spearman_sd']:.3f} |")
    out.append(f"\nAccuracy targets met with the kernel law: ResNet-only source **{int(plain['met'].sum())}"
               f" of {len(plain)}**, with siblings {int(sib['met'].sum())} of {len(sib)} (the targets "
               "judge the ResNet-only source).")
    return "\n".join(out) + "\n" + _source(
        rel, f"{sub}cross_family/issue_targets_kernel_law.csv",
        f"{sub}cross_family/issue_targets_kernel_law_siblings.csv")


def steady_campaign(results: Path) -> str:
    """Notebook 06: the two latency targets on one steady re-measured campaign (kernel law)."""
    t = _read(results, "carb/steady_campaign/targets.csv")
    s = _read(results, "carb/steady_campaign/summary.csv")
    names = {("random", "within_10pct"): "random split: share within ±10 %",
             ("batch_small", "r2"): "small batches (≤ 8) held out: R²"}
    out = ["| target (kernel law, with the probe's term) | goal | mean ± sd | seeds | met |",
           "|---|---|---|---|---|"]
    for _, r in t.iterrows():
        out.append(f"| {names.get((r['split'], r['metric']), r['split'] + ' ' + r['metric'])} | "
                   f"{r['goal']} | {r['mean']:.3f} ± {r['sd']:.3f} | {int(r['n_seeds'])} | "
                   f"{'✓' if bool(r['met']) else '✗'} |")
    out += ["", "| split | law | R² | MAPE % | within ±10 % | Spearman |", "|---|---|---|---|---|---|"]
    for _, r in s.iterrows():
        out.append(f"| {r['split']} | {r['law']} | {r['r2']:.3f} ± {r['r2_sd']:.3f} | "
                   f"{r['mape_pct']:.2f} ± {r['mape_pct_sd']:.2f} | {r['within_10pct']:.3f} | "
                   f"{r['spearman']:.3f} |")
    return "\n".join(out) + "\n" + _source("carb/steady_campaign/targets.csv",
                                           "carb/steady_campaign/summary.csv")


#: The dataset of notebooks 03-05 whose numbers the README's headline table quotes.
HEADLINE_PLATFORM = "cpu_epyc_zen3_2c"

#: The GPU whose energy claims the README's headline table and docs/gpu.md quote.
GPU_PLATFORM = "gpu_nvidia_h200"

#: The paper's energy claims, in the order the GPU table lists them.
ENERGY_CLAIMS: tuple[str, ...] = ("divergence_energy_growth", "divergence_latency_growth", "divergence_energy_vs_latency", "fp16_energy_ratio", "fp16_memory_ratio", "small_batch_j_per_gflop")  # fmt: skip


def gpu_energy(results: Path) -> str:
    """Notebook 01's energy claims on the GPU platform: ours with the 95 % CI beside the paper's
    reported value, and the claims table's verdict (:func:`carb_lib.core.claims.verdict`: the
    interval against the claim's tolerance band)."""
    claims = _read(results, "claims.csv")
    c = claims[claims["platform"] == GPU_PLATFORM].set_index("claim_id")
    out = [f"| claim (paper) | paper (reported) | ours on `{GPU_PLATFORM}` [95 % CI] | n (tier rows or pairs) | "
           "verdict (band) |", "|---|---|---|---|---|"]
    for cid in ENERGY_CLAIMS:
        if cid not in c.index:
            continue
        r = c.loc[cid]
        if not bool(r["testable"]) or pd.isna(r["our_value"]):
            out.append(f"| {r['claim']} | {r['paper_value']:.3g} | not testable: {r['reason']} | – "
                       "| – |")
            continue
        row = {"claim_id": cid, **r.to_dict()}
        out.append(f"| {r['claim']} | {r['paper_value']:.3g} | **{r['our_value']:.2f}** "
                   f"[{r['our_ci_low']:.2f}, {r['our_ci_high']:.2f}] | {int(r['n'])} "
                   f"| {verdict(row)}; band: {band_text(row)} |")
    return "\n".join(out) + "\n" + _source("claims.csv")


def headline(results: Path) -> str:
    """The README's one table of results: one row per stage, each from the file it names."""
    p = HEADLINE_PLATFORM
    claims = _read(results, "claims.csv")
    div = _read(results, "characterization/divergence.csv").set_index(["platform", "quantity"])
    alloc = _read(results, "benchmarks/allocator_check.csv")
    summ = _read(results, f"carb/{p}/protocol_summary.csv")
    extra = _read(results, f"carb/{p}/extrapolation_summary.csv")
    steady = _read(results, "carb/steady_campaign/targets.csv").set_index(["split", "metric"])
    cross = _read(results, "cross_family/issue_targets_kernel_law.csv")
    help_cmp = _read(results, "transfer/help_comparison.csv").set_index("group")
    scen = _read(results, "screening/scenarios.csv").set_index("scenario")

    def test_row(target: str) -> pd.Series:
        m = summ[(summ["kind"] == "random") & (summ["part"] == "test") & (summ["model"] == "carb")
                 & (summ["target"] == target)]
        return m.iloc[0]

    def held_out(model: str) -> float:
        e = extra[(extra["kind"] == "batch_small") & (extra["model"] == model)
                  & (extra["target"] == "latency_ms")]
        return float(e["r2_min"].iloc[0]) if len(e) else float("nan")

    g = div.loc[(p, "latency_ms")]
    ge = _claim(claims, "divergence_energy_growth", GPU_PLATFORM)
    gr = _claim(claims, "divergence_energy_vs_latency", GPU_PLATFORM)
    if ge["platform"] == GPU_PLATFORM and pd.notna(ge["our_value"]) and pd.notna(gr["our_value"]):
        gpu_row = (
            f"| characterization, energy (`{GPU_PLATFORM}`, {int(ge['n'])} high/low-tier rows) | "
            f"energy grows **{_x(ge['our_value'])}** [{ge['our_ci_low']:.1f}, "
            f"{ge['our_ci_high']:.1f}], {_x(gr['our_value'], 2)} [{gr['our_ci_low']:.2f}, "
            f"{gr['our_ci_high']:.2f}] faster than latency | "
            f"{_paper(claims, 'divergence_energy_growth', 'x{:.1f}')}, "
            f"{_paper(claims, 'divergence_energy_vs_latency', 'x{:.2f}')} |")
    else:
        gpu_row = (f"| characterization, energy (`{GPU_PLATFORM}`) | not measured in "
                   f"`results/claims.csv` | {_paper(claims, 'divergence_energy_growth', 'x{:.1f}')} |")
    mem, lat = test_row("peak_mem_mib"), test_row("latency_ms")
    lat_cells = cross[(cross["target"] == "latency") & (cross["metric"] == "mape_pct")]
    mem_cells = cross[cross["target"] == "memory"]
    sc = scen.loc["paper_style"]
    exact, rows = int(alloc["exact_rows"].sum()), int(alloc["rows"].sum())
    out = [
        "| stage | result on the shipped data | paper (reported, GPUs) |",
        "|---|---|---|",
        f"| characterization (`{p}`) | latency grows **{_x(g['growth'])}** "
        f"[{g['ci_low']:.1f}, {g['ci_high']:.1f}] from the low- to the high-demand tier | "
        f"{_paper(claims, 'divergence_latency_growth', 'x{:.1f}')} (energy "
        f"{_paper(claims, 'divergence_energy_growth', 'x{:.1f}')}: not testable on a CPU) |",
        gpu_row,
        alloc_headline(alloc, exact, rows, results),
        f"| CARB, random split (`{p}`) | memory MAPE {_num(mem['mape_pct_mean'], 2)} %; latency "
        f"MAPE **{lat['mape_pct_mean']:.2f} %**, R² {lat['r2_mean']:.3f} | – |",
        small_batch_headline(results, p, held_out("carb"), held_out("kernel_law")),
        f"| one steady campaign (notebook 06), kernel law | "
        f"{100 * steady.loc[('random', 'within_10pct'), 'mean']:.1f} % of rows within ±10 %, "
        f"small-batch R² {steady.loc[('batch_small', 'r2'), 'mean']:.3f} | – |",
        f"| new families, never seen (`{p}`) | memory exact on {int(mem_cells['met'].sum())} of "
        f"{len(mem_cells)} families; latency MAPE with 10 rows "
        f"{lat_cells['mean'].min():.1f}-{lat_cells['mean'].max():.1f} % (kernel law) | – |",
        f"| few-shot transfer, k = 10 (HELP's devices) | mean Spearman "
        f"**{help_cmp.loc['mean over devices', 'ours']:.3f}** | HELP: "
        f"{help_cmp.loc['mean over devices', 'help_reported']:.3f} |",
        f"| screening, paper-style budget (`{sc['tightest_budget']}`) | "
        f"{int(sc['candidates']):,} → {int(sc['shortlist'])} candidates, budget accuracy "
        f"{sc['budget_accuracy']:.2f}, false accepts {100 * sc['false_accept_rate']:.2f} % | "
        f"energy budget: not testable on a CPU |",
    ]
    return "\n".join(out) + "\n" + _source(
        "characterization/divergence.csv", "benchmarks/allocator_check.csv",
        f"carb/{p}/protocol_summary.csv", f"carb/{p}/extrapolation_summary.csv",
        f"carb/{p}/kernel_law_strict.csv",
        "carb/steady_campaign/targets.csv", "cross_family/issue_targets_kernel_law.csv",
        "transfer/help_comparison.csv", "screening/scenarios.csv", "claims.csv")


def screening_by_family(results: Path) -> str:
    """Notebook 05: one screening of candidates of every family with one shared model."""
    import json

    t = _read(results, "cross_family/screening_by_family.csv")
    path = results / "cross_family/screening_shortlist_summary.json"
    if not path.exists():
        raise ReadmeError(f"{path} does not exist (run `make reproduce` first)")
    summary = json.loads(path.read_text(encoding="utf-8"))
    spec = summary["spec"]
    out = [f"Budget {', '.join(f'`{b}`' for b in spec['budgets'])}, objectives "
           f"{', '.join(spec['objectives'])}, shortlist of {spec['k']}:", "",
           "| family | " + " | ".join(c for c in t.columns if c != "family") + " |",
           "|---|" + "---|" * (len(t.columns) - 1)]
    for _, r in t.iterrows():
        out.append(f"| {r['family']} | " + " | ".join(f"{int(r[c]):,}" for c in t.columns
                                                     if c != "family") + " |")
    c = summary["counts"]
    out.append(f"| all | {c['candidates']:,} | {c['survivors']:,} | {c['front']:,} | "
               f"{c['shortlist']:,} |")
    return "\n".join(out) + "\n" + _source("cross_family/screening_by_family.csv",
                                           "cross_family/screening_shortlist_summary.json")


BLOCKS: dict[str, Callable[[Path], str]] = {
    "headline": headline,
    "fewshot": fewshot,
    "fewshot-batches": fewshot_batches,
    "screening": screening,
    "static-features-bench": static_features_bench,
    "allocator": allocator_check,
    "allocator-precision": allocator_precision_block,
    "characterization": characterization,
    "carb-metrics": carb_metrics,
    "carb-bench": carb_bench,
    "steady-campaign": steady_campaign,
    "default-choice": default_choice,
    "transfer": transfer_summary,
    "cross-family": cross_family,
    "cross-family-laws": cross_family_laws,
    "cross-family-siblings": cross_family_siblings,
    "screening-by-family": screening_by_family,
    "gpu-energy": gpu_energy,
    "gpu-energy-model": gpu_energy_model,
    "gpu-memory": gpu_memory,
    **ZOO_BLOCKS,
    "platforms": platforms_block,
    "platforms-splits": platforms_splits_block,
    "field": field_block,
    "host-calibration": host_calibration,
}

#: Blocks written from what the caller passes, not from results/: ``cli``, docs/cli.md's command
#: reference (:func:`~carb_lib.app.readme_cli.cli_reference`), from the command line that
#: ``carb readme`` passes as ``command`` (it sits above this module). Without ``command`` they are
#: left as they are.
CALLER_BLOCKS: tuple[str, ...] = ("cli",)

#: The pages that hold generated blocks, relative to the repository root (README.md's folder).
PAGES: tuple[str, ...] = ("README.md", "docs/results.md", "docs/memory.md", "docs/model.md",
                          "docs/transfer.md", "docs/screening.md", "docs/families.md",
                          "docs/cli.md", "docs/gpu.md", "docs/zoo.md",
                          "docs/operators.md")


# --------------------------------------------------------------------------- render / check
def render(text: str, results_dir: str | Path = "results",
           expect: set[str] | None = None, *, command: Any = None) -> str:
    """``text`` with every ``carb:NAME`` block rewritten from ``results_dir``.

    Parameters
    ----------
    text : str
        A page holding blocks.
    results_dir : str or Path
        Where the result tables are.
    expect : set of str, optional
        Block names the page must hold (all of them; None: no check).
    command : typer.Typer, optional
        The command line whose reference the ``cli`` block shows (``carb_lib.app.cli.app``);
        None: the :data:`CALLER_BLOCKS` are left as they are.

    Raises
    ------
    ReadmeError
        If the page names an unknown block, misses an expected one, or a source file is missing.
    """
    results = Path(results_dir)
    found = {m.group("name") for m in MARK.finditer(text)}
    unknown = found - set(BLOCKS) - set(CALLER_BLOCKS)
    missing = set() if expect is None else set(expect) - found
    if unknown or missing:
        raise ReadmeError(f"README blocks: unknown {sorted(unknown)}, missing {sorted(missing)}")

    def sub(m: re.Match) -> str:
        name = m.group("name")
        if name in CALLER_BLOCKS:
            if command is None:
                return m.group(0)
            body = cli_reference(command)
        else:
            body = BLOCKS[name](results)
        return m.group(1) + body.rstrip("\n") + "\n" + m.group(4)

    return MARK.sub(sub, text)


def _pages(readme: str | Path) -> list[Path]:
    """The pages of :data:`PAGES` beside ``readme`` (``readme`` itself first), after checking
    that every block of :data:`BLOCKS` sits on at least one of them."""
    readme = Path(readme)
    root = readme.parent
    pages = [readme] + [root / p for p in PAGES[1:] if (root / p).exists()]
    found = {m.group("name") for page in pages
             for m in MARK.finditer(page.read_text(encoding="utf-8"))}
    missing = set(BLOCKS) - found - set(CALLER_BLOCKS)
    if missing:
        raise ReadmeError(f"README blocks: missing {sorted(missing)} (on no page of {PAGES})")
    return pages


def update_readme(readme: str | Path = "README.md", results_dir: str | Path = "results", *,
                  command: Any = None) -> bool:
    """Rewrite the blocks of the README and of the docs pages beside it (:data:`PAGES`) from
    ``results_dir`` (and the ``cli`` block from ``command``, see :func:`render`); True if a
    file changed."""
    changed = False
    for page in _pages(readme):
        old = page.read_text(encoding="utf-8")
        new = render(old, results_dir, command=command)
        if new != old:
            page.write_text(new, encoding="utf-8")
            changed = True
    return changed


def stale_blocks(readme: str | Path = "README.md", results_dir: str | Path = "results", *,
                 command: Any = None) -> list[str]:
    """Names of the blocks (README and docs pages) whose text differs from what ``results_dir``
    (and ``command``, see :func:`render`) gives."""
    stale = []
    for page in _pages(readme):
        text = page.read_text(encoding="utf-8")
        new = render(text, results_dir, command=command)
        have = {m.group("name"): m.group("body") for m in MARK.finditer(text)}
        want = {m.group("name"): m.group("body") for m in MARK.finditer(new)}
        stale += [n for n in want if have.get(n) != want[n]]
    return sorted(stale)
