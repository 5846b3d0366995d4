"""The ``carb`` command line (typer). Each command imports its stage lazily, so that
``carb --help`` is fast and the profiling path works without the modelling libraries."""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from carb_lib.vocab import DEFAULT_COVERAGE

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="CARB: measure, explain, predict and screen the inference cost of CNNs.")


_STATE = {"debug": False}
#: Options of ``--module`` (family ``module``: a user network), shared by profile/predict/screen.
_MODULE = typer.Option(None, "--module", help="A user network instead of a config list: its "
                       "factory, package.module:function or path/to/file.py:function.")
_INPUT_SHAPE = typer.Option(None, "--input-shape", help="With --module: one input sample's "
                            "shape, C,H,W.")
_MODULE_KWARGS = typer.Option("{}", "--module-kwargs", help="With --module: the factory's "
                              "keyword arguments, a JSON object.")
_BATCHES = typer.Option("1", "--batches", help="With --module: batch sizes, e.g. 1,8,32.")
_PRECISIONS = typer.Option("fp32", "--precisions", help="With --module: fp32,fp16.")
#: Exceptions that mean the user's input or environment is wrong: one line, exit code 1.
#: (The project's own errors derive from these: SchemaError, TableError, DatasetError,
#: ConfigError, ConfigListError are ValueErrors; ReproduceError, ReadmeError,
#: FolderLockedError, TelemetryError are RuntimeErrors; a missing optional dependency is an
#: ImportError.)
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, LookupError, OSError, RuntimeError,
                                                ImportError)
#: Loggers the CLI shows: the ``carb`` hierarchy (``carb.campaign``, ...) and module loggers
#: named after the package (``carb_lib.*``).
LOGGERS: tuple[str, ...] = ("carb", "carb_lib")


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of the record (test runners swap it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):  # noqa: D102
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def configure_logging(debug: bool = False) -> None:
    """Show the library's log records on stderr as plain lines: INFO and above, or DEBUG
    with ``debug``. Idempotent (one handler per logger, whatever the number of calls)."""
    level = logging.DEBUG if debug else logging.INFO
    for name in LOGGERS:
        log = logging.getLogger(name)
        log.setLevel(level)
        if not any(isinstance(h, _StderrHandler) for h in log.handlers):
            handler = _StderrHandler()
            handler.setFormatter(logging.Formatter("%(message)s"))
            log.addHandler(handler)


def _alias(value: Any, old_value: Any, old: str, new: str, default: Any = None) -> Any:
    """The value of option ``new`` given its deprecated hidden spelling ``old``: ``old_value``
    (with a one-line deprecation warning) when only the old spelling was used."""
    if old_value is None:
        return value
    if value != default:
        raise ValueError(f"{old} and {new} are the same option; give {new} only")
    typer.secho(f"warning: {old} is deprecated; use {new}", fg=typer.colors.YELLOW, err=True)
    return old_value


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 2000 else text[:2000] + " ..."


def _error_path(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The one CLI error path: a user error prints ``error: <message>`` (one line naming the
    file, row, column or option) and exits 1; any other exception prints one line and exits
    2. ``carb --debug COMMAND`` shows the traceback instead."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, KeyboardInterrupt, SystemExit):
            raise
        except USER_ERRORS as exc:
            if _STATE["debug"]:
                raise
            typer.secho(f"error: {_one_line(exc)}", fg=typer.colors.RED, err=True)
            raise typer.Exit(1) from None
        except Exception as exc:
            if _STATE["debug"]:
                raise
            typer.secho(
                f"internal error: {type(exc).__name__}: {_one_line(exc)} "
                "(rerun with carb --debug ... for the traceback)",
                fg=typer.colors.RED,
                err=True,
            )
            raise typer.Exit(2) from None

    return run


@app.callback()
def main(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors."),
) -> None:
    """CARB: measure, explain, predict and screen the inference cost of CNNs."""
    _STATE["debug"] = debug
    configure_logging(debug)


@app.command()
def reproduce(
    profile: str = typer.Option("full", help="Profile of papermill_runs.yaml: quick or full."),
    only: list[str] | None = typer.Option(None, help="Run only notebooks whose name contains this."),
    runs_file: Path = typer.Option(Path("papermill_runs.yaml"), help="The run list."),
    run_dir: Path | None = typer.Option(None, help="Folder for executed notebooks (default runs/<profile>-<time>)."),
    out_root: Path | None = typer.Option(None, help="Redirect fig_dir/results_dir parameters under this folder."),
    update_readme: bool | None = typer.Option(None, "--update-readme/--no-update-readme",
                                              help="Rewrite README.md's result tables from "
                                              "results/ (default: for a full run of every "
                                              "notebook into results/)."),
) -> None:
    """Run the study's notebooks with papermill, in order (plus an HTML page of each and an
    index.html in the run folder)."""
    from carb_lib.reproduce import REPO_ROOT, run_profile

    run_profile(profile, runs_file=runs_file, only=only, run_dir=run_dir, out_root=out_root)
    if update_readme is None:
        update_readme = profile == "full" and not only and out_root is None
    if update_readme:
        from carb_lib.readme import update_readme as _update

        changed = _update(REPO_ROOT / "README.md", REPO_ROOT / "results")
        typer.echo("README.md result tables " + ("rewritten from results/" if changed
                                                 else "already match results/"))


@app.command("readme")
def readme_cmd(
    check: bool = typer.Option(False, "--check", help="Only check; exit 1 if a table is stale."),
    readme: Path = typer.Option(Path("README.md"), help="The README to update."),
    results_dir: Path = typer.Option(Path("results"), help="Where the result tables are."),
) -> None:
    """Write README.md's result tables (between <!-- carb:NAME --> markers) from results/."""
    from carb_lib.readme import stale_blocks, update_readme

    if check:
        stale = stale_blocks(readme, results_dir)
        if stale:
            typer.secho(f"stale README blocks: {', '.join(stale)} (run `carb readme`)",
                        fg=typer.colors.RED, err=True)
            raise typer.Exit(1)
        typer.echo("README result tables match results/")
        return
    changed = update_readme(readme, results_dir)
    typer.echo("README.md rewritten" if changed else "README.md already up to date")


@app.command()
def publish(
    run_dir: Path = typer.Argument(..., help="A run folder of `carb reproduce` (runs/full-...)."),
    dest: Path = typer.Option(Path("docs/run"), help="Where the pages go (replaced)."),
    max_image_width: int = typer.Option(900, help="Shrink wider PNG outputs to this width (px)."),
    max_mb: float = typer.Option(10.0, help="Fail if the pages exceed this size (MB)."),
) -> None:
    """Publish a run's executed notebooks as self-contained HTML pages with an index."""
    from carb_lib.reproduce import publish_run

    written = publish_run(run_dir, dest, max_image_width=max_image_width, max_mb=max_mb)
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file()) / 1e6
    typer.echo(f"{len(written)} pages in {dest} ({size:.1f} MB)")


# --- commands added by other stages go below this line -------------------------------------


# --- screening (issue 7) ---
@app.command()
def screen(
    model: Path = typer.Option(..., "--model", help="Fitted model (carb_lib.ensemble.save_model). "
                               "With --model-b: platform A's model, used to rank first."),
    model_b: Path | None = typer.Option(None, "--model-b", help="Cross-platform: the "
                                           "deployment platform's model that rescores the top N."),
    top_n: int | None = typer.Option(None, "--top-n", help="Candidates kept by --model's "
                                        "ranking (with --model-b)."),
    rank_by: str | None = typer.Option(None, "--rank-by", help="Metric of the A-ranking "
                                          "(default: first cost objective) or 'pareto'."),
    candidates: str = typer.Option("grid", help="grid | extended (69,120 distinct configs) | extended-dense (94.8 million) | FILE (.csv/.parquet)."),
    n_extended: int = typer.Option(100_000, help="Sample size for --candidates extended / extended-dense."),
    seed: int = typer.Option(0, help="Seed for --candidates extended / extended-dense."),
    budget: list[str] | None = typer.Option(None, "--budget", help="e.g. 'latency_ms<=10', "
                                               "'energy_j_per_sample<=0.5' (repeatable)."),
    objective: list[str] | None = typer.Option(None, "--objective", help="Cost to minimise, "
                                                  "or max:COLUMN (repeatable)."),
    quality: str | None = typer.Option(None, help="Column to maximise (default: params as a "
                                          "capacity proxy)."),
    no_quality: bool = typer.Option(False, "--no-quality", help="Cost-only front."),
    coverage: float = typer.Option(DEFAULT_COVERAGE, help="Conformal coverage of the upper bounds."),
    k: int = typer.Option(10, help="Shortlist size."),
    method: str = typer.Option("crowding", help="Shortlist ranking: crowding | knee."),
    out: Path = typer.Option(Path("results/screening/shortlist.csv"), help="Shortlist table "
                             "(.csv/.parquet); _front and _summary.json are written beside it."),
    fig_dir: Path | None = typer.Option(None, help="Also save the front figure here."),
    measured: Path | None = typer.Option(None, help="Held-out measured rows (.csv/.parquet): "
                                            "score the screening against them."),
    validate: bool = typer.Option(False, "--validate", help="Re-profile the shortlist on this "
                                  "machine and report measured vs predicted."),
    device: str = typer.Option("auto", help="Device for --validate: auto | cuda | cpu."),
    cluster: str | None = typer.Option(None, "--cluster", help="Screen on a Dask cluster: local:N | cuda | slurm:FILE.yaml | tcp://HOST:PORT (needs carb_lib[dask]); stage 1 per partition on the workers."),
    partition_size: int = typer.Option(1_000_000, "--partition-size", help="With --cluster: candidates per partition (bounds worker memory)."),
    cluster_timeout_s: float = typer.Option(10.0, "--cluster-timeout-s", help="How long to try reaching a tcp:// scheduler."),
    module: str | None = _MODULE,
    input_shape: str | None = _INPUT_SHAPE,
    module_kwargs: str = _MODULE_KWARGS,
    batches: str = _BATCHES,
    precisions: str = _PRECISIONS,
) -> None:
    """Screen candidate configs against deployment budgets and print the funnel."""
    from carb_lib import screening as scr
    from carb_lib.ensemble import load_model

    if cluster is not None:
        from carb_lib.distributed import parse_cluster_spec, require_dask

        parse_cluster_spec(cluster)
        if model_b is not None:
            raise ValueError("--cluster does not run the cross-platform variant (--model-b)")
        if partition_size < 1:
            raise ValueError(f"--partition-size must be >= 1, got {partition_size}")
        require_dask()
    m_first = load_model(model)
    m_deploy, m_a = (load_model(model_b), m_first) if model_b is not None else (m_first, None)
    if m_a is None and top_n is not None:
        raise ValueError("--top-n needs --model-b (cross-platform screening)")
    spec = scr.DeploymentSpec(
        platform=getattr(m_deploy, "platform_", None), budgets=budget or [],
        objectives=objective or ["latency_ms", "peak_mem_mib"], quality=quality,
        use_quality=not no_quality, coverage=coverage, k=k, shortlist_method=method,
    )
    from carb_lib.families.module import cli_configs

    cands = cli_configs(module, input_shape, module_kwargs, batches, precisions)
    if cands is not None and (candidates != "grid" or cluster is not None):
        raise ValueError("--module takes neither --candidates nor --cluster")
    if cluster is None:
        if cands is None:
            cands = scr.load_candidates(candidates, n_extended=n_extended, seed=seed)
        result = scr.screen(m_deploy, cands, spec, model_a=m_a, top_n=top_n, rank_by=rank_by)
    else:
        from carb_lib.distributed import open_cluster, screen_on_cluster

        with open_cluster(cluster, timeout_s=cluster_timeout_s) as client:
            result = screen_on_cluster(m_deploy, candidates, spec, client, n_extended=n_extended,
                                       seed=seed, partition_size=partition_size)
    paths = result.write(out)
    typer.echo(result.summary_text())
    typer.echo("wrote " + ", ".join(str(p) for p in paths))
    if fig_dir is not None:
        from carb_lib import plots

        fig = plots.plot_screening_front(result)
        typer.echo("wrote " + ", ".join(map(str, plots.save_figure(fig, "screening_front",
                                                                     fig_dir))))
    if measured is not None:
        held_out = scr.load_candidates(measured)
        v = scr.validate_against_measured(m_deploy, held_out, spec, model_a=m_a, top_n=top_n)
        typer.echo(scr.format_validation(v))
    if validate:
        dev = device
        if dev == "auto":
            import torch

            dev = "cuda" if torch.cuda.is_available() else "cpu"
        table, summ = scr.validate_on_hardware(result, dev)
        hw = out.with_name(f"{out.stem}_hardware.csv")
        table.to_csv(hw, index=False)
        typer.echo(scr.format_hardware(table, summ))
        typer.echo(f"wrote {hw}")
# --- end screening ---


# --- measurement: profile / merge / noise (issue 3) ---
@app.command()
def profile(
    out: Path = typer.Option(Path("runs/campaign"), "--out", help="Folder of part files (rerun resumes)."),
    device: str = typer.Option("cpu", "--device", help="cpu | cuda | cuda:N."),
    platform: str | None = typer.Option(None, "--platform", help="Platform name of the rows, e.g. cpu_epyc_1t (default: from the device)."),
    n_sample: int | None = typer.Option(None, "--n-sample", help="Seeded stratified sample of this many configs (default: all)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the sample and of the measurement order."),
    configs: Path | None = typer.Option(None, "--configs", help="Config list (.parquet/.csv of config columns) instead of the paper grid."),
    shard: str | None = typer.Option(None, "--shard", help="Run only shard i of n, e.g. 0/4 (split by config_id hash)."),
    time_budget_s: float | None = typer.Option(None, "--time-budget-s", help="Stop cleanly after this many seconds."),
    max_gflops: float | None = typer.Option(None, "--max-gflops", help="Compute cap: skip (status skipped) configs whose whole-batch FLOPs exceed this many GFLOP."),
    sample_under_cap: bool = typer.Option(False, "--sample-under-cap", help="Draw the --n-sample sample only from configs within --max-gflops."),
    threads: int | None = typer.Option(None, "--threads", help="torch intra-op threads (recorded)."),
    ref_every: int = typer.Option(50, "--ref-every", help="Reference config (and GPU idle power) every N configs; 0 = off."),
    timeout_s: float = typer.Option(300.0, "--timeout-s", help="Per-config wall-clock cap in seconds."),
    cooldown_s: float | None = typer.Option(None, "--cooldown-s", help="GPU cool-down seconds (default 1)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="tqdm progress bar."),
    protocol: str | None = typer.Option(None, "--protocol", help="Protocol settings as JSON, inline or a .json file: fields of carb_lib.protocol.Protocol, e.g. '{\"cpu_min_window_s\": 0.5, \"max_windows\": 12}' (threads, timeout and cool-down have their own options). Default: the study's protocol; given settings are written to OUT/protocol.json."),
    time_budget_old: float | None = typer.Option(None, "--time-budget", hidden=True),
    timeout_old: float | None = typer.Option(None, "--timeout", hidden=True),
    cooldown_old: float | None = typer.Option(None, "--cooldown", hidden=True),
    cluster: str | None = typer.Option(None, "--cluster", help="Measure on a Dask cluster: local:N | cuda | slurm:FILE.yaml | tcp://HOST:PORT (needs carb_lib[dask]); the client writes the same part files."),
    cluster_timeout_s: float = typer.Option(10.0, "--cluster-timeout-s", help="How long to try reaching a tcp:// scheduler."),
    max_tries: int = typer.Option(3, "--max-tries", help="With --cluster: worker deaths a config may cause before it gets a status=error row."),
    chunk_size: int = typer.Option(1, "--chunk-size", help="With --cluster: configs per task."),
    passes: int = typer.Option(1, "--passes", help="Measure the configs this many times, a whole pass apart, into OUT/pass<p>/; `carb merge` keeps each config's fastest pass (a host whose speed swings: carb_lib.passes)."),
    module: str | None = _MODULE,
    input_shape: str | None = _INPUT_SHAPE,
    module_kwargs: str = _MODULE_KWARGS,
    batches: str = _BATCHES,
    precisions: str = _PRECISIONS,
) -> None:
    """Measure configs on one device into resumable Parquet parts (then `carb merge`)."""
    from carb_lib.campaign import run_campaign, sample_configs
    from carb_lib.profiling import Protocol

    time_budget = _alias(time_budget_s, time_budget_old, "--time-budget", "--time-budget-s")
    timeout = _alias(timeout_s, timeout_old, "--timeout", "--timeout-s", default=300.0)
    cooldown = _alias(cooldown_s, cooldown_old, "--cooldown", "--cooldown-s")
    for name, value, lo in (("--n-sample", n_sample, 1), ("--threads", threads, 1),
                            ("--ref-every", ref_every, 0), ("--passes", passes, 1)):  # fmt: skip
        if value is not None and value < lo:
            raise ValueError(f"{name} must be >= {lo}, got {value}")
    for name, value in (("--timeout-s", timeout), ("--time-budget-s", time_budget),
                        ("--max-gflops", max_gflops), ("--cooldown-s", cooldown)):  # fmt: skip
        if value is not None and not value > 0 and not (name == "--cooldown-s" and value == 0):
            raise ValueError(f"{name} must be > 0 seconds/GFLOP, got {value}")
    from carb_lib.protocol import protocol_settings

    settings = protocol_settings(protocol) if protocol is not None else {}
    own = sorted({"threads", "timeout_s", "cooldown_s"} & set(settings))
    if own:
        raise ValueError(f"--protocol: set {own} with their own options (--threads, --timeout-s, "
                         "--cooldown-s), not in the JSON")
    kw = {**settings, "threads": threads, "timeout_s": timeout}
    if cooldown is not None:
        kw["cooldown_s"] = cooldown
    if cluster is not None:
        _profile_on_cluster(cluster, cluster_timeout_s, device, max_tries, chunk_size)
    from carb_lib.families.module import cli_configs

    df = cli_configs(module, input_shape, module_kwargs, batches, precisions)
    if df is not None and configs is not None:
        raise ValueError("give --configs or --module, not both")
    if df is None:
        df = sample_configs(n_sample, seed, configs, max_gflops, sample_under_cap)
    if settings:  # a non-default protocol leaves its trace beside the part files
        import json

        out.mkdir(parents=True, exist_ok=True)
        (out / "protocol.json").write_text(json.dumps(Protocol(**kw).to_dict(), indent=1) + "\n")
        typer.echo(f"protocol: {settings} (all settings in {out / 'protocol.json'})", err=True)
    common = dict(platform=platform, seed=seed, ref_every=ref_every, time_budget_s=time_budget,
                  max_gflops=max_gflops, shard=shard, progress=progress)
    if passes > 1:
        if cluster is not None:
            raise ValueError("--passes measures on this machine; it does not combine with --cluster")
        from carb_lib.passes import run_passes

        for p, r in enumerate(run_passes(df, out, passes, device, Protocol(**kw), **common)):
            typer.echo(f"pass {p}: counts {r.counts}; drift {r.drift}")
        return
    if cluster is None:
        res = run_campaign(df, out, device, Protocol(**kw), **common)
    else:
        from carb_lib.distributed import open_cluster, run_cluster_campaign

        with open_cluster(cluster, timeout_s=cluster_timeout_s) as client:
            res = run_cluster_campaign(df, out, client, device, Protocol(**kw), **common,
                                       max_tries=max_tries, chunk_size=chunk_size)
        typer.echo(f"cluster: {res.workers} worker(s), platform(s) {res.platforms}, "
                   f"{res.n_tasks} task(s), {res.n_killed} config(s) killed their worker "
                   f"{max_tries} times, median per-task overhead {res.task_overhead_ms:.1f} ms")
    typer.echo(f"counts {res.counts}; reference runs {res.n_reference}; drift {res.drift}")


def _profile_on_cluster(cluster: str, timeout_s: float, device: str, max_tries: int,
                        chunk_size: int) -> None:
    """Check the cluster options before anything is read or started."""
    from carb_lib.distributed import parse_cluster_spec, require_dask

    spec = parse_cluster_spec(cluster)
    if spec.kind == "cuda" and device != "cuda":
        raise ValueError(f"--cluster cuda runs one worker per GPU: pass --device cuda, not {device!r}")
    for name, value in (("--max-tries", max_tries), ("--chunk-size", chunk_size)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if not timeout_s > 0:
        raise ValueError(f"--cluster-timeout-s must be > 0 seconds, got {timeout_s}")
    require_dask()


@app.command()
def merge(
    parts_dir: Path = typer.Argument(..., help="Campaign folder of part files."),
    out: Path = typer.Argument(..., help="Dataset to write or extend, e.g. data/<platform>.parquet."),
    existing: Path | None = typer.Option(None, "--existing", help="Extend this dataset (its rows count as earlier); default: OUT itself if it exists."),
    reference_out: Path | None = typer.Option(None, "--reference-out", help="Also write the reference-config rows here."),
    force: bool = typer.Option(False, "--force", help="Overwrite OUT with the parts alone, without a backup."),
    allow_mixed_platforms: bool = typer.Option(False, "--allow-mixed-platforms", help="Accept rows of several platforms in one file."),
) -> None:
    """Merge part files into a validated dataset (extending OUT, keeping OUT.bak)."""
    from carb_lib.campaign import merge_parts

    df = merge_parts(parts_dir, out, existing=existing, reference_out=reference_out,
                     force=force, allow_mixed_platforms=allow_mixed_platforms)  # fmt: skip
    typer.echo(f"wrote {out}: {len(df)} rows; status {df['status'].value_counts().to_dict()}")


@app.command()
def noise(
    out: Path = typer.Option(Path("results/noise"), "--out", help="Folder for noise_rows.parquet and noise_summary.csv."),
    device: str = typer.Option("cpu", "--device", help="cpu | cuda | cuda:N."),
    platform: str | None = typer.Option(None, "--platform", help="Platform name of the rows."),
    n_configs: int = typer.Option(10, "--n-configs", help="M: configs (seeded stratified sample)."),
    repeats: int = typer.Option(3, "--repeats", help="K: measurements per config and mode."),
    mode: list[str] | None = typer.Option(None, "--mode", help="back_to_back and/or spread (default both)."),
    seed: int = typer.Option(0, "--seed", help="Sample seed."),
    max_gflops: float | None = typer.Option(1.0, "--max-gflops", help="Sample only configs within this many GFLOP."),
    configs: Path | None = typer.Option(None, "--configs", help="Config list instead of a grid sample."),
    threads: int | None = typer.Option(None, "--threads", help="torch intra-op threads."),
    in_process: bool = typer.Option(False, "--in-process", help="Measure in this process instead of one fresh process per measurement."),
    spread_gap_s: float = typer.Option(0.0, "--spread-gap-s", help="Idle seconds between the rounds of the spread mode."),
    round_process: bool = typer.Option(False, "--round-process", help="Spread mode: one fresh process per round (all configs) instead of per measurement."),
    spread_gap_old: float | None = typer.Option(None, "--spread-gap", hidden=True),
) -> None:
    """Re-measure M configs K times (separate processes; back to back and spread); CV per target."""
    from carb_lib.campaign import noise_study, sample_configs
    from carb_lib.profiling import Protocol

    spread_gap = _alias(spread_gap_s, spread_gap_old, "--spread-gap", "--spread-gap-s", default=0.0)
    if spread_gap < 0:
        raise ValueError(f"--spread-gap-s must be >= 0 seconds, got {spread_gap}")
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"--out {out} is a file; give a folder")
    out.mkdir(parents=True, exist_ok=True)
    if not os.access(out, os.W_OK):
        raise PermissionError(f"--out {out} is not writable")
    df = sample_configs(n_configs, seed, configs, max_gflops, sample_under_cap=max_gflops is not None)
    rows, summary = noise_study(
        df, device, Protocol(threads=threads), repeats=repeats,
        modes=tuple(mode or ("back_to_back", "spread")), separate_processes=not in_process,
        platform=platform, spread_gap_s=spread_gap, spread_process_per_round=round_process,
    )
    out.mkdir(parents=True, exist_ok=True)
    rows.to_parquet(out / "noise_rows.parquet", index=False)
    summary.to_csv(out / "noise_summary.csv", index=False)
    typer.echo(summary.to_string(index=False))
    typer.echo(f"wrote {out / 'noise_rows.parquet'}, {out / 'noise_summary.csv'}")
@app.command()
def audit(
    dataset: Path = typer.Argument(..., help="Measured dataset (.parquet) to audit."),
    n: int = typer.Option(200, "--n", help="Rows to re-measure (seeded random sample of ok rows)."),
    seed: int = typer.Option(0, "--seed", help="Sample seed."),
    device: str = typer.Option("cpu", "--device", help="cpu | cuda | cuda:N."),
    out: Path = typer.Option(Path("results/measurement"), "--out", help="Folder for <platform>_audit_rows.parquet, <platform>_audit.csv and <platform>_noise_by_regime.csv."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="tqdm progress bar."),
) -> None:
    """Re-measure a seeded random sample of a dataset in fresh processes; print the agreement."""
    from carb_lib.audit import audit as run_audit
    from carb_lib.audit import format_agreement, noise_by_regime
    from carb_lib.dataset import read_dataset

    if not dataset.is_file():
        raise FileNotFoundError(f"{dataset}: no such dataset file")
    df = read_dataset(dataset)
    rows, ag = run_audit(df, n, seed=seed, device=device, progress=progress)
    plat = str(df["platform"].iloc[0])
    out.mkdir(parents=True, exist_ok=True)
    rows.to_parquet(out / f"{plat}_audit_rows.parquet", index=False)
    import pandas as pd

    pd.DataFrame([ag.to_dict()]).to_csv(out / f"{plat}_audit.csv", index=False)
    noise_by_regime(df, rows).to_csv(out / f"{plat}_noise_by_regime.csv", index=False)
    typer.echo(format_agreement(ag, plat))
    typer.echo(f"wrote {out / f'{plat}_audit_rows.parquet'}, {out / f'{plat}_audit.csv'}")


@app.command("kernels")
def kernels_cmd(
    out: Path = typer.Option(..., "--out", help="New Parquet file for the timed operators, e.g. data/kernels/<platform>.parquet."),
    n: int = typer.Option(3000, "--n", help="Operators drawn from the generic grid (conv, depthwise, linear, memory-bound)."),
    seed: int = typer.Option(0, "--seed", help="Sample seed."),
    sampler: int | None = typer.Option(None, "--sampler", help="Sampler version (default: the current one; 1-3 reproduce earlier draws)."),
    threads: int = typer.Option(1, "--threads", help="torch intra-op threads (the profiler's protocol uses 1)."),
    platform: str | None = typer.Option(None, "--platform", help="Platform name of the rows (default: the CPU's)."),
    append: bool = typer.Option(False, "--append", help="Add the operators to the existing --out (same platform, CPU, threads and PyTorch; a seed it does not hold)."),
    anchors: bool = typer.Option(True, "--anchors/--no-anchors", help="Time the fixed anchor operators before, during (--anchor-every) and after the draw, into <out>.anchors.parquet (the host's speed, measured)."),
    anchor_every: int = typer.Option(500, "--anchor-every", help="Also time the anchors every N operators of the draw (0: before and after only); a session's speed is the median of its sittings."),
    anchors_only: bool = typer.Option(False, "--anchors-only", help="Time only the anchor operators, beside the existing --out, and print each sitting's speed (e.g. at the start of a session)."),
    sittings: int = typer.Option(5, "--sittings", help="With --anchors-only: sittings timed back to back (~4 s each); the session's speed is their median."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="tqdm progress bar."),
    keep_heap: bool = typer.Option(True, "--keep-heap/--default-heap", help="Keep the process's heap first (no buffer mapped afresh per call, as the protocol's cpu_keep_heap, the default since session 30); --default-heap times as before. Rows record heap_kept."),
) -> None:
    """Characterize this CPU's operators: time n generic operators alone (the kernel latency law's input)."""
    from carb_lib.kernel_draw import time_anchors_only, time_draw

    if anchors_only:
        time_anchors_only(out, sittings=sittings, threads=threads, platform=platform,
                          echo=typer.echo)
        return
    time_draw(out, n=n, seed=seed, sampler=sampler, threads=threads, platform=platform,
              append=append, anchors=anchors, anchor_every=anchor_every, progress=progress,
              keep_heap=keep_heap, echo=typer.echo)


# --- end measurement ---


# --- transfer (issue 6) ---
@app.command()
def transfer(
    source: list[Path] = typer.Option(..., "--source", help="Measurements on source platforms "
                                      "(.csv/.parquet; repeat the option for several files)."),
    target_samples: Path = typer.Option(..., "--target-samples", help="k measured rows on the "
                                        "target platform (.csv/.parquet)."),
    query: Path = typer.Option(..., "--query", help="Configs to predict (.csv/.parquet)."),
    out: Path = typer.Option(..., "--out", help="Predictions (.csv/.parquet) with config_id."),
    target: str = typer.Option("latency_ms", "--target", help="Target column."),
    method: str = typer.Option("blend", "--method", help="blend | ridge | loglinear | "
                               "target_only | flops (see carb_lib.transfer)."),
) -> None:
    """Few-shot prediction of a target platform from source measurements and k target samples."""
    import pandas as pd

    from carb_lib.datasets import load_measurements, read_configs
    from carb_lib.scaling_data import CONFIG_COLS
    from carb_lib.tables import table_format, write_table
    from carb_lib.transfer import few_shot_predict

    table_format(out, "--out")
    src = pd.concat([load_measurements(p) for p in source], ignore_index=True)
    samples = load_measurements(target_samples)
    q = read_configs(query)
    if "batch" not in q.columns:  # configs without a batch: the target samples' batch
        from carb_lib.space import add_config_ids

        q = add_config_ids(q.assign(batch=int(samples["batch"].iloc[0])))
    pred = few_shot_predict(src, samples, q, target=target, method=method)
    res = pd.DataFrame({"config_id": q["config_id"].to_numpy()})
    for c in CONFIG_COLS:
        if c in q.columns:
            res[c] = q[c].to_numpy()
    res["platform"] = samples["platform"].iloc[0]
    res[f"{target}_pred"] = pred
    res["method"] = method
    write_table(res, out, "--out")
    typer.echo(f"wrote {out}: {len(res)} predictions of {target} on "
               f"{res['platform'].iloc[0]} ({method}, k={len(samples)})")


@app.command("convert-help")
def convert_help_cmd(
    folder: Path = typer.Option(..., "--folder",
                                help="HELP's data/nasbench201 latency folder (required)."),
    out: Path = typer.Option(Path("data/external/help_nb201.parquet"), "--out",
                             help="Parquet to write (LICENSE-HELP is copied beside it)."),
) -> None:
    """Convert HELP's NAS-Bench-201 device latencies (MIT) into CARB rows."""
    from carb_lib.datasets import convert_help

    path = convert_help(folder, out)
    typer.echo(f"wrote {path} and {path.parent / 'LICENSE-HELP'}")
# --- end transfer ---


# --- carb ensemble: fit / predict (issue 5) ---
@app.command()
def fit(
    data: Path = typer.Option(..., "--data", help="Measured dataset (.parquet/.csv; status=='ok' rows are used)."),
    out: Path = typer.Option(..., "--out", help="Model file to write (joblib; metadata in <out>.json)."),
    feature_set: str = typer.Option("static", "--feature-set", help="static | static+telemetry (GPU only) | shared (no family encoding: predicts families it was not fitted on)."),
    platform: str | None = typer.Option(None, "--platform", help="Platform to fit when the file has several."),
    quick: bool = typer.Option(False, "--quick", help="Small models (PRESETS['quick']: 40 trees, 3 folds, 1 thread)."),
    n_jobs: int = typer.Option(2, "--n-jobs", help="Threads per learner (ignored with --quick)."),
    preset: str = typer.Option("default", "--preset", help="Model preset (carb_lib.ensemble.PRESETS): default (screening-sized) | paper (the paper's sizes, slow) | fast | quick | test (unit-test size, not for results). Ignored with --quick."),
    latency_law: str = typer.Option("roofline", "--latency-law", help="Latency base law: roofline (FLOPs, bytes, layers; the default, chosen on validation) | kernel (the platform's operators timed alone, summed; extrapolates to unseen batches and families; needs --kernel-bench)."),
    kernel_bench: Path | None = typer.Option(None, "--kernel-bench", help="Timed operators of this platform (carb kernels --out FILE) for --latency-law kernel; the model keeps what it learned from them."),
    cache_probe: Path | None = typer.Option(None, "--cache-probe", help="This machine's read-bandwidth probe (.csv, scripts/kernel_cold_weights.py --evict weights), with --kernel-bench: weights of networks past its cache are read from memory, added to each operator's time."),
) -> None:
    """Fit CARB on a measured dataset and save it (one model per platform)."""
    import warnings

    from carb_lib.dataset import validate_table
    from carb_lib.ensemble import PRESETS, CARBRegressor, save_model
    from carb_lib.evaluation import prepare_dataset
    from carb_lib.kernels import read_bench
    from carb_lib.tables import read_table

    # the one validator: configs by their family, costs of ok rows > 0, one row per config
    raw = validate_table(read_table(data, "--data"), complete=False, what=f"--data {data}",
                         unique=True)  # fmt: skip
    if platform is None and "platform" in raw.columns:
        plats = sorted(raw.loc[raw.get("status", "ok") == "ok", "platform"].dropna().astype(str).unique())
        if len(plats) > 1:
            raise ValueError(f"{data} holds several platforms {plats}: choose one with --platform")
    df = prepare_dataset(raw, platform)
    if feature_set == "shared":  # the family-agnostic extras are not stored by older campaigns
        from carb_lib.features import fill_static_features
        from carb_lib.vocab import EXTRA_STATIC_FEATURES

        df = fill_static_features(df, EXTRA_STATIC_FEATURES)
    if preset not in PRESETS:
        raise ValueError(f"--preset must be one of {sorted(PRESETS)}, got {preset!r}")
    if latency_law not in ("roofline", "kernel"):
        raise ValueError(f"--latency-law must be roofline or kernel, got {latency_law!r}")
    if (latency_law == "kernel") != (kernel_bench is not None):
        raise ValueError("--latency-law kernel and --kernel-bench FILE go together (the kernel "
                         "law sums this platform's timed operators: carb kernels --out FILE)")
    params = dict(PRESETS["quick"]) if quick else {**PRESETS[preset], "n_jobs": n_jobs}
    if cache_probe is not None and kernel_bench is None:
        raise ValueError("--cache-probe FILE needs --latency-law kernel and --kernel-bench FILE")
    if kernel_bench is not None:
        probe = None if cache_probe is None else read_table(cache_probe, "--cache-probe")
        params.update(latency_law="kernel", kernel_bench=read_bench(kernel_bench),
                      kernel_cache_probe=probe)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = CARBRegressor(feature_set=feature_set, **params).fit(df)
    for w in caught:
        typer.secho(f"warning: {w.message}", fg=typer.colors.YELLOW, err=True)
    save_model(model, out)
    typer.echo(
        f"wrote {out} (+ {out.name}.json): platform {model.platform_}, targets {model.targets_}, "
        f"skipped {model.skipped_targets_}, {model.n_train_} rows, feature set {model.feature_set}, "
        f"preset {'quick' if quick else preset}, latency law {latency_law}"
    )


@app.command()
def predict(
    model: Path = typer.Option(..., "--model", help="Model written by `carb fit`."),
    configs: Path | None = typer.Option(None, "--configs", help="Configs (.parquet/.csv); static features are computed if absent (or --module)."),
    out: Path = typer.Option(..., "--out", help="Predictions (.parquet/.csv): configs + {t}, {t}_lo, {t}_hi."),
    coverage: float = typer.Option(DEFAULT_COVERAGE, "--coverage", help="Nominal coverage of the conformal intervals."),
    module: str | None = _MODULE,
    input_shape: str | None = _INPUT_SHAPE,
    module_kwargs: str = _MODULE_KWARGS,
    batches: str = _BATCHES,
    precisions: str = _PRECISIONS,
) -> None:
    """Predict cost and conformal intervals for configs with a saved CARB model."""
    import numpy as np
    import pandas as pd

    from carb_lib.ensemble import STATIC_FEATURES, load_model
    from carb_lib.families import DEFAULT_FAMILY
    from carb_lib.space import validate_config_frame
    from carb_lib.tables import read_table, table_format, write_table
    from carb_lib.vocab import EXTRA_STATIC_FEATURES

    table_format(out, "--out")
    if not 0 < coverage < 1:
        raise ValueError(f"--coverage must be in (0, 1), got {coverage}")
    from carb_lib.families import get_family
    from carb_lib.families.module import cli_configs

    df = cli_configs(module, input_shape, module_kwargs, batches, precisions)
    if (df is None) == (configs is None):
        raise ValueError("give --configs FILE or --module SPEC --input-shape C,H,W (one of them)")
    m = load_model(model)
    if df is None:
        df = read_table(configs, "--configs").reset_index(drop=True)
    if "family" not in df.columns:
        df["family"] = DEFAULT_FAMILY
    validate_config_frame(df, f"--configs {configs}" if configs else f"--module {module}")
    known = getattr(m, "families_", None)
    shared = getattr(m, "feature_set", None) == "shared"  # no family encoding: any family
    if known and not shared:  # a family without config encoding (module): from its features
        other = sorted(f for f in set(df["family"].astype(str)) - set(known)
                       if not get_family(f).predict_unseen)
        if other:
            first = int(np.flatnonzero(df["family"].astype(str).isin(other).to_numpy())[0])
            raise ValueError(f"--configs {configs}: row {first}: family {other[0]!r} was never "
                             f"seen by this model (trained on {known}); fit one on that family")  # fmt: skip
    need = (*STATIC_FEATURES, *(EXTRA_STATIC_FEATURES if shared else ()))
    if not all(c in df.columns for c in need):
        from carb_lib.features import with_static_features

        df = with_static_features(df)
    pred = m.predict_interval(df, coverage=coverage)
    # predictions never overwrite measured columns of the input: they are named *_pred
    rename = {}
    for t in m.targets_:
        for suffix in ("", "_lo", "_hi"):
            if f"{t}{suffix}" in pred.columns:
                rename[f"{t}{suffix}"] = f"{t}_pred{suffix}"
    pred = pred.rename(columns=rename)
    pred["model_platform"] = str(m.platform_)
    keep = [c for c in df.columns if c not in pred.columns]
    write_table(pd.concat([df[keep], pred], axis=1), out)
    n_ext = int(pred["extrapolated"].sum()) if "extrapolated" in pred.columns else 0
    typer.echo(f"wrote {out}: {len(pred)} rows, targets {m.targets_} (model platform "
               f"{m.platform_}), coverage {coverage}, {n_ext} row(s) flagged extrapolated")  # fmt: skip
# --- end carb ensemble ---


# every command goes through the one error path (commands above need no try/except of their own)
for _cmd in app.registered_commands:
    _cmd.callback = _error_path(_cmd.callback)

if __name__ == "__main__":
    app()
