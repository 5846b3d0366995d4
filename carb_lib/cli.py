"""The ``carb`` command line (typer). Each command imports its stage lazily, so that
``carb --help`` is fast and the profiling path works without the modelling libraries."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="CARB: measure, explain, predict and screen the inference cost of CNNs.",
)


@app.command()
def reproduce(
    profile: str = typer.Option("full", help="Profile of papermill_runs.yaml: quick or full."),
    only: Optional[list[str]] = typer.Option(None, help="Run only notebooks whose name contains this."),
    runs_file: Path = typer.Option(Path("papermill_runs.yaml"), help="The run list."),
    run_dir: Optional[Path] = typer.Option(None, help="Folder for executed notebooks (default runs/<profile>-<time>)."),
    out_root: Optional[Path] = typer.Option(None, help="Redirect fig_dir/results_dir parameters under this folder."),
) -> None:
    """Run the study's notebooks with papermill, in order."""
    from carb_lib.reproduce import ReproduceError, run_profile

    try:
        run_profile(profile, runs_file=runs_file, only=only, run_dir=run_dir, out_root=out_root)
    except ReproduceError as exc:
        typer.secho(str(exc), fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from exc


# --- commands added by other stages go below this line -------------------------------------


if __name__ == "__main__":
    app()
