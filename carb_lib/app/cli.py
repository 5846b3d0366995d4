"""The ``carb`` command line (typer). Each command imports its stage lazily, so that
``carb --help`` is fast and the profiling path works without the modelling libraries."""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer
from typer.core import TyperGroup

from carb_lib.app.catalog_cli import register_output
from carb_lib.app.cli_checks import (
    check_campaign_start,
    check_cluster_options,
    check_platform_name,
    check_platform_threads,
    check_shipped_threads,
    check_threads_available,
    module_configs_capped,
)
from carb_lib.app.options import options_command
from carb_lib.core.vocab import DEFAULT_COVERAGE
from carb_lib.dataset.catalog import use_catalog
from carb_lib.measure.campaign_folder import write_protocol_once

try:  # typer >= 0.22 carries its own copy of click
    from typer._click import exceptions as _clickx
except ImportError:  # pragma: no cover - typer on the click package
    from click import exceptions as _clickx


def _usage_error(exc: _clickx.UsageError) -> None:
    """A parse error of the command line (unknown option, missing or bad value) as the one
    ``error: ...`` line with exit code 1 (docs/refuses.md), not a usage box with exit code 2;
    a command given without arguments shows its help."""
    if isinstance(exc, _clickx.NoArgsIsHelpError) and exc.ctx is not None:
        typer.echo(exc.ctx.get_help())
        raise typer.Exit(0)
    where = exc.ctx.command_path if exc.ctx is not None else "carb"
    typer.secho(f"error: {where}: {_one_line(exc.format_message())} (see {where} --help)",
                fg=typer.colors.RED, err=True)
    raise typer.Exit(1)


class _OneLineUsage(TyperGroup):
    """The ``carb`` group: parse errors of it and of every command under it are one line
    (:func:`_usage_error`)."""

    def make_context(self, info_name, args, parent=None, **extra):  # noqa: D102
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except _clickx.UsageError as exc:
            _usage_error(exc)

    def invoke(self, ctx):  # noqa: D102
        try:
            return super().invoke(ctx)
        except _clickx.UsageError as exc:
            _usage_error(exc)


app = typer.Typer(add_completion=False, no_args_is_help=True, cls=_OneLineUsage,
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
#: ``--timeout-s`` of predict and screen: the cap on building and running a ``--module``.
_MODULE_TIMEOUT = typer.Option(300.0, "--timeout-s", help="With --module: wall-clock cap in "
                               "seconds on building the network and running it once.")
#: ``--trust`` of the commands that load model files.
_TRUST = typer.Option(False, "--trust", help="Also load a joblib (pickle) model file of an "
                      "earlier version. Loading a pickle file runs any code it holds: only for "
                      "files you wrote yourself (then save it again with carb fit).")
#: ``--calibrate`` of predict and screen (carb_lib.transfer.calibration).
_CALIBRATE = typer.Option(False, "--calibrate", help="Time reference configs of the model's own rows on this host first (from small to its largest rows, under the model's protocol: threads, heap, device; within --calibrate-budget-s) and scale the latency predictions by the host factor when it differs from 1 by more than twice its standard error (per size band where the bands differ); factor, spread and protocol are recorded in the output.")
_CALIBRATE_BUDGET = typer.Option(60.0, "--calibrate-budget-s", help="With --calibrate: wall-clock cap in seconds on the timing.")
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
        except BrokenPipeError:  # the reader went away (carb zoo list | head): end quietly
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
    ctx: typer.Context,
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks instead of one-line errors."),
    catalog: Path | None = typer.Option(None, "--catalog", help="A user catalog (data/catalog.yaml's format, paths relative to its folder) that extends the shipped one for this command; or set CARB_CATALOG."),
) -> None:
    """CARB: measure, explain, predict and screen the inference cost of CNNs."""
    _STATE["debug"] = debug
    configure_logging(debug)
    if catalog is not None:
        _use_catalog(ctx, catalog)


@_error_path
def _use_catalog(ctx: typer.Context, catalog: Path) -> None:
    """Extend the shipped catalog with ``catalog`` for this command (a bad catalog:
    ``CatalogError``, one line through the error path)."""
    ctx.call_on_close(use_catalog(catalog))


@app.command()
def reproduce(
    profile: str = typer.Option("full", help="Profile of papermill_runs.yaml: quick, full or gpu."),
    only: list[str] | None = typer.Option(None, help="Run only notebooks whose name contains this."),
    runs_file: Path | None = typer.Option(None, help="The run list (default: the repository's "
                                          "papermill_runs.yaml; a relative path is read from "
                                          "the working folder)."),
    run_dir: Path | None = typer.Option(None, help="Folder for executed notebooks (default runs/<profile>-<time>)."),
    out_root: Path | None = typer.Option(None, help="Folder for every figure and table of the run "
                                         "(default: the repository for the full profile without "
                                         "-p, else the run folder)."),
    parameter: list[str] | None = typer.Option(None, "-p", "--parameter", help="name=value "
                                               "(value read as YAML) for every notebook that has "
                                               "the parameter; repeatable. Recorded in "
                                               "summary.json; the run then writes into its run "
                                               "folder, not results/."),
    update_readme: bool | None = typer.Option(None, "--update-readme/--no-update-readme",
                                              help="Rewrite README.md's result tables from "
                                              "results/ (default: for a full run of every "
                                              "notebook into results/)."),
) -> None:
    """Run the study's notebooks with papermill, in order (plus an HTML page of each and an
    index.html in the run folder)."""
    from carb_lib.app.reproduce import REPO_ROOT, parse_overrides, run_profile

    overrides = parse_overrides(parameter)
    run_profile(profile, runs_file=runs_file, only=only, run_dir=run_dir, out_root=out_root,
                overrides=overrides)
    if update_readme is None:
        update_readme = profile == "full" and not only and out_root is None and not overrides
    if update_readme:
        from carb_lib.app.readme import update_readme as _update

        changed = _update(REPO_ROOT / "README.md", REPO_ROOT / "results", command=app)
        typer.echo("README.md result tables " + ("rewritten from results/" if changed
                                                 else "already match results/"))


@app.command("readme")
def readme_cmd(
    check: bool = typer.Option(False, "--check", help="Only check; exit 1 if a table is stale."),
    readme: Path = typer.Option(Path("README.md"), help="The README to update."),
    results_dir: Path = typer.Option(Path("results"), help="Where the result tables are."),
) -> None:
    """Write README.md's result tables (between <!-- carb:NAME --> markers) from results/."""
    from carb_lib.app.readme import stale_blocks, update_readme

    if check:
        stale = stale_blocks(readme, results_dir, command=app)
        if stale:
            typer.secho(f"stale README blocks: {', '.join(stale)} (run `carb readme`)",
                        fg=typer.colors.RED, err=True)
            raise typer.Exit(1)
        typer.echo("README result tables match results/")
        return
    changed = update_readme(readme, results_dir, command=app)
    typer.echo("README.md rewritten" if changed else "README.md already up to date")


@app.command()
def publish(
    run_dir: Path = typer.Argument(..., help="A run folder of `carb reproduce` (runs/full-...)."),
    dest: Path = typer.Option(Path("docs/run"), help="Where the pages go: written to a fresh folder, then swapped in; an existing folder holding files publish did not write is refused."),
    max_image_width: int = typer.Option(900, help="Shrink wider PNG outputs to this width (px)."),
    max_mb: float = typer.Option(10.0, help="Fail if the pages exceed this size (MB)."),
) -> None:
    """Publish a run's executed notebooks as self-contained HTML pages with an index."""
    from carb_lib.app.reproduce import publish_run
    from carb_lib.core.safe_io import publish_fresh

    written = publish_fresh(run_dir, dest, lambda d: publish_run(
        run_dir, d, max_image_width=max_image_width, max_mb=max_mb))
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file()) / 1e6
    typer.echo(f"{len(written)} pages in {dest} ({size:.1f} MB)")


# --- commands added by other stages go below this line -------------------------------------


# --- screening ---
@app.command()
@options_command("carb_lib.app.predict_cli:run_screen", "ScreenOptions")
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
                                                  "or max:COLUMN (repeatable; default latency_ms, "
                                                  "peak_mem_mib, and energy_j where the model "
                                                  "predicts it)."),
    quality: str | None = typer.Option(None, help="Column to maximise (default: params as a "
                                          "capacity proxy)."),
    no_quality: bool = typer.Option(False, "--no-quality", help="Cost-only front."),
    coverage: float = typer.Option(DEFAULT_COVERAGE, help="Conformal coverage of the upper bounds."),
    k: int = typer.Option(10, help="Shortlist size."),
    method: str = typer.Option("crowding", help="Shortlist ranking: crowding | knee."),
    out: Path = typer.Option(Path("runs/screening/shortlist.csv"), help="Shortlist table "
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
    timeout_s: float = _MODULE_TIMEOUT,
    trust: bool = _TRUST,
    calibrate: bool = _CALIBRATE,
    calibrate_budget_s: float = _CALIBRATE_BUDGET,
    force: bool = typer.Option(False, "--force", help="Replace an existing --out that is not a shortlist of carb screen (keeping a numbered <out>.bak)."),
) -> None:
    """Screen candidate configs against deployment budgets and print the funnel."""


ScreenOptions = screen.Options  # its options as one object (carb_lib.app.options)


# --- end screening ---


# --- measurement: profile / merge / noise ---
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
    threads: int = typer.Option(1, "--threads", help="torch intra-op threads (recorded): 1, the study's protocol and every shipped CPU row's, unless you choose another."),
    ref_every: int = typer.Option(50, "--ref-every", help="Reference config (and GPU idle power) every N configs; 0 = off."),
    timeout_s: float = typer.Option(300.0, "--timeout-s", help="Per-config wall-clock cap in seconds."),
    cooldown_s: float | None = typer.Option(None, "--cooldown-s", help="GPU cool-down seconds (default 1)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="tqdm progress bar."),
    protocol: str | None = typer.Option(None, "--protocol", help="Protocol settings as JSON, inline or a .json file: fields of carb_lib.measure.protocol.Protocol, e.g. '{\"cpu_min_window_s\": 0.5, \"max_windows\": 12}' (threads, timeout and cool-down have their own options). Default: the study's protocol. OUT/protocol.json records the protocol when the campaign starts; a resume under another one is refused."),
    time_budget_old: float | None = typer.Option(None, "--time-budget", hidden=True),
    timeout_old: float | None = typer.Option(None, "--timeout", hidden=True),
    cooldown_old: float | None = typer.Option(None, "--cooldown", hidden=True),
    cluster: str | None = typer.Option(None, "--cluster", help="Measure on a Dask cluster: local:N | cuda | slurm:FILE.yaml | tcp://HOST:PORT (needs carb_lib[dask]); the client writes the same part files."),
    cluster_timeout_s: float = typer.Option(10.0, "--cluster-timeout-s", help="How long to try reaching a tcp:// scheduler."),
    max_tries: int = typer.Option(3, "--max-tries", help="With --cluster: worker deaths a config may cause before it gets a status=error row."),
    chunk_size: int = typer.Option(1, "--chunk-size", help="With --cluster: configs per task."),
    passes: int = typer.Option(1, "--passes", help="Measure the configs this many times, a whole pass apart, into OUT/pass<p>/; `carb merge` keeps each config's fastest pass (a host whose speed swings: carb_lib.measure.passes)."),
    module: str | None = _MODULE,
    input_shape: str | None = _INPUT_SHAPE,
    module_kwargs: str = _MODULE_KWARGS,
    batches: str = _BATCHES,
    precisions: str = _PRECISIONS,
) -> None:
    """Measure configs on one device into resumable Parquet parts (then `carb merge`)."""
    from carb_lib.measure.campaign import run_campaign, sample_configs
    from carb_lib.measure.profiling import Protocol

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
        if value == float("inf"):  # a cap that never holds (as JSON Infinity in --protocol)
            raise ValueError(f"{name} must be a finite number, got {value}")
    from carb_lib.measure.protocol import protocol_settings

    settings = protocol_settings(protocol) if protocol is not None else {}
    own = sorted({"threads", "timeout_s", "cooldown_s"} & set(settings))
    if own:
        raise ValueError(f"--protocol: set {own} with their own options (--threads, --timeout-s, "
                         "--cooldown-s), not in the JSON")

    check_platform_name(platform)
    check_platform_threads(platform, threads, device)
    check_shipped_threads(platform, threads, device)
    kw = {**settings, "threads": threads, "timeout_s": timeout}
    if cooldown is not None:
        kw["cooldown_s"] = cooldown
    if cluster is not None:
        check_cluster_options(cluster, cluster_timeout_s, device, max_tries, chunk_size)

    df = module_configs_capped(module, input_shape, module_kwargs, batches, precisions, timeout)
    if df is not None and configs is not None:
        raise ValueError("give --configs or --module, not both")
    if df is None:
        df = sample_configs(n_sample, seed, configs, max_gflops, sample_under_cap)
    identity = check_campaign_start(out, Protocol(**kw), platform=platform, device=device,
                                    threads=threads, shard=shard)
    def start() -> None:  # OUT/protocol.json once, as the campaign starts; never replaced
        saved = write_protocol_once(out, identity)
        if settings and saved is not None:
            typer.echo(f"protocol: {settings} (all settings in {saved})", err=True)
    common = dict(platform=platform, seed=seed, ref_every=ref_every, time_budget_s=time_budget,
                  max_gflops=max_gflops, shard=shard, progress=progress)
    if passes > 1:
        if cluster is not None:
            raise ValueError("--passes measures on this machine; it does not combine with --cluster")
        from carb_lib.measure.passes import run_passes

        start()
        for p, r in enumerate(run_passes(df, out, passes, device, Protocol(**kw), **common)):
            typer.echo(f"pass {p}: counts {r.counts}; drift {r.drift}")
        return
    if cluster is None:
        start()
        res = run_campaign(df, out, device, Protocol(**kw), **common)
    else:
        from carb_lib.distributed import open_cluster, run_cluster_campaign

        with open_cluster(cluster, timeout_s=cluster_timeout_s) as client:
            start()
            res = run_cluster_campaign(df, out, client, device, Protocol(**kw), **common,
                                       max_tries=max_tries, chunk_size=chunk_size)
        typer.echo(f"cluster: {res.workers} worker(s), platform(s) {res.platforms}, "
                   f"{res.n_tasks} task(s), {res.n_killed} config(s) killed their worker "
                   f"{max_tries} times, median per-task overhead {res.task_overhead_ms:.1f} ms")
    typer.echo(f"counts {res.counts}; reference runs {res.n_reference}; drift {res.drift}")


@app.command()
def merge(
    parts_dir: Path = typer.Argument(..., help="Campaign folder of part files."),
    out: Path = typer.Argument(..., help="Dataset to write or extend, e.g. mydata/<platform>/design/rows.parquet (registered as the campaign's rows in the user catalog)."),
    existing: Path | None = typer.Option(None, "--existing", help="Extend this dataset (its rows count as earlier; it must exist, and a file other than an existing OUT needs --force); default: OUT itself if it exists."),
    reference_out: Path | None = typer.Option(None, "--reference-out", help="Also write the reference-config rows here."),
    force: bool = typer.Option(False, "--force", help="Replace OUT with the parts alone (or with --existing and the parts), keeping a numbered OUT.bak."),
    allow_mixed_platforms: bool = typer.Option(False, "--allow-mixed-platforms", help="Accept rows of several platforms in one file."),
    campaign: str = typer.Option("design", "--campaign", help="The campaign OUT (and --reference-out) is registered as in the user catalog (carb --catalog PATH or CARB_CATALOG); design: the one carb fit --platform and the studies read."),
) -> None:
    """Merge part files into a validated dataset (extending OUT, keeping OUT.bak) and register it in the user catalog."""
    from carb_lib.measure.campaign import merge_parts

    df = merge_parts(parts_dir, out, existing=existing, reference_out=reference_out,
                     force=force, allow_mixed_platforms=allow_mixed_platforms)  # fmt: skip
    typer.echo(f"wrote {out}: {len(df)} rows; status {df['status'].value_counts().to_dict()}")
    if not allow_mixed_platforms:
        register_output(out, "rows", campaign, typer.echo)
        if reference_out is not None and reference_out.is_file():
            register_output(reference_out, "reference", campaign, typer.echo)


@app.command()
def noise(
    out: Path = typer.Option(Path("runs/noise"), "--out", help="Folder for noise_rows.parquet and noise_summary.csv."),
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
    force: bool = typer.Option(False, "--force", help="Replace noise_rows.parquet and noise_summary.csv in --out that are not outputs of carb noise (keeping numbered .bak files)."),
) -> None:
    """Re-measure M configs K times (separate processes; back to back and spread); CV per target."""
    from carb_lib.measure.campaign import noise_study, sample_configs
    from carb_lib.measure.profiling import Protocol

    spread_gap = _alias(spread_gap_s, spread_gap_old, "--spread-gap", "--spread-gap-s", default=0.0)
    for name, value, lo in (("--n-configs", n_configs, 1), ("--repeats", repeats, 2)):
        if value < lo:  # a CV needs two measurements of a config
            raise ValueError(f"{name} must be >= {lo}, got {value}")
    if not 0 <= spread_gap < float("inf"):
        raise ValueError(f"--spread-gap-s must be >= 0 seconds, got {spread_gap}")
    from carb_lib.core.safe_io import check_folder, check_outputs, table_with

    check_platform_name(platform)
    check_threads_available(threads)
    check_folder(out, "--out", inputs=[("--configs", configs)], command="carb noise")
    rows_path, summary_path = out / "noise_rows.parquet", out / "noise_summary.csv"
    own_rows = table_with("noise_mode", "repeat")
    backup = check_outputs([rows_path], "--out", own=own_rows, force=force, command="carb noise")
    backup |= check_outputs([summary_path], "--out", own=lambda p: own_rows(rows_path),
                            force=force, command="carb noise")
    df = sample_configs(n_configs, seed, configs, max_gflops, sample_under_cap=max_gflops is not None)
    rows, summary = noise_study(
        df, device, Protocol(threads=threads), repeats=repeats,
        modes=tuple(mode or ("back_to_back", "spread")), separate_processes=not in_process,
        platform=platform, spread_gap_s=spread_gap, spread_process_per_round=round_process,
    )
    from carb_lib.core.safe_io import table_bytes, write_set

    write_set({rows_path: table_bytes(rows, rows_path),
               summary_path: table_bytes(summary, summary_path)}, backup)
    typer.echo(summary.to_string(index=False))
    typer.echo(f"wrote {out / 'noise_rows.parquet'}, {out / 'noise_summary.csv'}")
@app.command()
def audit(
    dataset: Path = typer.Argument(..., help="Measured dataset (.parquet) to audit."),
    n: int = typer.Option(200, "--n", help="Rows to re-measure (seeded random sample of ok rows)."),
    seed: int = typer.Option(0, "--seed", help="Sample seed."),
    device: str = typer.Option("cpu", "--device", help="cpu | cuda | cuda:N."),
    out: Path = typer.Option(Path("runs/audit"), "--out", help="Folder for <platform>_audit_rows.parquet, <platform>_audit.csv and <platform>_noise_by_regime.csv (keep the rows beside the campaign's and register them: carb catalog add ... --role audit)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="tqdm progress bar."),
    assume_same_cpu: bool = typer.Option(False, "--assume-same-cpu", help="Audit rows without cpu_id on this CPU (the CPU they were measured on is unknown; by default they are refused)."),
    force: bool = typer.Option(False, "--force", help="Replace files in --out that are not outputs of carb audit (keeping numbered .bak files)."),
) -> None:
    """Re-measure a seeded random sample of a dataset in fresh processes; print the agreement."""
    from carb_lib.core.safe_io import check_folder
    from carb_lib.dataset.schema import read_dataset
    from carb_lib.measure.audit import audit as run_audit
    from carb_lib.measure.audit import format_agreement, noise_by_regime

    if not dataset.is_file():
        raise FileNotFoundError(f"{dataset}: no such dataset file")
    from carb_lib.core.safe_io import check_outputs, table_with

    check_folder(out, "--out", inputs=[("DATASET", dataset)],  # before anything is measured
                 command="carb audit")
    df = read_dataset(dataset)
    plat = str(df["platform"].iloc[0])
    files = [out / f"{plat}_audit_rows.parquet", out / f"{plat}_audit.csv",
             out / f"{plat}_noise_by_regime.csv"]
    own_rows = table_with("config_id", "status")
    backup = check_outputs(files[:1], "--out", own=own_rows, force=force, command="carb audit")
    backup |= check_outputs(files[1:], "--out", own=lambda p: own_rows(files[0]), force=force,
                            command="carb audit")
    if device == "cpu" and not assume_same_cpu:
        from carb_lib.measure.audit import refuse_unknown_cpu

        refuse_unknown_cpu(df, str(dataset))
    rows, ag = run_audit(df, n, seed=seed, device=device, progress=progress,
                         assume_same_cpu=assume_same_cpu)  # fmt: skip
    import pandas as pd

    from carb_lib.core.safe_io import table_bytes, write_set

    frames = [rows, pd.DataFrame([ag.to_dict()]), noise_by_regime(df, rows)]
    write_set({f: table_bytes(t, f) for f, t in zip(files, frames, strict=True)}, backup)
    typer.echo(format_agreement(ag, plat))
    typer.echo(f"wrote {out / f'{plat}_audit_rows.parquet'}, {out / f'{plat}_audit.csv'}")


@app.command("kernels")
def kernels_cmd(
    out: Path = typer.Option(..., "--out", help="New Parquet file for the timed operators, e.g. mydata/<platform>/design/kernels.parquet."),
    n: int = typer.Option(3000, "--n", help="Operators drawn from the generic grid (conv, depthwise, linear, memory-bound)."),
    seed: int = typer.Option(0, "--seed", help="Sample seed."),
    sampler: int | None = typer.Option(None, "--sampler", help="Sampler version (default: the current one; 1-3 reproduce earlier draws)."),
    threads: int = typer.Option(1, "--threads", help="torch intra-op threads (the profiler's protocol uses 1)."),
    platform: str | None = typer.Option(None, "--platform", help="Platform name of the rows (default: the CPU's)."),
    append: bool = typer.Option(False, "--append", help="Add the operators to the existing --out (same platform, CPU, threads and PyTorch; a seed it does not hold)."),
    anchors: bool = typer.Option(True, "--anchors/--no-anchors", help="Time the fixed anchor operators before, during (--anchor-every) and after the draw, into <out>.anchors.parquet (the host's speed, measured)."),
    anchor_every: int = typer.Option(500, "--anchor-every", help="Also time the anchors every N operators of the draw (0: before and after only); a host's speed is the median of several anchor campaigns."),
    anchors_only: bool = typer.Option(False, "--anchors-only", help="Time only the anchor operators, beside the existing --out, and print each anchor campaign's speed (e.g. before a measurement campaign)."),
    campaigns: int = typer.Option(5, "--campaigns", help="With --anchors-only: anchor campaigns timed back to back (~4 s each); the host's speed is their median."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="tqdm progress bar."),
    cache_probe: bool = typer.Option(True, "--cache-probe/--no-cache-probe", help="After the draw, probe one core's read bandwidth by working set (about a minute) into <out stem>_cache_probe.csv: the kernel law's weight-traffic input."),
    keep_heap: bool = typer.Option(True, "--keep-heap/--default-heap", help="Keep the process's heap first (no buffer mapped afresh per call, as the protocol's cpu_keep_heap, the default); --default-heap times as before. Rows record heap_kept."),
    campaign: str = typer.Option("design", "--campaign", help="The campaign --out (and its anchors) is registered as in the user catalog (carb --catalog PATH or CARB_CATALOG); design: the benchmark carb fit --platform and the studies read."),
) -> None:
    """Characterize this CPU's operators: time n generic operators alone (the kernel latency law's input)."""
    from carb_lib.core.safe_io import check_output
    from carb_lib.kernels.draw import time_anchors_only, time_draw

    # before anything is timed: data/ is its own, a folder it can write (an existing
    # --out is time_draw's to judge: --append or refused)
    check_output(out, "--out", own=lambda p: True, owns=("data",), command="carb kernels")
    check_platform_name(platform)
    check_threads_available(threads)
    if anchors_only:
        time_anchors_only(out, campaigns=campaigns,
                          threads=threads, platform=platform,
                          echo=typer.echo)
        return
    time_draw(out, n=n, seed=seed, sampler=sampler, threads=threads, platform=platform,
              append=append, anchors=anchors, anchor_every=anchor_every, progress=progress,
              keep_heap=keep_heap, echo=typer.echo)
    if cache_probe:
        from carb_lib.kernels.draw import probe_read_bandwidth

        probe_read_bandwidth(out, threads=threads, echo=typer.echo)

    if register_output(out, "kernels", campaign, typer.echo):
        from carb_lib.kernels.anchors import anchors_path
        from carb_lib.kernels.draw import cache_probe_path

        for extra, role in ((anchors_path(out), "anchors"), (cache_probe_path(out), "cache_probe")):
            if extra.is_file():
                register_output(extra, role, campaign, typer.echo, facts_from=out)


# --- end measurement ---


# --- transfer ---
@app.command()
@options_command("carb_lib.app.predict_cli:run_transfer", "TransferOptions")
def transfer(
    source: list[Path] = typer.Option(..., "--source", help="Measurements on source platforms "
                                      "(.csv/.parquet; repeat the option for several files)."),
    target_samples: Path | None = typer.Option(None, "--target-samples", help="k measured rows "
                                               "on the target platform (.csv/.parquet)."),
    kernels: Path | None = typer.Option(None, "--kernels", help="The target CPU's operator benchmark (carb kernels --out there): predict latency from it, zero-shot or with --target-samples."),
    source_kernels: list[Path] = typer.Option([], "--source-kernels", help="With --kernels: each source platform's operator benchmark (repeat the option)."),
    query: Path = typer.Option(..., "--query", help="Configs to predict (.csv/.parquet)."),
    out: Path = typer.Option(..., "--out", help="Predictions (.csv/.parquet) with config_id."),
    target: str = typer.Option("latency_ms", "--target", help="Target column."),
    method: str = typer.Option("blend", "--method", help="blend | ridge | loglinear | "
                               "target_only | flops (see carb_lib.transfer.pairwise)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing --out that is not a prediction table of carb transfer (keeping <out>.bak)."),
) -> None:
    """Predict a target platform from source measurements and k target samples, or from its operator benchmark (--kernels)."""


TransferOptions = transfer.Options  # its options as one object (carb_lib.app.options)


@app.command("convert-help")
def convert_help_cmd(
    folder: Path = typer.Option(..., "--folder",
                                help="HELP's data/nasbench201 latency folder (required)."),
    out: Path = typer.Option(Path("data/external/help_nb201.parquet"), "--out",
                             help="Parquet to write (LICENSE-HELP is copied beside it)."),
    force: bool = typer.Option(False, "--force", help="Replace an --out or LICENSE-HELP that is not a previous conversion (keeping a numbered .bak)."),
) -> None:
    """Convert HELP's NAS-Bench-201 device latencies (MIT) into CARB rows."""
    from carb_lib.dataset.readers import convert_help

    path = convert_help(folder, out, force=force)
    typer.echo(f"wrote {path} and {path.parent / 'LICENSE-HELP'}")
# --- end transfer ---


# --- carb ensemble: fit / predict ---
@app.command()
@options_command("carb_lib.app.fit_cli:run_fit", "FitOptions")
def fit(
    data: list[Path] = typer.Option([], "--data", help="Measured dataset (.parquet/.csv; status=='ok' rows are used); repeat it for several files of one platform (e.g. its ResNet and new-family campaigns). Without it, --platform P reads P's catalogued rows. Rows that mix timing protocols (threads, heap, device, PyTorch) are refused."),
    out: Path = typer.Option(..., "--out", help="Model file to write (skops format, loaded without pickle; metadata also in <out>.json). An existing file that is not a CARB model is refused unless --force."),
    feature_set: str = typer.Option("static", "--feature-set", help="static | static+telemetry (GPU only) | shared (no family encoding: predicts families it was not fitted on)."),
    platform: str | None = typer.Option(None, "--platform", help="Platform to fit: without --data, its rows files in the catalog (its design campaign's, data/catalog.yaml and --catalog); with --data, the platform to fit when the files hold several."),
    quick: bool = typer.Option(False, "--quick", help="Small models (PRESETS['quick']: 40 trees, 3 folds, 1 thread)."),
    n_jobs: int = typer.Option(2, "--n-jobs", help="Threads per learner (ignored with --quick)."),
    preset: str = typer.Option("default", "--preset", help="Model preset (carb_lib.ensemble.PRESETS): default (screening-sized) | paper (the paper's sizes, slow) | fast | quick | test (unit-test size, not for results). Ignored with --quick."),
    latency_law: str = typer.Option("auto", "--latency-law", help="Latency base law: auto (the default: the kernel law where the catalog holds an operator benchmark of the platform, else roofline; chosen on validation rows of five CPUs, benchmarks/choose_latency_law.py) | roofline (FLOPs, bytes, layers) | kernel (the platform's operators timed alone, summed; extrapolates to unseen batches and families; needs --kernel-bench). The law used and why are printed and kept in the model's metadata (latency_law)."),
    kernel_bench: Path | None = typer.Option(None, "--kernel-bench", help="Timed operators of this platform (carb kernels --out FILE) for --latency-law kernel (or auto, in place of the catalog's); the model keeps what it learned from them. A benchmark of another CPU (cpu_id) than the rows is refused."),
    cache_probe: Path | None = typer.Option(None, "--cache-probe", help="This machine's read-bandwidth probe (.csv, scripts/read_bandwidth_probe.py), with --kernel-bench: weights of networks past its cache are read from memory, added to each operator's time."),
    force: bool = typer.Option(False, "--force", help="Replace an existing --out that is not a CARB model (keeping <out>.bak)."),
) -> None:
    """Fit CARB on a measured dataset and save it (one model per platform)."""


FitOptions = fit.Options  # its options as one object (carb_lib.app.options)


@app.command()
@options_command("carb_lib.app.predict_cli:run_predict", "PredictOptions")
def predict(
    model: Path = typer.Option(..., "--model", help="Model written by `carb fit`."),
    configs: Path | None = typer.Option(None, "--configs", help="Configs (.parquet/.csv); static features are computed if absent (or --module)."),
    out: Path = typer.Option(..., "--out", help="Predictions (.parquet/.csv): configs + {t}_pred, {t}_pred_lo, {t}_pred_hi. An existing file that is not a prediction table is refused unless --force."),
    coverage: float = typer.Option(DEFAULT_COVERAGE, "--coverage", help="Nominal coverage of the conformal intervals."),
    module: str | None = _MODULE,
    input_shape: str | None = _INPUT_SHAPE,
    module_kwargs: str = _MODULE_KWARGS,
    batches: str = _BATCHES,
    precisions: str = _PRECISIONS,
    timeout_s: float = _MODULE_TIMEOUT,
    trust: bool = _TRUST,
    calibrate: bool = _CALIBRATE,
    calibrate_budget_s: float = _CALIBRATE_BUDGET,
    calibrate_on_query: int = typer.Option(0, "--calibrate-on-query", help="With --calibrate: also time this many of the queried configs (spread over their predicted latency) and include them in the host factor."),
    force: bool = typer.Option(False, "--force", help="Replace an existing --out that is not a prediction table (keeping <out>.bak)."),
) -> None:
    """Predict cost and conformal intervals for configs with a saved CARB model (for the protocol its rows were timed with)."""


PredictOptions = predict.Options  # its options as one object (carb_lib.app.options)


@app.command()
@options_command("carb_lib.app.predict_cli:run_check", "CheckOptions")
def check(
    model: Path = typer.Option(..., "--model", help="Model written by `carb fit`."),
    configs: Path | None = typer.Option(None, "--configs", help="The query (.parquet/.csv of configs), or --module."),
    k: int = typer.Option(5, "--k", help="Configs of the query to time now (spread over their predicted latency)."),
    budget_s: float = typer.Option(60.0, "--budget-s", help="Wall-clock budget of the timing in seconds (the largest configs give way to smaller ones to fit it)."),
    repeat: int = typer.Option(3, "--repeat", help="Configs timed a second time, in another fresh process: this host's re-measurement noise now."),
    coverage: float = typer.Option(DEFAULT_COVERAGE, "--coverage", help="Nominal coverage of the prediction intervals."),
    out: Path | None = typer.Option(None, "--out", help="Also write the per-config table (.csv/.parquet)."),
    module: str | None = _MODULE,
    input_shape: str | None = _INPUT_SHAPE,
    module_kwargs: str = _MODULE_KWARGS,
    batches: str = _BATCHES,
    precisions: str = _PRECISIONS,
    timeout_s: float = _MODULE_TIMEOUT,
    trust: bool = _TRUST,
    calibrate: bool = _CALIBRATE,
    calibrate_budget_s: float = _CALIBRATE_BUDGET,
    force: bool = typer.Option(False, "--force", help="Replace an existing --out that is not a check table (keeping <out>.bak)."),
) -> None:
    """Time K of the predicted configs now, under the model's protocol, and print predicted against measured beside this host's re-measurement noise."""


CheckOptions = check.Options  # its options as one object (carb_lib.app.options)


# --- end carb ensemble ---


# --- zoo: the torchvision model zoo (docs/zoo.md; the commands in carb_lib/app/zoo_cli.py) ---
from carb_lib.app.zoo_cli import zoo_app  # noqa: E402 - typer and the standard library only

app.add_typer(zoo_app, name="zoo")
for _cmd in zoo_app.registered_commands:
    _cmd.callback = _error_path(_cmd.callback)
# --- end zoo ---


# --- time: design-space candidates from their own calls (docs/operators.md; carb_lib/app/time_cli.py) ---
from carb_lib.app.time_cli import time_cmd  # noqa: E402 - typer and the standard library only

app.command("time")(_error_path(time_cmd))
# --- end time ---


# --- catalog: the data catalog (docs/measuring.md; the commands in carb_lib/app/catalog_cli.py) ---
from carb_lib.app.catalog_cli import catalog_app  # noqa: E402 - typer and the standard library only

app.add_typer(catalog_app, name="catalog")
for _cmd in catalog_app.registered_commands:
    _cmd.callback = _error_path(_cmd.callback)
# --- end catalog ---


# every command goes through the one error path (commands above need no try/except of their own)
for _cmd in app.registered_commands:
    _cmd.callback = _error_path(_cmd.callback)

if __name__ == "__main__":
    app()
