"""The reproduce runner: execute the study's notebooks with papermill, in order.

``papermill_runs.yaml`` lists, for each named profile (``quick``, ``full``), the notebooks in
order with their parameters. Executed notebooks go to a run folder (never over the sources);
figures and tables go where each notebook's ``fig_dir`` / ``results_dir`` parameters say
(``out_root`` redirects both, e.g. into a temporary folder for tests). A ``summary.json`` in the
run folder holds every value each notebook recorded with :func:`carb_lib.record.glue`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
DIR_PARAMETERS = ("fig_dir", "results_dir")


class ReproduceError(RuntimeError):
    """A notebook failed or the run list is invalid; the message names notebook and cell."""


@dataclass(frozen=True)
class NotebookRun:
    """One entry of a profile: the notebook and its parameters."""

    notebook: Path
    parameters: dict[str, Any]

    @property
    def name(self) -> str:
        return self.notebook.stem


def load_runs(profile: str, runs_file: str | Path = "papermill_runs.yaml") -> list[NotebookRun]:
    """Read the ordered notebook list of ``profile`` from ``runs_file``.

    Raises
    ------
    ReproduceError
        If the file, the profile or a notebook does not exist or an entry is malformed.
    """
    path = Path(runs_file)
    if not path.is_absolute():
        path = REPO_ROOT / path
    if not path.exists():
        raise ReproduceError(f"run list {path} does not exist")
    spec = yaml.safe_load(path.read_text()) or {}
    profiles = spec.get("profiles", {})
    if profile not in profiles:
        raise ReproduceError(f"profile {profile!r} is not in {path.name}; profiles: {sorted(profiles)}")
    runs = []
    for i, entry in enumerate(profiles[profile] or []):
        if not isinstance(entry, dict) or "notebook" not in entry:
            raise ReproduceError(f"{path.name}: entry {i} of profile {profile!r} has no 'notebook'")
        nb = Path(entry["notebook"])
        if not (REPO_ROOT / nb).exists():
            raise ReproduceError(f"{path.name}: notebook {nb} (profile {profile!r}) does not exist")
        runs.append(NotebookRun(nb, dict(entry.get("parameters") or {})))
    return runs


def _redirect(params: dict[str, Any], out_root: Path | None) -> dict[str, Any]:
    if out_root is None:
        return params
    out = dict(params)
    for key in DIR_PARAMETERS:
        if key in out:
            out[key] = str(Path(out_root) / out[key])
    return out


def _cell_head(notebook: Path, exec_count: int) -> str:
    """First line of the cell with ``exec_count`` (for error messages), or '' if unreadable."""
    try:
        import nbformat

        for cell in nbformat.read(str(notebook), as_version=4).cells:
            if cell.get("execution_count") == exec_count:
                return cell.source.splitlines()[0]
    except Exception:  # noqa: BLE001 - best effort only
        pass
    return ""


def run_profile(
    profile: str = "full",
    runs_file: str | Path = "papermill_runs.yaml",
    only: list[str] | None = None,
    run_dir: str | Path | None = None,
    out_root: str | Path | None = None,
    kernel_name: str = "python3",
) -> dict[str, dict[str, Any]]:
    """Execute every notebook of ``profile`` (or those whose name contains one of ``only``).

    Returns
    -------
    dict
        ``{notebook name: {glued name: value}}``, also written to ``<run_dir>/summary.json``.

    Raises
    ------
    ReproduceError
        Naming the notebook, the cell and the error when a notebook fails.
    """
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    from carb_lib.record import read_glued

    runs = load_runs(profile, runs_file)
    if only:
        runs = [r for r in runs if any(o in r.name for o in only)]
        if not runs:
            raise ReproduceError(f"no notebook of profile {profile!r} matches {only}")
    if run_dir is None:
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        run_dir = REPO_ROOT / "runs" / f"{profile}-{stamp}"
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    out_root = Path(out_root).resolve() if out_root is not None else None
    summary: dict[str, dict[str, Any]] = {}
    for k, run in enumerate(runs, 1):
        out_nb = run_dir / run.notebook.name
        params = _redirect(run.parameters, out_root)
        print(f"[{k}/{len(runs)}] {run.notebook} -> {out_nb}", flush=True)
        t0 = time.perf_counter()
        try:
            pm.execute_notebook(
                str(REPO_ROOT / run.notebook), str(out_nb), parameters=params,
                kernel_name=kernel_name, cwd=str(REPO_ROOT), progress_bar=False,
            )
        except PapermillExecutionError as exc:
            raise ReproduceError(
                f"notebook {run.notebook} failed in cell {exc.cell_index} of the executed "
                f"notebook (execution count {exc.exec_count}; source: "
                f"{_cell_head(out_nb, exc.exec_count)!r}): {exc.ename}: {exc.evalue}\n"
                f"executed notebook with the traceback: {out_nb}"
            ) from exc
        except Exception as exc:  # kernel death, missing kernel, bad parameters
            raise ReproduceError(f"notebook {run.notebook} could not run: {exc}") from exc
        summary[run.name] = read_glued(out_nb)
        print(f"      done in {time.perf_counter() - t0:.0f} s; recorded "
              f"{len(summary[run.name])} values", flush=True)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary
