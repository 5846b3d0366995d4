"""The ``carb:zoo``, ``carb:zoo-platforms``, ``carb:replay-zoo``, ``carb:composition-law``,
``carb:replay-screen`` and ``carb:replay-field`` blocks of the docs
(:mod:`carb_lib.app.readme`): notebook 07's scores of the measured torchvision zoo, beside the
re-measurement noise, on each CPU with measured zoo rows; ``benchmarks/replay_zoo.py``'s zoo
networks summed from their own calls; ``benchmarks/composition_law.py``'s law over those sums;
``benchmarks/replay_screen.py``'s cost of screening 10,000 candidates from cached call times;
and ``benchmarks/replay_field.py``'s field check of ``carb time`` on fresh candidates."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from carb_lib.app.readme_common import _source

_METHODS = {"leave_network_out": "network left out of the fit (CARB, shared features)",
            "zero_zoo": "no zoo network in the fit (CARB, design space only)",
            "flops_only": "baseline: FLOPs only",
            "operators_summed": "baseline: operators timed alone, summed",
            "remeasurement": "a second measurement (`carb audit`): the re-measurement noise"}


def _pct(v: float) -> str:
    return "–" if pd.isna(v) else f"{100 * v:.1f} %"


def zoo_block(results: Path) -> str:
    """A markdown table: per method, latency median error, share within ±10 %, Spearman within a
    setting (one batch size at one precision), and the share of peaks exact to the byte
    (``results/zoo/scores.csv`` and ``remeasurement_noise.csv``, written by notebook 07)."""
    d = Path(results) / "zoo"
    path = d / "scores.csv"
    if not path.is_file():
        return "*(no zoo scores: run `make reproduce` with measured zoo rows)*\n"
    s = pd.read_csv(path)
    s = s[s["kind"] == "all"]
    noise = d / "remeasurement_noise.csv"
    if noise.is_file():
        s = pd.concat([s, pd.read_csv(noise)], ignore_index=True)
    lat = s[s["target"] == "latency_ms"].set_index("method")
    mem = s[s["target"] == "peak_mem_mib"].set_index("method")
    rows = ["| method | rows | latency median error | latency within ±10 % "
            "| latency Spearman within a setting (lowest) | peak memory exact to the byte |",
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


def _setting(precision: str, batch: str) -> str:
    return f"batch {batch}" if precision == "fp32" else f"{precision} batch {batch}"


def zoo_platforms_block(results: Path) -> str:
    """A markdown table: per CPU and method, the latency median error over all rows and per
    setting (a batch size at fp32, then the other precisions), and the share of peaks exact to
    the byte (``results/zoo/platforms.csv``, written by notebook 07)."""
    from carb_lib.evaluation.zoo import setting_order

    path = Path(results) / "zoo" / "platforms.csv"
    if not path.is_file():
        return "*(no per-CPU zoo scores: run `make reproduce` with measured zoo rows)*\n"
    s = pd.read_csv(path, dtype={"batch": str, "precision": str})
    if "precision" not in s.columns:  # written before precisions were told apart
        s["precision"] = "fp32"
    s.loc[s["batch"] == "all", "precision"] = "all"
    pairs = zip(s["precision"], s["batch"], strict=True)
    settings = sorted({(p, b) for p, b in pairs if b != "all"}, key=lambda k: setting_order(*k))
    head = ["CPU", "method", "rows", "latency median error, all rows",
            *(_setting(p, b) for p, b in settings), "peak memory exact to the byte"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for plat, p in s.groupby("platform", sort=False):
        for m, label in _METHODS.items():
            g = {(r["precision"], r["batch"]): r for r in p[p["method"] == m].to_dict("records")}
            if ("all", "all") not in g:
                continue
            by_s = [f"{g[k]['latency_median_ape_pct']:.1f} %" if k in g else "–"
                    for k in settings]
            r = g[("all", "all")]
            rows.append(f"| `{plat}` | {label} | {int(r['n'])} "
                        f"| {r['latency_median_ape_pct']:.1f} % | " + " | ".join(by_s)
                        + f" | {_pct(r['peak_mem_exact_share'])} |")
    return "\n".join(rows) + "\n"


def replay_zoo_block(results: Path) -> str:
    """A markdown table per CPU kind and batch: time to time a network's calls on first sight
    and from the cache, the sum of its calls against the network timed now (median and
    10th-90th percentiles, median error, share within ±10 %), the kernel law's operator sum
    beside it, and the network timed now against its stored zoo row (``results/benchmarks/replay_zoo_<platform>_summary.csv``, written by
    ``benchmarks/replay_zoo.py``)."""
    files = sorted((Path(results) / "benchmarks").glob("replay_zoo_*_summary.csv"))
    if not files:
        return "*(no replay timings: run `python benchmarks/replay_zoo.py`)*\n"
    rows = ["| CPU | batch | networks | first sight (median, max) | cached (median) "
            "| sum of calls / network (median, p10-p90) | median error | within ±10 % "
            "| baseline: kernel-law operator sum, median error (within ±10 %) "
            "| network now / stored zoo row (median, p10-p90) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for f in files:
        s = pd.read_csv(f, dtype={"batch": str})
        for r in s.to_dict("records"):
            batch = "both" if r["batch"] == "all" else r["batch"]
            rows.append(
                f"| `{r['platform']}` | {batch} | {int(r['networks'])} "
                f"| {r['first_sight_s_median']:.1f} s, {r['first_sight_s_max']:.0f} s "
                f"| {r['cached_s_median']:.2f} s | {r['sum_over_network_now']} "
                f"| {r['median_ape_now_pct']:.1f} % | {_pct(r['within_10pct_now'])} "
                f"| {r['kernel_law_median_ape_now_pct']:.1f} % "
                f"({_pct(r['kernel_law_within_10pct_now'])}) "
                f"| {r['network_now_over_stored_row']} |")
    return "\n".join(rows) + "\n" + _source(*(f"benchmarks/{f.name}" for f in files))


def composition_law_block(results: Path) -> str:
    """A markdown table per CPU kind: the composition law (fitted on design networks) and the
    plain sum of calls, median error and share within ±10 % per batch, on the design networks
    out of family and, scored once, on the zoo networks; the law's coefficients and the
    worst network kind under each (``results/benchmarks/composition_law_<platform>_summary.csv``,
    written by ``benchmarks/composition_law.py``)."""
    files = sorted((Path(results) / "benchmarks").glob("composition_law_*_summary.csv"))
    if not files:
        return "*(no composition law: run `python benchmarks/composition_law.py`)*\n"
    rows = ["| CPU | networks | method | batch 1 | batch 16 | both | Spearman within batch 1, 16 |",
            "|---|---|---|---|---|---|---|"]
    notes = []
    for f in files:
        s = pd.read_csv(f, dtype={"batch": str})
        plat = s["platform"].iloc[0]
        overall = s[s["kind"] == "all"]
        for (part, method), g in overall.groupby(["rows", "method"], sort=False):
            by = g.set_index("batch")
            cells = [f"{by.loc[b, 'median_ape_pct']:.1f} % ({_pct(by.loc[b, 'within_10pct'])})"
                     if b in by.index else "–" for b in ("1", "16", "all")]
            rho = ", ".join(f"{by.loc[b, 'spearman']:.3f}" for b in ("1", "16")
                            if b in by.index)
            rows.append(f"| `{plat}` | {part} | {method} | " + " | ".join(cells)
                        + f" | {rho} |")
        c = s.iloc[0]
        kinds = s[s["kind"] != "all"]
        worst = [f"{m}: {g.loc[g['median_ape_pct'].idxmax(), 'kind']} "
                 f"{g['median_ape_pct'].max():.1f} %" for m, g in kinds.groupby("method")]
        notes.append(f"`{plat}`: network ms = {c['coef_sum_ms']:.3f} x sum of calls + "
                     f"{1e3 * c['coef_n_calls']:.1f} µs x calls + {c['coef_weight_mib']:.3f} "
                     f"ms x weight MiB + {c['coef_call_mib']:.3f} ms x MiB the calls move; "
                     "worst zoo network kind (median error): " + "; ".join(worst) + ".")
    return ("\n".join(rows) + "\n\n" + "\n\n".join(notes) + "\n"
            + _source(*(f"benchmarks/{f.name}" for f in files)))


def replay_screen_block(results: Path) -> str:
    """A markdown table per CPU kind: 10,000 design-space candidates recorded cold and
    screened from cached call times (median and range of the runs), against the 60 s target
    (``results/benchmarks/replay_screen_<platform>.csv``, written by
    ``benchmarks/replay_screen.py``; its cache holds placeholder times: the cost is
    benchmarked, not the values)."""
    files = sorted((Path(results) / "benchmarks").glob("replay_screen_*.csv"))
    if not files:
        return "*(no screen timings: run `python benchmarks/replay_screen.py`)*\n"
    rows = ["| CPU | candidates | calls (distinct) | processes | recorded, cold "
            "| screened from the cache: median (range, runs) | per candidate | target <= 60 s |",
            "|---|---|---|---|---|---|---|---|"]
    for f in files:
        s = pd.read_csv(f)
        first, screen = s.iloc[0], s.loc[s["step"] == "screen", "seconds"]
        med = float(screen.median())
        rows.append(
            f"| `{first['platform']}` | {int(first['n_candidates']):,} "
            f"| {int(first['n_calls']):,} ({int(first['n_distinct_calls']):,}) "
            f"| {int(first['processes'])} "
            f"| {float(s.loc[s['step'] == 'record', 'seconds'].iloc[0]):.1f} s "
            f"| {med:.1f} s ({screen.min():.1f}-{screen.max():.1f} s, {len(screen)}) "
            f"| {1e3 * med / int(first['n_candidates']):.1f} ms "
            f"| {'met' if med <= 60 else 'not met'} |")
    return "\n".join(rows) + "\n" + _source(*(f"benchmarks/{f.name}" for f in files))


def replay_field_block(results: Path) -> str:
    """A markdown table per CPU kind: fresh design candidates timed whole on this host against
    the sum of their calls and the composition law fitted on this host, median error and
    share within ±10 % per batch, Spearman within each batch
    (``results/benchmarks/replay_field_<platform>_summary.csv``, written by
    ``benchmarks/replay_field.py``), and the law fitted."""
    files = sorted((Path(results) / "benchmarks").glob("replay_field_*_summary.csv"))
    if not files:
        return "*(no field check of carb time: run `python benchmarks/replay_field.py`)*\n"
    rows = ["| CPU | candidates | method | batch 1 | batch 16 | both | Spearman within batch "
            "1, 16 | predicted / measured (median) |", "|---|---|---|---|---|---|---|---|"]
    notes = []
    for f in files:
        s = pd.read_csv(f, dtype={"batch": str})
        plat = s["platform"].iloc[0]
        for method, g in s.groupby("method", sort=False):
            by = g.set_index("batch")
            cells = [f"{by.loc[b, 'median_ape_pct']:.1f} % ({_pct(by.loc[b, 'within_10pct'])})"
                     if b in by.index else "–" for b in ("1", "16", "all")]
            rho = ", ".join(f"{by.loc[b, 'spearman']:.3f}" for b in ("1", "16") if b in by.index)
            rows.append(f"| `{plat}` | {int(by.loc['all', 'n'])} | {method} | "
                        + " | ".join(cells)
                        + f" | {rho} | {by.loc['all', 'median_pred_over_measured']:.3f} |")
        rows_file = f.with_name(f.name.replace("_summary", ""))
        if rows_file.is_file():
            notes.append(f"`{plat}`: {pd.read_csv(rows_file)['law'].iloc[0]}.")
    return ("\n".join(rows) + "\n\n" + "\n\n".join(notes) + "\n"
            + _source(*(f"benchmarks/{f.name}" for f in files)))


#: The blocks of this module by name (:data:`carb_lib.app.readme.BLOCKS` holds them).
ZOO_BLOCKS = {"zoo": zoo_block, "zoo-platforms": zoo_platforms_block,
              "replay-zoo": replay_zoo_block, "composition-law": composition_law_block,
              "replay-screen": replay_screen_block, "replay-field": replay_field_block}
