"""``carb time``: design-space candidates timed on this machine from their own calls
(registered by :mod:`carb_lib.app.cli`, which routes it through its one error path)."""

from __future__ import annotations

from pathlib import Path

import typer


def time_cmd(
    candidates: str = typer.Option(..., "--candidates", help="grid | extended | extended-dense | FILE (.csv/.parquet): config rows of any family, as carb screen takes them."),
    n_extended: int = typer.Option(1000, "--n-extended", help="Sample size for --candidates extended / extended-dense."),
    seed: int = typer.Option(0, "--seed", help="Seed for --candidates extended / extended-dense."),
    threads: int = typer.Option(1, "--threads", help="torch intra-op threads of every timing (the stored rows' protocol: 1)."),
    keep_heap: bool = typer.Option(True, "--keep-heap/--default-heap", help="Keep this process's heap first, as the zoo rows were timed (default), or time with glibc's default heap."),
    budget_s: float = typer.Option(60.0, "--budget-s", help="Seconds for the whole screen to time the distinct calls the cache lacks, most frequent first; calls left are flagged per candidate, never zero."),
    window_s: float = typer.Option(0.02, "--window-s", help="Least seconds of one timed window of a call."),
    n_windows: int = typer.Option(5, "--n-windows", help="Timed windows per call (their median is kept)."),
    processes: int = typer.Option(1, "--processes", help="Processes recording the candidates' calls (each imports torch, about 2 s)."),
    fit_law: bool = typer.Option(False, "--fit-law", help="First fit the composition law on this host: 40 design networks at batches 1 and 16, their calls and each network whole timed now (some minutes); kept beside the call cache."),
    law: bool = typer.Option(True, "--law/--no-law", help="Print and write law_ms, the composition law fitted with this cache's protocol on this host, beside the plain sum (when one was fitted)."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir", help="Folder of the call-time cache (operator_calls/ in it; default $CARB_CACHE_DIR or ~/.cache/carb)."),
    out: Path | None = typer.Option(None, "--out", help="Also write the table, one row per candidate (.csv/.parquet)."),
    force: bool = typer.Option(False, "--force", help="Replace an existing --out that is not an output of this command (keeping a numbered <out>.bak)."),
) -> None:
    """Latency of design-space candidates on this machine from their own calls: each distinct call of the whole screen timed once and cached, summed per candidate; no fitted model."""
    from carb_lib.app.zoo_cli import _check_out, protocol_line
    from carb_lib.core.tables import write_table
    from carb_lib.kernels import composition
    from carb_lib.kernels.replay import CallCache, screen_times
    from carb_lib.screening.screen import load_candidates

    backup = _check_out(out, force, "carb time", ("config_id", "untimed_share"))
    if threads < 1 or n_windows < 1 or processes < 1 or not window_s > 0 or not budget_s >= 0:
        raise ValueError("--threads, --n-windows and --processes must be >= 1, --window-s > 0 "
                         f"and --budget-s >= 0; got {threads}, {n_windows}, {processes}, "
                         f"{window_s}, {budget_s}")
    cands = load_candidates(candidates, n_extended=n_extended, seed=seed)
    cache = CallCache(cache_dir, threads=threads, keep_heap=keep_heap, window_s=window_s,
                      n_windows=n_windows, budget_s=budget_s)
    fitted = None
    if fit_law:
        typer.echo("fitting the composition law on this host (design networks timed now) ...")
        fitted, _ = composition.calibrate(cache, progress=True)
        typer.echo(f"{fitted.describe()}; kept in {composition.law_path(cache)}")
    elif law:
        fitted = composition.load_law(cache)
    t = screen_times(cands, cache=cache, budget_s=budget_s, law=fitted, processes=processes,
                     progress=True)
    calls = t.attrs["calls"]
    typer.echo(f"{len(t):,} candidates, {calls['distinct']:,} distinct calls: {calls['cached']:,} "
               f"cached, {calls['timed_now']:,} timed now ({calls['timing_s']:.1f} s), "
               f"{calls['untimed']:,} untimed")
    done = t[t["n_untimed"] == 0]
    if len(done):
        q = done["predicted_ms"].quantile([0.1, 0.5, 0.9])
        typer.echo(f"{len(done):,} candidates with every call timed, sum of calls: "
                   f"{q[0.5]:.2f} ms median ({q[0.1]:.2f}-{q[0.9]:.2f} ms, 10th-90th "
                   "percentile)")
        if fitted is not None:
            q = done["law_ms"].quantile([0.1, 0.5, 0.9])
            typer.echo(f"  composition law (law_ms): {q[0.5]:.2f} ms median ({q[0.1]:.2f}-"
                       f"{q[0.9]:.2f} ms); {fitted.describe()}")
        elif law:
            typer.echo("  no composition law fitted with this cache: the plain sum misses part "
                       "of a network's time at small batches (docs/operators.md); --fit-law "
                       "fits one on this host")
    flagged = int((t["n_untimed"] > 0).sum())
    if flagged:
        typer.echo(f"{flagged:,} candidates have calls left untimed (n_untimed, untimed_share; "
                   "upper_ms bounds them): raise --budget-s to time them")
    typer.echo(protocol_line(cache))
    if out is not None:
        write_table(t, out, "--out", backup=backup)
        typer.echo(f"wrote {out}")
