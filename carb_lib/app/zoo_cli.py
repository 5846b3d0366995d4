"""``carb zoo``: the torchvision model zoo's commands (registered by :mod:`carb_lib.app.cli`, which
routes them through its one error path). Each command imports its stage lazily."""

from __future__ import annotations

from pathlib import Path

import typer

from carb_lib.app.cli_checks import check_coverage
from carb_lib.core.vocab import DEFAULT_COVERAGE

zoo_app = typer.Typer(no_args_is_help=True, help="The torchvision model zoo's classification "
                      "CNNs: list them, predict and screen them with a fitted model, time them on "
                      "this machine from their own calls, write the measurement campaign's "
                      "config list (needs torchvision: the zoo extra).")
_ZOO_NETS = typer.Option("all", "--networks", help="Comma-separated zoo networks (carb zoo "
                         "list), or all.")
_ZOO_BATCHES = typer.Option("1", "--batches", help="Batch sizes, e.g. 1,8,32.")
_ZOO_PRECISIONS = typer.Option("fp32", "--precisions", help="fp32,fp16.")
_ZOO_RES = typer.Option("224", "--resolutions", help="Input resolutions (px), e.g. 160,224.")
_ZOO_CACHE = typer.Option(None, "--cache-dir", help="Feature cache folder (default "
                          "$CARB_CACHE_DIR or ~/.cache/carb).")
_ZOO_MODEL = typer.Option(..., "--model", help="Model written by `carb fit`.")
_ZOO_FORCE = typer.Option(False, "--force", help="Replace an existing --out that is not an "
                          "output of this command (keeping a numbered <out>.bak).")


def _check_out(out: Path | None, force: bool, command: str, marks: tuple[str, ...],
               inputs=()) -> bool:
    """The output rule (:mod:`carb_lib.core.safe_io`) for a zoo command's table ``--out``: an
    existing file is replaced only if it holds the command's columns ``marks`` (else
    ``--force``, keeping a backup). Returns whether the write keeps a backup."""
    from carb_lib.core.safe_io import check_output, table_with
    from carb_lib.core.tables import table_format

    if out is None:
        return False
    table_format(out, "--out")
    return check_output(out, "--out", inputs=inputs, own=table_with(*marks), force=force,
                        command=command)


def _zoo_candidates(networks: str, batches: str, precisions: str, resolutions: str,
                    cache_dir: Path | None):
    from carb_lib.families import zoo

    cands = zoo.zoo_candidates(networks, batches, precisions, resolutions, cache_dir=cache_dir)
    for line in cands.failure_lines():
        typer.secho(f"warning: {line}", fg=typer.colors.YELLOW, err=True)
    if not len(cands.table):
        raise ValueError("no zoo network could be described at the given shapes")
    return cands.table


@zoo_app.command("list")
def zoo_list(
    out: Path | None = typer.Option(None, "--out", help="Also write the table (.csv/.parquet)."),
    force: bool = _ZOO_FORCE,
) -> None:
    """List the zoo: network, kind, published ImageNet acc@1, parameters and GFLOPs."""
    from carb_lib.core.tables import write_table
    from carb_lib.families import zoo

    backup = _check_out(out, force, "carb zoo list", ("network", "network_kind",
                                                      "published_gflops"))
    t = zoo.zoo_table()
    for _, r in t.iterrows():
        typer.echo(f"{r['network']:<20} {r['network_kind']:<16} acc@1 {r[zoo.ACC1]:6.2f}  "
                   f"{r['published_params'] / 1e6:7.1f} M params  "
                   f"{r['published_gflops']:7.2f} GFLOPs (multiply-adds)")
    typer.echo(f"{len(t)} classification CNNs of torchvision (ViT, Swin, MaxViT left out)")
    if out is not None:
        write_table(t, out, "--out", backup=backup)
        typer.echo(f"wrote {out}")


@zoo_app.command("predict")
def zoo_predict(
    model: Path = _ZOO_MODEL,
    networks: str = _ZOO_NETS,
    batches: str = _ZOO_BATCHES,
    precisions: str = _ZOO_PRECISIONS,
    resolutions: str = _ZOO_RES,
    coverage: float = typer.Option(DEFAULT_COVERAGE, "--coverage", help="Nominal coverage of the conformal intervals."),
    out: Path | None = typer.Option(None, "--out", help="Also write the predictions (.csv/.parquet)."),
    cache_dir: Path | None = _ZOO_CACHE,
    force: bool = _ZOO_FORCE,
) -> None:
    """Predict latency and peak memory (and energy where the model predicts it) of zoo networks with intervals and the extrapolated flag."""
    from carb_lib.core.tables import write_table
    from carb_lib.ensemble import load_model
    from carb_lib.ensemble.routing import routed
    from carb_lib.families import zoo

    backup = _check_out(out, force, "carb zoo predict", ("network", "model_platform"),
                        inputs=[("--model", model)])
    zoo.resolve_names(networks)  # bad names before anything is loaded
    m = routed(load_model(model))  # families the fit did not hold: its transfer model

    check_coverage(m, coverage, model)
    from carb_lib.measure.protocol import model_protocol

    pred = zoo.predict_zoo(m, _zoo_candidates(networks, batches, precisions, resolutions,
                                              cache_dir), coverage)
    pred["protocol"] = model_protocol(m).describe()
    typer.echo(zoo.format_predictions(pred))
    n_ext = int(pred["extrapolated"].sum()) if "extrapolated" in pred.columns else 0
    typer.echo(f"{len(pred)} rows, model platform {m.platform_}, coverage {coverage}, "
               f"{n_ext} flagged extrapolated; predictions for {model_protocol(m).describe()}")
    if out is not None:
        write_table(pred, out, "--out", backup=backup)
        typer.echo(f"wrote {out}")


@zoo_app.command("screen")
def zoo_screen(
    model: Path = _ZOO_MODEL,
    networks: str = _ZOO_NETS,
    batches: str = _ZOO_BATCHES,
    precisions: str = _ZOO_PRECISIONS,
    resolutions: str = _ZOO_RES,
    budget: list[str] | None = typer.Option(None, "--budget", help="e.g. 'latency_ms<=10', 'peak_mem_mib<=200' (repeatable)."),
    objective: list[str] | None = typer.Option(None, "--objective", help="Cost to minimise, or max:COLUMN (repeatable; default latency_ms, peak_mem_mib, and energy_j where the model predicts it)."),
    quality: str = typer.Option("imagenet_acc1", "--quality", help="Column to maximise: the published ImageNet acc@1 (imagenet_acc1), or imagenet_acc5."),
    coverage: float = typer.Option(DEFAULT_COVERAGE, help="Conformal coverage of the upper bounds."),
    k: int = typer.Option(10, help="Shortlist size."),
    method: str = typer.Option("crowding", help="Shortlist ranking: crowding | knee."),
    out: Path = typer.Option(Path("runs/screening/zoo_shortlist.csv"), "--out", help="Shortlist table (.csv/.parquet); _front and _summary.json are written beside it."),
    cache_dir: Path | None = _ZOO_CACHE,
    force: bool = _ZOO_FORCE,
) -> None:
    """Screen zoo networks against budgets into a Pareto shortlist, accuracy an objective."""
    from carb_lib import screening as scr
    from carb_lib.ensemble import load_model
    from carb_lib.ensemble.routing import routed
    from carb_lib.families.zoo import resolve_names

    backup = scr.check_shortlist_outs(out, force, "carb zoo screen", inputs=[("--model", model)])
    resolve_names(networks)  # bad names before anything is loaded
    m = routed(load_model(model))  # families the fit did not hold: its transfer model

    check_coverage(m, coverage, model)
    spec = scr.DeploymentSpec(
        platform=getattr(m, "platform_", None), budgets=budget or [],
        objectives=objective or scr.default_objectives(m), quality=quality,
        coverage=coverage, k=k, shortlist_method=method,
    )
    cands = _zoo_candidates(networks, batches, precisions, resolutions, cache_dir)
    result = scr.screen(m, cands, spec)
    from carb_lib.measure.protocol import model_protocol

    result.extra["protocol"] = model_protocol(m).describe()
    paths = result.write(out, backup=backup)
    typer.echo(result.summary_text())
    cols = [c for c in ("network", "resolution", "batch", "precision", "latency_ms_hi",
                        "peak_mem_mib_hi", "energy_j_hi", quality) if c in result.shortlist.columns]
    if len(result.shortlist):
        typer.echo(result.shortlist[cols].to_string(index=False))
    typer.echo("wrote " + ", ".join(str(p) for p in paths))


@zoo_app.command("configs")
def zoo_configs(
    out: Path = typer.Option(..., "--out", help="Config list for `carb profile --configs` (.csv/.parquet)."),
    phase: int | None = typer.Option(None, "--phase", help="1: batches 1 and 16 (measure first); 2: the rest; default both."),
    networks: str | None = typer.Option(None, "--networks", help="Comma-separated zoo networks (default: the campaign's 46)."),
    resolutions: str = typer.Option("224,160", "--resolutions", help="Input resolutions (px)."),
    cache_dir: Path | None = _ZOO_CACHE,
    force: bool = _ZOO_FORCE,
) -> None:
    """Write the zoo measurement campaign's config list (module-family rows)."""
    from carb_lib.core.tables import write_table
    from carb_lib.families import zoo

    backup = _check_out(out, force, "carb zoo configs", ("config_id", "module", "module_kwargs"))
    df = zoo.campaign_configs(phase, networks, zoo.parse_ints(resolutions, "--resolutions"),
                              cache_dir=cache_dir)
    write_table(df.drop(columns="flops"), out, "--out", backup=backup)
    typer.echo(f"wrote {out}: {len(df)} configs of {df['module'].nunique()} networks, "
               f"{df['flops'].sum() / 1e12:.1f} TFLOP in all (one forward each); measure with "
               f"carb profile --configs {out} --threads 1 --out DIR")


@zoo_app.command("rss")
def zoo_rss(
    configs: Path = typer.Option(..., "--configs", help="Config list (carb zoo configs --out, or any list carb profile reads)."),
    out: Path = typer.Option(..., "--out", help="Table of the probe's rows (.parquet/.csv); configs already in it are skipped."),
    threads: int = typer.Option(1, "--threads", help="torch intra-op threads (the profiler's protocol uses 1)."),
    timeout_s: float = typer.Option(300.0, "--timeout-s", help="Per-config wall-clock cap in seconds."),
    force: bool = typer.Option(False, "--force", help="Start afresh over an --out that is not a table of this probe (kept as a numbered .bak)."),
) -> None:
    """Measure each config's peak RSS growth during its first forward, in a fresh process, beside the allocator's peak."""
    import os

    from carb_lib.core.safe_io import check_output, table_with
    from carb_lib.core.tables import next_backup_path
    from carb_lib.measure.campaign import read_config_list
    from carb_lib.measure.rss_probe import probe_configs

    if threads < 1 or not timeout_s > 0:
        raise ValueError(f"--threads must be >= 1 and --timeout-s > 0, got {threads}, {timeout_s}")
    # its own table is resumed (configs already in it skipped); anything else only with --force
    backup = check_output(out, "--out", inputs=[("--configs", configs)],
                          own=table_with("config_id", "rss_peak_growth_mib", "alloc_peak_mib"),
                          force=force, command="carb zoo rss", owns=("data",))
    if backup:
        kept = next_backup_path(out)
        os.replace(out, kept)
        typer.echo(f"kept the previous {out} as {kept}")
    df = probe_configs(read_config_list(configs), out, threads, timeout_s, echo=typer.echo)
    typer.echo(f"wrote {out}: {len(df)} rows; status {df['status'].value_counts().to_dict()}")


@zoo_app.command("time")
def zoo_time(
    networks: str = typer.Option(..., "--networks", help="Comma-separated zoo networks (carb zoo list), or all."),
    batches: str = _ZOO_BATCHES,
    precisions: str = _ZOO_PRECISIONS,
    resolutions: str = _ZOO_RES,
    threads: int = typer.Option(1, "--threads", help="torch intra-op threads of every timing (the stored rows' protocol: 1)."),
    keep_heap: bool = typer.Option(True, "--keep-heap/--default-heap", help="Keep this process's heap first, as the zoo rows were timed (default), or time with glibc's default heap."),
    budget_s: float = typer.Option(30.0, "--budget-s", help="Seconds per network and shape to time calls the cache lacks; calls left are flagged (untimed_share), never zero."),
    window_s: float = typer.Option(0.02, "--window-s", help="Least seconds of one timed window of a call."),
    n_windows: int = typer.Option(5, "--n-windows", help="Timed windows per call (their median is kept)."),
    law: bool = typer.Option(True, "--law/--no-law", help="Also print and write law_ms, the composition law fitted with this cache's protocol on this host (carb time --fit-law), where one was fitted."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Folder of the call-time cache (operator_calls/ in it; default $CARB_CACHE_DIR or ~/.cache/carb)."),
    out: Path | None = typer.Option(None, "--out", help="Also write the table (.csv/.parquet)."),
    force: bool = _ZOO_FORCE,
) -> None:
    """Latency of zoo networks on this machine from their own calls: each distinct call timed once and cached, summed; no fitted model."""
    from carb_lib.core.tables import write_table
    from carb_lib.families import zoo
    from carb_lib.kernels.composition import load_law
    from carb_lib.kernels.replay import CallCache, zoo_times

    backup = _check_out(out, force, "carb zoo time", ("network", "untimed_share"))
    names = zoo.resolve_names(networks)
    b, p = zoo.parse_ints(batches, "--batches"), zoo.parse_precisions(precisions)
    r = zoo.parse_ints(resolutions, "--resolutions")
    if threads < 1 or n_windows < 1 or not window_s > 0 or not budget_s >= 0:
        raise ValueError("--threads and --n-windows must be >= 1, --window-s > 0 and --budget-s "
                         f">= 0; got {threads}, {n_windows}, {window_s}, {budget_s}")
    cache = CallCache(cache_dir, threads=threads, keep_heap=keep_heap, window_s=window_s,
                      n_windows=n_windows, budget_s=budget_s)
    fitted = load_law(cache) if law else None
    t = zoo_times(names, batches=b, precisions=p, resolutions=r, cache=cache, law=fitted,
                  progress=True)
    for row in t.to_dict("records"):
        what = f"{row['network']:<24} b{row['batch']:<4} {row['precision']} {row['resolution']} px"
        calls = f"{row['n_distinct']} distinct calls, {row['n_timed_now']} timed now"
        if row["n_untimed"] == row["n_distinct"]:
            typer.echo(f"{what}  not timed ({calls}; no call within --budget-s {budget_s:g})")
            continue
        flag = (f"  [{100 * row['untimed_share']:.0f} % of its bytes untimed: up to "
                f"{row['upper_ms']:.1f} ms]" if row["n_untimed"] else "")
        by_law = (f"  law {row['law_ms']:.2f} ms" if fitted is not None
                  and row["law_ms"] == row["law_ms"] else "")
        typer.echo(f"{what}  {row['predicted_ms']:10.2f} ms{by_law}  ({calls}){flag}")
    if fitted is not None:
        typer.echo(f"law: {fitted.describe()}")
    typer.echo(f"{len(t)} rows {protocol_line(cache)}")
    if out is not None:
        write_table(t, out, "--out", backup=backup)
        typer.echo(f"wrote {out}")


def protocol_line(cache) -> str:
    """``on <cpu_id>, <n> thread(s), heap kept; call times in <file>``: what a call-time
    command's numbers hold for (``carb zoo time``, ``carb time``)."""
    heap = "heap kept" if cache.protocol["heap_kept"] else "default heap"
    return (f"on {cache.protocol['cpu_id']}, {cache.threads} thread(s), {heap}; call times in "
            f"{cache.path}")
