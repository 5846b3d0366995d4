"""The pages of a reproduce run: each executed notebook as one self-contained HTML page, and
the run's ``index.html`` (the commit, the paper's claims against ours, the pages and every
recorded value).

A page shows no progress bars or recorded-value printouts (:func:`clean_outputs`), and each
image of a notebook's outputs gets an alt text naming where it stands in the notebook
(:func:`image_captions`). The index shows recorded numbers rounded for reading
(:func:`display_value`); ``summary.json`` keeps them at full precision. The runner and
publishing are in :mod:`carb_lib.app.reproduce`.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from carb_lib.app.record import MIME

#: Progress-bar text (tqdm) in a stream or a widget's text fallback.
PROGRESS = re.compile(r"\d+%\|.*\||\d+it \[|it/s\]|s/it\]")
#: The alt text nbconvert gives an image that has none.
NBCONVERT_ALT = "No description has been provided for this image"
#: Significant digits of a non-integer number in the index.
DIGITS = 4
#: Output types shown as images, in nbconvert's order of preference.
IMAGE_TYPES = ("image/png", "image/jpeg")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def page_images(page: str | Path) -> int:
    """Number of inline PNG images in an HTML page written by :func:`write_html`."""
    return Path(page).read_text(encoding="utf-8").count('src="data:image/png;base64,')


# --------------------------------------------------------------------------- HTML pages
def write_html(notebook: str | Path, out: str | Path, max_image_width: int | None = None) -> Path:
    """Write an executed notebook as one self-contained HTML page (JupyterLab look, images
    inline as data URIs, each with the alt text of :func:`image_captions`), without progress
    bars or recorded-value printouts (:func:`clean_outputs`). ``max_image_width`` (pixels)
    shrinks wider PNG outputs first."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(notebook), as_version=4)
    clean_outputs(nb)
    if max_image_width:
        shrink_images(nb, max_image_width)
    exporter = HTMLExporter(template_name="lab", embed_images=True)
    body, _ = exporter.from_notebook_node(nb)
    out = Path(out)
    out.write_text(set_alt_texts(body, image_captions(nb)), encoding="utf-8")
    return out


def _plain(markdown: str) -> str:
    """The text of a one-line markdown heading: no links, code marks or emphasis marks."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    text = re.sub(r"`|\*\*|__|(?<!\w)[*_]|[*_](?!\w)", "", text)
    return " ".join(text.split())


def image_captions(nb) -> dict[str, str]:
    """An alt text for every image output of ``nb``, keyed by its data URI (whitespace removed).

    The text names the nearest markdown heading above the cell and the notebook's title (its
    first level-1 heading), e.g. ``"Scaling with the workload, in 01 — Workload
    characterization, figure 2 of 4"``; the position is given when the cell shows several
    images. A cell under no heading is named by its execution count. Images with the same
    data share the text of the first.
    """
    title = heading = ""
    captions: dict[str, str] = {}
    for cell in nb.cells:
        if cell.get("cell_type") == "markdown":
            for line in cell.get("source", "").splitlines():
                match = _HEADING.match(line)
                if match and _plain(match.group(2)):
                    heading = _plain(match.group(2))
                    if not title and len(match.group(1)) == 1:
                        title = heading
            continue
        uris = []
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            mime = next((m for m in IMAGE_TYPES if data.get(m)), None)
            if mime is not None:
                uris.append(f"data:{mime};base64," + "".join(str(data[mime]).split()))
        if heading and title and heading != title:
            where = f"{heading}, in {title}"
        elif heading or title:
            where = heading or title
        else:
            where = f"Output of cell [{cell.get('execution_count') or ' '}]"
        for i, uri in enumerate(uris, 1):
            text = f"{where}, figure {i} of {len(uris)}" if len(uris) > 1 else where
            captions.setdefault(uri, text)
    return captions


def set_alt_texts(page: str, captions: dict[str, str]) -> str:
    """``page`` (HTML) with the alt text of each ``<img>`` whose source is a key of
    ``captions`` set to its value, where the image has none or nbconvert's placeholder
    (:data:`NBCONVERT_ALT`)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, features="html.parser")
    changed = 0
    for img in soup.find_all("img"):
        text = captions.get("".join(str(img.get("src", "")).split()))
        if text and img.get("alt") in (None, "", NBCONVERT_ALT):
            img["alt"] = text
            changed += 1
    return str(soup) if changed else page


def display_value(value: Any) -> str:
    """A recorded value as the index shows it: JSON, with every non-integer number rounded
    to :data:`DIGITS` significant digits (``12.100678707574476`` -> ``12.1``), integers and
    integral floats as integers (``17280.0`` -> ``17280``) and numbers of 10**DIGITS or more
    to the unit (``123456.78`` -> ``123457``), inside lists and mappings too."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return json.dumps(value)  # NaN, Infinity, -Infinity as summary.json has them
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        text = f"{value:.{DIGITS}g}"
        return f"{value:.0f}" if "e+" in text else text
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(display_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {display_value(v)}"
                               for k, v in value.items()) + "}"
    return json.dumps(value, default=str)


def clean_outputs(nb) -> int:
    """Drop from ``nb`` (in place) the outputs a reader should not see on a page: values
    recorded with :func:`carb_lib.app.record.glue` (listed in the run's index instead) and tqdm
    progress bars (stderr text or widgets). Returns how many outputs were dropped."""
    def noise(output) -> bool:
        if output.get("output_type") == "stream":
            return output.get("name") == "stderr" and bool(PROGRESS.search(output.get("text", "")))
        data = output.get("data", {})
        if MIME in data:
            return True
        if "application/vnd.jupyter.widget-view+json" in data:
            return bool(PROGRESS.search(str(data.get("text/plain", ""))))
        return False

    dropped = 0
    for cell in nb.cells:
        outputs = cell.get("outputs")
        if not outputs:
            continue
        kept = [o for o in outputs if not noise(o)]
        dropped += len(outputs) - len(kept)
        cell["outputs"] = kept
    return dropped


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


def _claims_html(run_dir: Path) -> str:
    """The reviewer claims tables of a run folder as HTML (empty when there is none)."""
    import pandas as pd

    esc = html.escape
    parts = []
    for tag, title in (("", "The paper's claims against ours"),
                       ("_synthetic", "SYNTHETIC demo data, not measured: the paper's claims")):
        path = run_dir / f"claims_vs_paper{tag}.csv"
        if not path.is_file():
            continue
        table = pd.read_csv(path, keep_default_na=False)
        kind = table["verdict"].astype(str).str.split(" (", regex=False).str[0]
        counts = kind.value_counts()
        head = ", ".join(f"{int(counts.get(v, 0))} {v}"
                         for v in ("supported", "contradicted", "inconclusive", "not testable"))
        cols = [c for c in table.columns if c not in ("claim_id", "source")]
        body = "\n".join(
            f"<tr class='{esc(k.replace(' ', '-'))}'>"
            + "".join(f"<td class='{esc(c.split(' ')[0])}'>{esc(str(r[c]))}</td>" for c in cols)
            + "</tr>"
            for k, (_, r) in zip(kind, table.iterrows(), strict=True))
        parts.append(
            f"<h2>{esc(title)}</h2>\n<p>{esc(head)}. <i>paper (reported)</i> is the number the "
            "paper reports (arXiv 2608.10506; HELP's for the HELP rows), never ours; <i>n</i> "
            "counts what <i>n counts</i> says; <i>why</i> gives the band of the verdict or the "
            f"reason a claim cannot be tested here (<code>{esc(path.name)}</code>).</p>\n"
            "<table class='claims'><tr>" + "".join(f"<th>{esc(c)}</th>" for c in cols)
            + f"</tr>\n{body}\n</table>")
    return "\n".join(parts)


def write_index(run_dir: str | Path, pages: list[dict[str, Any]], profile: str = "",
                run_name: str | None = None) -> Path:
    """Write ``index.html`` in ``run_dir``: the commit and parameters of the run, the paper's
    claims against ours (``claims_vs_paper.csv`` of the run), one row per notebook page (link,
    run time, number of recorded values) and every recorded value from ``summary.json``,
    numbers rounded by :func:`display_value` (the file itself is not changed)."""
    run_dir = Path(run_dir)
    run_name = run_name or run_dir.name
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    meta = summary.get("_run", {})
    esc = html.escape
    rows = "\n".join(
        f"<tr><td><a href='{esc(p['page'])}'>{esc(p['name'])}</a></td>"
        f"<td>{esc(str(p.get('seconds', '')))}</td><td>{p.get('n_values', '')}</td>"
        f"<td>{len(p['figures_saved']) if 'figures_saved' in p else ''}</td>"
        f"<td>{p.get('images', '')}</td>"
        f"<td><details><summary>parameters</summary><code>"
        f"{esc(json.dumps(p.get('parameters', {})))}</code></details></td></tr>"
        for p in pages)
    values = "\n".join(
        f"<details><summary>{esc(name)}: {len(vals)} recorded values</summary><table>"
        + "".join(f"<tr><td><code>{esc(k)}</code></td><td>{esc(display_value(v))}</td></tr>"
                  for k, v in vals.items())
        + "</table></details>"
        for name, vals in summary.items() if not name.startswith("_"))
    commit = meta.get("commit") or "unknown"
    dirty = " (with uncommitted changes)" if meta.get("dirty") else ""
    overrides = meta.get("overrides") or {}
    varied = (f" Parameters changed from the profile: <code>{esc(json.dumps(overrides))}</code>."
              if overrides else "")
    written = meta.get("written") or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    failed = meta.get("failed")
    failed_html = "" if not failed else (
        f"<p class='failed'><b>Notebook {esc(failed['notebook'])} failed</b>; the run stopped "
        f"there{' (not run: ' + esc(', '.join(failed['not_run'])) + ')' if failed.get('not_run') else ''}."
        f"</p>\n<pre>{esc(failed['error'])}</pre>")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>CARB run {esc(run_name)}</title>
<style>body{{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;
vertical-align:top}}code{{font-size:85%}}table.claims td{{font-size:90%}}
tr.supported td.verdict{{color:#1a7f37}}tr.contradicted td.verdict{{color:#cf222e}}
tr.not-testable td{{color:#555}}</style></head><body>
<h1>CARB: the study's notebooks, executed</h1>
<p>Commit <code class="commit">{esc(commit)}</code>{esc(dirty)}; profile <b>{esc(profile or meta.get("profile") or "?")}</b>;
run <code>{esc(run_name)}</code>, written {esc(written)} by <code>carb reproduce</code>.{varied}</p>
{failed_html}
{_claims_html(run_dir)}
<h2>Notebooks</h2>
<p>Each page is one notebook as executed by papermill (inputs, tables, figures); nothing needs
to run to read it. The values each notebook recorded (<code>summary.json</code>) are listed
below.</p>
<table><tr><th>notebook</th><th>run time (s)</th><th>recorded values</th><th>figures saved</th>
<th>images on the page</th><th>parameters</th></tr>
{rows}
</table>
<h2>Recorded values</h2>
<p>Numbers are shown to {DIGITS} significant digits (integers in full, larger numbers to the
unit); <code>summary.json</code> holds them at full precision.</p>
{values}
</body></html>
"""
    out = run_dir / "index.html"
    out.write_text(page, encoding="utf-8")
    (run_dir / "pages.json").write_text(json.dumps(pages, indent=2, default=str))
    return out


