import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

os.environ.setdefault("MPLBACKEND", "Agg")
# Two pytest-xdist workers share the two cores: an OpenMP thread that waits for work sleeps
# instead of spinning on the core the other worker needs (libgomp of torch, LightGBM, XGBoost;
# read when they load, so set before any test imports them; kernels and subprocesses inherit
# it). Results do not change, only how idle threads wait.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(autouse=True, scope="session")
def _torch_threads():
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover
        pass


@pytest.fixture(autouse=True)
def _the_test_process_keeps_its_own_heap(monkeypatch):
    """The study's protocol keeps the CPU heap (``cpu_keep_heap``, the default), and
    :func:`carb_lib.measure.heap.keep_heap` changes the calling process's allocator for good.
    In this process a test that measures gets a stand-in that only marks the heap kept, for
    that test: otherwise every later test would run on a kept heap, and what it sees would
    depend on the order of the tests. Measuring subprocesses keep theirs for real; a test that
    passes its own C library (``keep_heap(libc)``) gets the real function, and so does one
    that sets ``keep_heap.real`` back (with ``heap._libc`` replaced)."""
    from carb_lib.measure import devices, heap

    real = heap.keep_heap

    def stand_in(libc=None):
        if libc is not None:
            return real(libc)
        heap._KEPT = True

    stand_in.real = real  # for a test of the real path (with a stand-in C library)
    monkeypatch.setattr(heap, "_KEPT", heap._KEPT)  # put back after the test
    monkeypatch.setattr(heap, "keep_heap", stand_in)
    monkeypatch.setattr(devices, "keep_heap", stand_in)


# ---------------------------------------------------------------------------- exact features
def _compare_chunk(configs):
    """In a spawned child: one thread, then :func:`carb_lib.dataset.features.compare_features`."""
    import torch

    from carb_lib.dataset.features import compare_features

    torch.set_num_threads(1)
    return compare_features(configs)


@pytest.fixture(scope="session")
def compare_features_in_processes():
    """``compare(configs, processes=2)``: :func:`carb_lib.dataset.features.compare_features` on the
    rows split across fresh processes (``spawn``), concatenated in the original row order of
    each part. The exact-feature checks are CPU-bound and serial: two processes halve their
    time on the two cores of CI when pytest runs alone. Under pytest-xdist the other worker
    already holds the second core, so the rows are compared in this process (spawning would
    only add two imports of torch). Rows of one architecture stay together so that each
    process reuses its meta models."""
    import concurrent.futures as cf
    import multiprocessing as mp
    import os

    import pandas as pd

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))

    def compare(configs, processes: int = 2):
        if processes <= 1 or workers > 1:
            return _compare_chunk(configs)
        arch = [c for c in configs.columns if c not in ("config_id", "batch", "resolution")]
        code = configs.groupby(arch, sort=False, dropna=False).ngroup().to_numpy()
        parts = [configs[code % processes == i] for i in range(processes)]
        parts = [p for p in parts if len(p)]
        with cf.ProcessPoolExecutor(len(parts), mp_context=mp.get_context("spawn")) as ex:
            return pd.concat(list(ex.map(_compare_chunk, parts)), ignore_index=True)

    return compare


# ---------------------------------------------------------------------------- notebook tests
@pytest.fixture
def run_notebook(tmp_path):
    """Run one notebook through the reproduce runner with the given parameters.

    Returns ``run(notebook, params) -> (recorded, out_root)``: the notebook runs as the only
    entry of a ``quick`` profile in ``tmp_path/runs.yaml``, executed copies go to
    ``tmp_path/runs`` and outputs under ``tmp_path/out``; ``recorded`` is its summary entry,
    checked to equal the values glued in the executed notebook, and its HTML page is checked to
    show at least as many images as the notebook saved figures.
    """

    def run(notebook: str, params: dict) -> tuple[dict, Path]:
        import yaml

        from carb_lib.app.record import read_glued
        from carb_lib.app.reproduce import run_profile

        runs = tmp_path / "runs.yaml"
        runs.write_text(yaml.safe_dump(
            {"profiles": {"quick": [{"notebook": notebook, "parameters": params}]}}))
        out = tmp_path / "out"
        name = Path(notebook).stem
        summary = run_profile("quick", runs_file=runs, run_dir=tmp_path / "runs", out_root=out)
        rec = summary[name]
        assert rec == read_glued(tmp_path / "runs" / f"{name}.ipynb")
        # its page shows every figure it saved (an image per saved PNG, at least)
        import json

        (page,) = json.loads((tmp_path / "runs" / "pages.json").read_text())
        assert page["images"] >= len(page["figures_saved"]), page
        return rec, out

    return run


@pytest.fixture
def check_profiles(repo_root):
    """Check a notebook's entries in ``papermill_runs.yaml`` against its parameters cell.

    Returns ``check(notebook, required) -> {profile: NotebookRun}``: the notebook has one cell
    tagged ``parameters`` that names every parameter in ``required``, and each profile
    (``quick``, ``full``) has one entry for it, passing only parameters that cell names.
    """

    def check(notebook: str, required: set[str]) -> dict:
        import nbformat

        from carb_lib.app.reproduce import load_runs

        nb = nbformat.read(str(repo_root / notebook), as_version=4)
        (cell,) = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        names = {line.split("=")[0].strip() for line in cell.source.splitlines()
                 if "=" in line and not line.startswith("#")}
        assert set(required) <= names
        runs = {}
        for profile in ("quick", "full"):
            (run,) = [r for r in load_runs(profile) if r.name == Path(notebook).stem]
            assert set(run.parameters) <= names, (profile, set(run.parameters) - names)
            runs[profile] = run
        return runs

    return check


@pytest.fixture
def fake(monkeypatch):
    """``fake(**kw)`` installs a stand-in ``pynvml`` (``make_fake_pynvml`` of
    tests/test_telemetry.py) for the test and returns it: NVML mocked at the boundary."""
    from test_telemetry import make_fake_pynvml

    def install(**kw):
        mod = make_fake_pynvml(**kw)
        monkeypatch.setitem(sys.modules, "pynvml", mod)
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        return mod

    return install


# ---------------------------------------------------------------------------- test order
def pytest_collection_modifyitems(config, items):
    """Modules holding a ``slow`` or ``browser`` test run first, each module kept whole (its
    module fixtures are built once) and in its own order. pytest-xdist hands the tests out
    from the front: the long notebook and browser runs start early and the short tests fill
    the cores at the end, instead of one long test keeping a single worker busy after the
    other has finished."""
    heavy = {item.module.__name__ for item in items if item.get_closest_marker("slow")
             or item.get_closest_marker("browser")}
    items.sort(key=lambda item: item.module.__name__ not in heavy)  # stable: order otherwise
