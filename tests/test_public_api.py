"""The public API of ``carb_lib``: at most twelve names, imported lazily, each one the object of
its stage's module, and the ones the README's Python example imports (that example runs in
``tests/test_readme.py``)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import carb_lib

ROOT = Path(__file__).resolve().parents[1]


def _fresh(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_all_lists_at_most_twelve_names():
    assert 0 < len(carb_lib.__all__) <= 12
    assert len(set(carb_lib.__all__)) == len(carb_lib.__all__)
    assert set(carb_lib.__all__) <= set(dir(carb_lib))


def test_import_carb_lib_loads_neither_torch_nor_sklearn():
    out = _fresh("import json, sys, carb_lib; "
                 "print(json.dumps(sorted(m for m in sys.modules "
                 "if m.split('.')[0] in ('torch', 'sklearn', 'pandas') "
                 "or m.startswith('carb_lib.'))))")  # fmt: skip
    assert json.loads(out) == []


def test_the_glue_every_notebook_imports_loads_no_notebook_reader():
    """Every notebook imports ``glue``; nbformat (with jsonschema's format checkers, about a
    second) loads only when an executed notebook is read back."""
    out = _fresh("import json, sys; from carb_lib.app.record import glue, read_glued; "
                 "print(json.dumps(sorted(m for m in sys.modules "
                 "if m.split('.')[0] in ('nbformat', 'jsonschema'))))")  # fmt: skip
    assert json.loads(out) == []


def test_each_name_is_the_object_of_its_module():
    from carb_lib.ensemble import CARBRegressor, load_model, preset
    from carb_lib.measure.profiling import profile_config
    from carb_lib.screening import DeploymentSpec, screen
    from carb_lib.transfer.pairwise import few_shot_predict

    assert carb_lib.CARBRegressor is CARBRegressor
    assert carb_lib.preset is preset and carb_lib.load_model is load_model
    assert carb_lib.profile is profile_config
    assert carb_lib.screen is screen and carb_lib.DeploymentSpec is DeploymentSpec
    assert carb_lib.few_shot_predict is few_shot_predict
    for name in carb_lib.__all__:
        assert callable(getattr(carb_lib, name)), name


def test_each_name_imports_in_a_fresh_interpreter():
    out = _fresh("import carb_lib; "
                 "print(all(callable(getattr(carb_lib, n)) for n in carb_lib.__all__))")
    assert out.split() == ["True"]


def test_unknown_names_and_submodules():
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        _ = carb_lib.no_such_name
    from carb_lib.families import space
    from carb_lib.kernels import law as kernels  # submodules import as before

    assert callable(space.paper_grid) and callable(kernels.read_bench)


def test_the_readme_example_imports_the_public_api_only():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```python\n(.*?)```", text, re.S)
    imports = [n for n in ast.walk(ast.parse(block)) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert imports
    for node in imports:
        assert isinstance(node, ast.ImportFrom) and node.module == "carb_lib", ast.unparse(node)
        assert {a.name for a in node.names} <= set(carb_lib.__all__), ast.unparse(node)


@pytest.mark.parametrize("old, new", [("carb_lib.profiling", "carb_lib.measure.profiling"),
                                      ("carb_lib.campaign", "carb_lib.measure.campaign"),
                                      ("carb_lib.space", "carb_lib.families.space")])
def test_moved_module_paths_still_import_with_a_deprecation_warning(old, new):
    import importlib
    import sys

    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: import {new} instead"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)


def test_stage_packages_reexport_their_main_module_lazily():
    from carb_lib import dataset, transfer
    from carb_lib.dataset import schema
    from carb_lib.transfer import pairwise

    assert dataset.read_dataset is schema.read_dataset
    name = pairwise.__all__[-1]
    assert getattr(transfer, name) is getattr(pairwise, name)
    with pytest.raises(AttributeError, match="'carb_lib.dataset' has no attribute 'nope'"):
        _ = dataset.nope
