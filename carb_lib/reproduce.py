"""The reproduce runner: execute the study's notebooks with papermill, in order.

``papermill_runs.yaml`` lists, for each named profile (``quick``, ``full``), the notebooks in
order with their parameters. Executed notebooks go to a run folder (never over the sources);
figures and tables go where each notebook's ``fig_dir`` / ``results_dir`` parameters say
(``out_root`` redirects both, e.g. into a temporary folder for tests). A ``summary.json`` in the
run folder holds every value each notebook recorded with :func:`carb_lib.record.glue`.

Each executed notebook is also written as a self-contained HTML page (nbconvert, images
inline) beside it, with an ``index.html`` that links them: the results can be read in a browser
without running anything. :func:`publish_run` copies a run's pages into the repository
(``docs/run/``), shrinking the images so that the pages stay small.

During a run the environment variable ``CARB_STATIC=1`` tells interactive cells
(:mod:`carb_lib.explore`) to show static figures: an executed notebook has no widget front-end.
"""

from __future__ import annotations

import base64
import html
import io
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

logger = logging.getLogger("carb.reproduce")

REPO_ROOT = Path(__file__).resolve().parents[1]
DIR_PARAMETERS = ("fig_dir", "results_dir")
STATIC_ENV = "CARB_STATIC"  # carb_lib.explore.STATIC_ENV (not imported: explore is heavier)


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
    try:
        spec = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        first = " ".join(str(exc).split())[:300]
        raise ReproduceError(f"run list {path} is not valid YAML: {first}") from None
    if not isinstance(spec, dict):
        raise ReproduceError(f"run list {path} must be a mapping with 'profiles', got "
                             f"{type(spec).__name__}")  # fmt: skip
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
    pages: list[dict[str, Any]] = []
    old_static = os.environ.get(STATIC_ENV)
    os.environ[STATIC_ENV] = "1"  # the kernel inherits it: explorers show static figures
    try:
        for k, run in enumerate(runs, 1):
            pages.append(_run_one(run, k, len(runs), run_dir, out_root, kernel_name, summary))
    finally:
        if old_static is None:
            os.environ.pop(STATIC_ENV, None)
        else:
            os.environ[STATIC_ENV] = old_static
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    write_index(run_dir, pages, profile=profile)
    return summary


def _run_one(run: NotebookRun, k: int, n: int, run_dir: Path, out_root: Path | None,
             kernel_name: str, summary: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Execute one notebook into ``run_dir``, record its glued values, write its HTML page."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    from carb_lib.record import read_glued

    out_nb = run_dir / run.notebook.name
    params = _redirect(run.parameters, out_root)
    logger.info("[%d/%d] %s -> %s", k, n, run.notebook, out_nb)
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
    seconds = time.perf_counter() - t0
    page = write_html(out_nb, out_nb.with_suffix(".html"))
    logger.info("      done in %.0f s; recorded %d values; page %s", seconds,
                len(summary[run.name]), page.name)
    return {"name": run.name, "notebook": str(run.notebook), "page": page.name,
            "seconds": round(seconds, 1), "n_values": len(summary[run.name]),
            "parameters": run.parameters}


# --------------------------------------------------------------------------- HTML pages
def write_html(notebook: str | Path, out: str | Path, max_image_width: int | None = None) -> Path:
    """Write an executed notebook as one self-contained HTML page (JupyterLab look, images
    inline as data URIs). ``max_image_width`` (pixels) shrinks wider PNG outputs first."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(notebook), as_version=4)
    if max_image_width:
        shrink_images(nb, max_image_width)
    exporter = HTMLExporter(template_name="lab", embed_images=True)
    body, _ = exporter.from_notebook_node(nb)
    out = Path(out)
    out.write_text(body, encoding="utf-8")
    return out


def shrink_images(nb, max_width: int) -> int:
    """Downscale every PNG output of ``nb`` wider than ``max_width`` pixels (in place, keeping
    the aspect ratio; palette-quantised) and return how many were changed."""
    from PIL import Image

    changed = 0
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            png = data.get("image/png")
            if not png:
                continue
            img = Image.open(io.BytesIO(base64.b64decode(png)))
            if img.width <= max_width:
                continue
            img = img.convert("RGB").resize(
                (max_width, round(img.height * max_width / img.width)), Image.LANCZOS)
            img = img.quantize(colors=256, method=Image.Quantize.MEDIANCUT)
            buf = io.BytesIO()
            img.save(buf, format="PNG", optimize=True)
            data["image/png"] = base64.b64encode(buf.getvalue()).decode("ascii")
            output.setdefault("metadata", {}).pop("image/png", None)
            changed += 1
    return changed


def write_index(run_dir: str | Path, pages: list[dict[str, Any]], profile: str = "",
                run_name: str | None = None) -> Path:
    """Write ``index.html`` in ``run_dir``: one row per notebook page (link, run time, number of
    recorded values) and every recorded value from ``summary.json``."""
    run_dir = Path(run_dir)
    run_name = run_name or run_dir.name
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    esc = html.escape
    rows = "\n".join(
        f"<tr><td><a href='{esc(p['page'])}'>{esc(p['name'])}</a></td>"
        f"<td>{esc(str(p.get('seconds', '')))}</td><td>{p.get('n_values', '')}</td>"
        f"<td><code>{esc(json.dumps(p.get('parameters', {})))}</code></td></tr>"
        for p in pages)
    values = "\n".join(
        f"<details><summary>{esc(name)}: {len(vals)} recorded values</summary><table>"
        + "".join(f"<tr><td><code>{esc(k)}</code></td><td>{esc(json.dumps(v))}</td></tr>"
                  for k, v in vals.items())
        + "</table></details>"
        for name, vals in summary.items())
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>CARB run {esc(run_name)}</title>
<style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;
vertical-align:top}}code{{font-size:85%}}</style></head><body>
<h1>CARB: executed notebooks of run <code>{esc(run_name)}</code></h1>
<p>Profile <b>{esc(profile or "?")}</b>, written {esc(datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))}
by <code>carb reproduce</code>. Each page is one notebook as executed by papermill (inputs,
tables, figures); nothing needs to run to read it. The values each notebook recorded
(<code>summary.json</code>) are listed below the pages.</p>
<table><tr><th>notebook</th><th>run time (s)</th><th>recorded values</th><th>parameters</th></tr>
{rows}
</table>
<h2>Recorded values</h2>
{values}
</body></html>
"""
    out = run_dir / "index.html"
    out.write_text(page, encoding="utf-8")
    (run_dir / "pages.json").write_text(json.dumps(pages, indent=2, default=str))
    return out


def publish_run(run_dir: str | Path, dest: str | Path = "docs/run",
                max_image_width: int = 900, max_mb: float = 10.0) -> list[Path]:
    """Copy a run's pages into ``dest`` (replacing what is there): every executed notebook as a
    self-contained HTML page with PNG outputs shrunk to ``max_image_width`` pixels, the index
    and ``summary.json``.

    Raises
    ------
    ReproduceError
        If the run has no executed notebook or the pages exceed ``max_mb`` megabytes.
    """
    run_dir, dest = Path(run_dir), Path(dest)
    notebooks = sorted(run_dir.glob("*.ipynb"))
    if not notebooks:
        raise ReproduceError(f"{run_dir} has no executed notebook")
    pages_path = run_dir / "pages.json"
    pages = json.loads(pages_path.read_text()) if pages_path.exists() else [
        {"name": nb.stem, "page": nb.with_suffix(".html").name} for nb in notebooks]
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    written = [write_html(nb, dest / nb.with_suffix(".html").name, max_image_width)
               for nb in notebooks]
    if (run_dir / "summary.json").exists():
        shutil.copy2(run_dir / "summary.json", dest / "summary.json")
    profile = run_dir.name.split("-", 1)[0]
    written.append(write_index(dest, pages, profile=profile, run_name=run_dir.name))
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file()) / 1e6
    if size > max_mb:
        raise ReproduceError(f"published pages take {size:.1f} MB > {max_mb} MB; "
                             f"lower max_image_width ({max_image_width})")
    return written
