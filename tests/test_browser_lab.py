"""A real browser drives JupyterLab: open notebook 01, run all cells, move a widget of the
scaling explorer and check that the rows shown and the figure change; open notebook 03's cost
widget (its setup cells and the cost cell), ask for an extrapolated fp16 batch-256 network at
224 px and check that the numbers are rounded and no warning is shown.

The test starts its own JupyterLab server on 127.0.0.1 (free port, random token) on a copy of
notebook 01 whose parameters select the small SYNTHETIC demo, with the project's kernel
("CARB (.venv)", :mod:`carb_lib.app.lab`) registered in a temporary Jupyter path, and drives
Debian's Chromium headless through Playwright (no browser download). It always stops the
server. With ``CARB_UPDATE_SCREENSHOT=1`` it writes the README's screenshot
``figures/jupyterlab_explorer.png``; otherwise the screenshot goes to the test's temporary folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from carb_lib.app.lab import DISPLAY_NAME, KERNEL_NAME

# Runs by default; skipped (with the reason) without JupyterLab, ipywidgets, Playwright or
# Chromium. It used to fail (until 2026-11-30): it clicked Run All as soon as the toolbar said
# "idle", which it says before the notebook's kernel exists; JupyterLab then started a second
# kernel, asked "Select Kernel" and executed nothing. It now waits for the kernel (KERNEL_READY).
pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "01_characterization.ipynb"
COST_NOTEBOOK = REPO / "notebooks" / "03_carb.ipynb"
# the README's picture; rewritten only on request (CARB_UPDATE_SCREENSHOT=1), so that a test run
# leaves the tracked file alone
SCREENSHOT = REPO / "figures" / "jupyterlab_explorer.png"
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-extensions"]
FIGURE = ".carb-explorer .jp-OutputArea-output img"  # the explorer's figure (a PNG)
ROWS = re.compile(r"([\d,]+) rows shown \(of ([\d,]+) ok rows")
# true once the current notebook's session runs kernel ``name``, connected and idle, with no
# dialog open and Run All enabled (JupyterLab is exposed as window.jupyterapp)
KERNEL_READY = """name => {
  const app = window.jupyterapp, w = app && app.shell.currentWidget;
  const ctx = w && w.sessionContext, k = ctx && ctx.session && ctx.session.kernel;
  return !!k && k.name === name && k.connectionStatus === 'connected' && k.status === 'idle'
    && !document.querySelector('.jp-Dialog')
    && app.commands.isEnabled('notebook:run-all-cells');
}"""


def _chromium() -> str | None:
    for name in (os.environ.get("CARB_CHROMIUM"), "chromium", "chromium-browser"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _small_notebook(dest: Path, out: Path) -> Path:
    """Copy notebook 01 with parameters for the small SYNTHETIC demo, outputs under ``out``."""
    import nbformat

    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    cell.source += ("\n# browser test: small SYNTHETIC demo, outputs in a temporary folder\n"
                    "synthetic_demo = True\nsynthetic_n = 720\nquick = True\nn_boot = 20\n"
                    # one platform: half the figures (the explorer shows this one first)
                    "platform = 'synthetic_cpu'\n"
                    f"fig_dir = {str(out / 'figures')!r}\nresults_dir = {str(out / 'results')!r}\n")
    # open with the kernel registered by the fixture (no kernel choice)
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": DISPLAY_NAME,
                                 "language": "python"}
    path = dest / NOTEBOOK.name
    nbformat.write(nb, str(path))
    return path


def _cost_notebook(dest: Path, out: Path) -> Path:
    """Notebook 03's parameters, setup and cost-widget cells, SYNTHETIC quick demo."""
    import nbformat

    nb = nbformat.read(str(COST_NOTEBOOK), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    params = next(c for c in code if "parameters" in c.metadata.get("tags", []))
    setup = code[code.index(params) + 1]
    cost = next(c for c in code if "explore.network_cost(" in c.source)
    params.source += ("\n# browser test: small SYNTHETIC demo, outputs in a temporary folder\n"
                      "synthetic_demo = True\nsynthetic_n = 360\nquick = True\n"
                      f"fig_dir = {str(out / 'figures')!r}\n"
                      f"results_dir = {str(out / 'results')!r}\n")
    nb.cells = [params, setup, cost]
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": DISPLAY_NAME,
                                 "language": "python"}
    path = dest / "03_cost_widget.ipynb"
    nbformat.write(nb, str(path))
    return path


#: The index of the first code cell whose outputs hold a widget (-1: none yet), read from the
#: notebook's model rather than the page (cells out of view are not drawn).
WIDGET_CELL = """() => {
  const w = window.jupyterapp.shell.currentWidget, m = w && w.content && w.content.model;
  if (!m) return false;
  for (let i = 0; i < m.cells.length; i++) {
    const c = m.cells.get(i);
    if (c.type !== 'code') continue;
    for (let j = 0; j < c.outputs.length; j++) {
      const d = c.outputs.get(j).data;
      if (d && d['application/vnd.jupyter.widget-view+json']) return i;
    }
  }
  return false;
}"""


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """JupyterLab on 127.0.0.1 serving small copies of notebooks 01 and 03; yields (url, token).
    One server for the module's tests (each opens its own notebook)."""
    pytest.importorskip("jupyterlab")
    pytest.importorskip("ipywidgets")
    tmp_path = tmp_path_factory.mktemp("lab_server")
    root = tmp_path / "lab"
    root.mkdir()
    _small_notebook(root, tmp_path / "out")
    _cost_notebook(root, tmp_path / "out")
    with _jupyterlab(tmp_path, root) as server:
        yield server


@contextlib.contextmanager
def _jupyterlab(tmp_path: Path, root: Path, package: Path = REPO, args: tuple[str, ...] = ()):
    """A JupyterLab server on ``root`` whose kernels import ``carb_lib`` from ``package``;
    yields (url, token) and always stops it (its kernels too)."""
    from carb_lib.app.lab import kernel_spec

    kdir = tmp_path / "jupyter" / "kernels" / KERNEL_NAME
    kdir.mkdir(parents=True)
    (kdir / "kernel.json").write_text(json.dumps(kernel_spec(sys.executable)))
    # no "get notified about Jupyter news?" toast over the screenshot, no build check (seconds
    # of CPU at the first page load), no language servers or terminals
    (tmp_path / "cfg" / "labconfig").mkdir(parents=True)
    (tmp_path / "cfg" / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True,
                                "@jupyterlab/lsp-extension": True},
         "buildCheck": False, "buildAvailable": False}))
    (tmp_path / "cfg" / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"jupyter_lsp": False,
                                               "jupyter_server_terminals": False}}}))
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "JUPYTER_PLATFORM_DIRS")}
    env.update(JUPYTER_PATH=str(tmp_path / "jupyter"), JUPYTER_CONFIG_DIR=str(tmp_path / "cfg"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), CARB_STATIC="",
               PYTHONPATH=os.pathsep.join([str(package), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"))
    port, token = _free_port(), os.urandom(16).hex()
    log = open(tmp_path / "lab.log", "w")  # noqa: SIM115 - closed in teardown
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--ServerApp.port_retries=0", "--LabApp.news_url=",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.extension_manager=readonly", "--LabApp.expose_app_in_browser=True",
         *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []), *args],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited ({proc.returncode}):\n"
                            f"{(tmp_path / 'lab.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not answer within 90 s:\n"
                                + (tmp_path / "lab.log").read_text()[-3000:])
                time.sleep(0.5)
        yield url, token
    finally:
        try:  # shuts the kernels down too
            req = urllib.request.Request(f"{url}/api/shutdown?token={token}", method="POST")
            urllib.request.urlopen(req, timeout=5).close()
            proc.wait(timeout=20)
        except Exception:  # noqa: BLE001 - fall back to signals
            pass
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()


def _rows(text: str) -> tuple[int, int]:
    """(rows shown, ok rows in all) from the explorer's "rows shown" line."""
    m = ROWS.search(text)
    assert m, f"no 'rows shown (of N ok rows' in {text!r}"
    return int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))


def _new_figure(page, old_src: str | None) -> str:
    """Wait until the explorer shows a figure other than ``old_src``; return its src."""
    page.wait_for_function(
        "([sel, old]) => { const e = document.querySelector(sel);"
        " return e && e.complete && e.naturalWidth > 0 && e.getAttribute('src') !== old; }",
        arg=[FIGURE, old_src], timeout=60_000)
    src = page.locator(FIGURE).first.get_attribute("src")
    assert src and src != old_src
    return src


@pytest.fixture(scope="module")
def browser_tools():
    """(Chromium's path, playwright.sync_api); skips before any server starts if one is missing."""
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no Chromium (Debian package 'chromium'; .ci/run installs it with apt-get)")
    return chromium, pytest.importorskip("playwright.sync_api")


def test_explorer_in_jupyterlab_reacts_to_widgets(browser_tools, lab_server, tmp_path):
    chromium, sync_api = browser_tools
    url, token = lab_server
    t0 = time.monotonic()
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.set_default_timeout(60_000)
            page.goto(f"{url}/lab/tree/{NOTEBOOK.name}?token={token}&reset")
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=120_000)
            # Wait until the notebook's session has the project's kernel, connected and idle.
            # The toolbar's execution indicator says "idle" before any kernel exists (the
            # session is created a moment after the cells are shown); Run All at that moment
            # makes JupyterLab start a second kernel, kill the first and ask "Select Kernel",
            # and the cells are not executed (the failure of 2026-11-30).
            page.wait_for_function(KERNEL_READY, arg=KERNEL_NAME, timeout=120_000)
            t_kernel = time.monotonic()
            # Run > Run All Cells, through JupyterLab's command registry (what the menu calls);
            # do not await the command's promise: it resolves only when every cell has run
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells');"
                          " return true; }")

            count = page.locator(".carb-explorer-count").first
            count.wait_for(state="visible", timeout=300_000)
            t_run = time.monotonic()
            before = count.inner_text()
            n_before, n_ok = _rows(before)
            assert n_before > 0
            page.locator(FIGURE).first.wait_for(state="visible")
            src_before = page.locator(FIGURE).first.get_attribute("src")

            # the initial selection keeps fp32 only; select both precisions
            precision = page.locator(".carb-explorer .widget-select-multiple",
                                     has_text="precision").locator("select")
            precision.select_option(label=["fp16", "fp32"])
            page.wait_for_function(
                "([sel, old]) => { const e = document.querySelector(sel);"
                " return e && e.innerText !== old; }",
                arg=[".carb-explorer-count", before], timeout=60_000)
            after = count.inner_text()
            n_after, _ = _rows(after)
            # every other filter keeps all values: both precisions show every ok row (about
            # twice as many: the SYNTHETIC demo has each config in fp32 and fp16)
            assert n_before < n_after == n_ok, (before, after)
            src_after = _new_figure(page, src_before)

            # a second control: the target; the power law line names it
            target = page.locator(".carb-explorer .widget-dropdown", has_text="target") \
                .locator("select")
            target.select_option(label="peak memory (MiB)")
            page.wait_for_function(
                "sel => document.querySelector(sel).innerText.includes('peak memory ~ FLOPs per batch')",
                arg=".carb-explorer-count", timeout=60_000)
            assert _rows(count.inner_text())[0] == n_after
            _new_figure(page, src_after)
            # the redraw is complete (the screenshot shows the figure of the new selection)
            page.wait_for_function(KERNEL_READY, arg=KERNEL_NAME)

            page.locator(".carb-explorer").first.scroll_into_view_if_needed()
            shot = SCREENSHOT if os.environ.get("CARB_UPDATE_SCREENSHOT") else tmp_path / "lab.png"
            shot.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(shot))
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"))
            raise
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
    print(f"browser test: kernel ready after {t_kernel - t0:.0f} s, notebook run "
          f"{t_run - t_kernel:.0f} s, widgets {time.monotonic() - t_run:.0f} s")


@contextlib.contextmanager
def _lab_page(browser_tools, failure: Path):
    """A headless Chromium page (a screenshot to ``failure`` when the block raises)."""
    chromium, sync_api = browser_tools
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.set_default_timeout(60_000)
            try:
                yield page
            except Exception:
                page.screenshot(path=str(failure))
                raise
        finally:
            browser.close()


def _run_all(page, url: str, token: str, name: str) -> None:
    """Open notebook ``name`` in JupyterLab, wait for its kernel and run all cells."""
    page.goto(f"{url}/lab/tree/{name}?token={token}&reset")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=120_000)
    page.wait_for_function(KERNEL_READY, arg=KERNEL_NAME, timeout=120_000)
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells');"
                  " return true; }")


def _cost_settled(page) -> None:
    """Wait until the kernel is idle and the cost widget shows a whole report: its three
    tables (prediction, nearest rows, training range) rendered, not a report half drawn."""
    page.wait_for_function(KERNEL_READY, arg=KERNEL_NAME, timeout=120_000)
    page.wait_for_function(
        "sel => { const e = document.querySelector(sel);"
        " return e && e.querySelectorAll('table').length >= 3"
        " && e.innerText.includes('against the training range'); }",
        arg=".carb-cost", timeout=120_000)


# a number in the widget's tables: digits with thousands commas and one decimal point
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def test_cost_widget_in_jupyterlab_rounds_and_shows_no_warning(browser_tools, lab_server,
                                                               tmp_path):
    url, token = lab_server
    with _lab_page(browser_tools, tmp_path / "failure_cost.png") as page:
        _run_all(page, url, token, "03_cost_widget.ipynb")
        widget = page.locator(".carb-cost").first
        widget.wait_for(state="visible", timeout=300_000)
        _cost_settled(page)
        # fp16, batch 256, resolution 224: outside the training rows (32 to 128 px)
        for name, value in (("precision", "fp16"), ("batch", "256"), ("resolution", "224")):
            before = widget.inner_text()
            select = widget.locator(".widget-dropdown", has_text=name).locator("select")
            select.select_option(label=value)
            page.wait_for_function(
                "([sel, old]) => { const e = document.querySelector(sel);"
                " return e && e.innerText !== old && e.querySelector('table'); }",
                arg=[".carb-cost", before], timeout=120_000)
            _cost_settled(page)
            chosen = select.evaluate("s => s.options[s.selectedIndex].text")
            assert chosen == value, (name, chosen)
        # the last report (224 px: outside the training range in resolution), drawn whole
        page.wait_for_function(
            "sel => { const e = document.querySelector(sel); if (!e) return false;"
            " const t = e.innerText, i = t.indexOf('EXTRAPOLATION');"
            " return i >= 0 && t.slice(i, i + 300).includes('resolution')"
            " && e.querySelectorAll('table').length >= 3"
            " && t.includes('against the training range'); }",
            arg=".carb-cost", timeout=120_000)
        _cost_settled(page)
        text = widget.inner_text()
        assert "EXTRAPOLATION" in text and "resolution" in text, text[:2000]
        tables = widget.locator("table")
        prediction = tables.nth(0).inner_text()
        assert "interval" in prediction and "predicted" in prediction, prediction
        for num in NUMBER.findall(prediction):
            digits = num.replace(",", "").replace(".", "").lstrip("0")
            if "." not in num:
                digits = digits.rstrip("0")
            assert len(digits) <= 3, (num, prediction)
        nearest = tables.nth(1).inner_text()
        rows = [r for r in nearest.splitlines()[1:] if r.strip()]
        assert rows and all("fp16" in r for r in rows), nearest  # same precision first
        assert "e+" not in nearest and "NaN" not in nearest, nearest
        # no warning anywhere in the notebook's outputs (warnings go to stderr)
        assert page.locator("[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
        assert "Warning" not in page.locator(".jp-NotebookPanel").first.inner_text()


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
@pytest.mark.skipif(not (REPO / "data" / "cpu_epyc_zen3_2c" / "design" / "rows.parquet").is_file()
                    or not (REPO / "data" / "gpu_nvidia_h200" / "design" / "rows.parquet").is_file(),
                    reason="the shipped Zen 3 and H200 rows are not in this checkout")
def test_notebook_03_run_all_answers_within_a_minute_predicts_h200_energy_and_saves_clean(
        browser_tools, tmp_path):
    """The whole notebook 03 with its own defaults, in JupyterLab on a clone of this checkout
    (its kernels importing the clone's carb_lib, ``make lab``'s save hook): Run All shows the
    cost widget within 60 s (before the study); after an interrupt the widget predicts energy on
    the H200 in words, no code name shown; a save leaves ``git status`` of the clone clean (the
    hook on notebook 01's outputs: ``tests/test_environment.py``)."""
    pytest.importorskip("jupyterlab")
    pytest.importorskip("ipywidgets")
    clone = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    hook = "--ContentsManager.pre_save_hook=carb_lib.app.lab.strip_on_save"
    with _jupyterlab(tmp_path, clone / "notebooks", package=clone, args=(hook,)) as (url, token), \
            _lab_page(browser_tools, tmp_path / "failure_study.png") as page:
        _run_all(page, url, token, "03_carb.ipynb")
        t_run = time.monotonic()
        # the widget's output in the notebook's model (JupyterLab draws only the cells in
        # view, and Run All scrolls on to the running cell)
        handle = page.wait_for_function(WIDGET_CELL, timeout=180_000)
        answered_s = time.monotonic() - t_run
        assert answered_s < 60, f"the cost widget answered {answered_s:.0f} s after Run All"
        cell = handle.json_value()
        # the study runs on below; a kernel runs one cell at a time: interrupt it
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:interrupt-kernel')")
        page.wait_for_function(KERNEL_READY, arg=KERNEL_NAME, timeout=120_000)
        page.evaluate("i => { const nb = window.jupyterapp.shell.currentWidget.content;"
                      " nb.activeCellIndex = i; return nb.scrollToItem(i, 'start'); }", cell)
        widget = page.locator(".carb-cost").first
        widget.wait_for(state="visible", timeout=60_000)
        _cost_settled(page)
        assert "Predicted for AMD EPYC Zen 3" in widget.inner_text()
        before = widget.inner_text()
        platform = widget.locator(".widget-dropdown", has_text="platform").locator("select")
        platform.select_option(label="NVIDIA H200 GPU")
        page.wait_for_function(
            "([sel, old]) => { const e = document.querySelector(sel);"
            " return e && e.innerText !== old && e.innerText.includes('NVIDIA H200')"
            " && e.querySelectorAll('table').length >= 3; }",
            arg=[".carb-cost", before], timeout=120_000)
        page.wait_for_function(KERNEL_READY, arg=KERNEL_NAME, timeout=120_000)
        text = widget.inner_text()
        energy = re.search(r"energy per batch\s+([\d.,]+) (m?J)\s+([\d.,]+) m?J to ([\d.,]+)",
                           text)
        assert energy, text[:2000]
        lo, mid, hi = (float(energy.group(i).replace(",", "")) for i in (3, 1, 4))
        assert 0 < lo < mid < hi, energy.group(0)
        # words where a person reads: no code name of the vocabulary in the rendered widget,
        # its controls' labels and options included
        from carb_lib.core.vocab import code_names

        raw = re.compile(r"(?<![\w-])(" + "|".join(sorted(map(re.escape, code_names()),
                                                            key=len, reverse=True)) + r")(?![\w-])")
        shown = text + "\n" + "\n".join(
            widget.locator("select option, label, .widget-label").all_inner_texts())
        assert not raw.findall(shown), sorted(set(raw.findall(shown)))
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty",
                               timeout=60_000)
    status = subprocess.run(["git", "-C", str(clone), "status", "--porcelain"], check=True,
                            capture_output=True, text=True).stdout
    assert status == "", status
    print(f"browser test: notebook 03's cost widget answered {answered_s:.0f} s after Run All")
