"""environment.yml (conda, GPU workstations) lists what pyproject.toml does, with the same bounds.

No conda channel is reachable from the test machines: the file is parsed, not solved.
"""

from __future__ import annotations

from pathlib import Path

import tomllib
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
#: conda-only entries (the interpreter, pip itself) and the packages an extra of a pyproject
#: requirement stands for (dask[distributed] -> distributed)
NOT_IN_PYPROJECT = {"python", "pip", "distributed"}


def _pyproject() -> dict[str, Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return {canonicalize_name(r.name): r for r in map(Requirement, reqs)}


def _environment() -> tuple[dict, dict[str, str], dict[str, str]]:
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    conda, pip = {}, {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for line in dep["pip"]:
                req = Requirement(line)
                pip[canonicalize_name(req.name)] = str(req.specifier)
            continue
        if dep.startswith("python="):
            conda["python"] = dep
            continue
        req = Requirement(dep)
        conda[canonicalize_name(req.name)] = str(req.specifier)
    return env, conda, pip


def test_every_dependency_and_extra_is_in_the_environment_with_the_same_bounds():
    _, conda, pip = _environment()
    listed = {**conda, **pip}
    for name, req in _pyproject().items():
        assert name in listed, f"environment.yml lacks {name} ({req})"
        assert listed[name] == str(req.specifier), (name, listed[name], str(req.specifier))
    extra = set(listed) - set(_pyproject()) - NOT_IN_PYPROJECT
    assert not extra, f"environment.yml lists packages pyproject.toml does not: {extra}"
    assert not set(conda) & set(pip), "a package listed twice"
    for req in _pyproject().values():  # dask[distributed,...]: its extras are listed too
        for sub in req.extras & {"distributed"}:
            assert listed[sub] == str(req.specifier), sub


def test_torch_with_cuda_and_nvml_come_from_pip_and_conda_forge_is_the_only_channel():
    env, conda, pip = _environment()
    assert env["channels"] == ["conda-forge"]
    assert {"torch", "nvidia-ml-py"} <= set(pip)
    assert not {"pytorch", "pytorch-cuda", "torch"} & set(conda)
    assert conda["python"].startswith("python=3.1")
    assert {"jupyterlab", "ipywidgets", "dask"} <= set(conda)


def test_jupyterlab_saves_tracked_notebooks_without_outputs_or_run_metadata(tmp_path,
                                                                            monkeypatch):
    """``make lab``'s pre-save hook: saving into the checkout's notebooks/ after a run writes the
    file as it was committed (no outputs, counts, timings, kernel metadata); a notebook
    elsewhere keeps them. The checkout here is a copy (tmp_path)."""
    import json
    import shutil

    from jupyter_server.services.contents.filemanager import FileContentsManager

    from carb_lib.app import lab

    root = Path(__file__).resolve().parents[1]
    name = "01_characterization.ipynb"
    (tmp_path / "notebooks").mkdir()
    shutil.copy(root / "notebooks" / name, tmp_path / "notebooks" / name)
    committed = (tmp_path / "notebooks" / name).read_text()
    monkeypatch.setattr(lab, "repo_root", lambda: tmp_path)
    cm = FileContentsManager(root_dir=str(tmp_path / "notebooks"),
                             pre_save_hook="carb_lib.app.lab.strip_on_save")
    nb = cm.get(name)["content"]
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs = [{"output_type": "stream", "name": "stdout", "text": "ran\n"}]
    code.execution_count = 7
    code.metadata["execution"] = {"iopub.status.idle": "2026-12-07T05:00:00Z"}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    cm.save({"type": "notebook", "format": "json", "content": nb}, name)
    assert json.loads((tmp_path / "notebooks" / name).read_text()) == json.loads(committed)
    # outside notebooks/ nothing is stripped
    code.outputs = [{"output_type": "stream", "name": "stdout", "text": "ran\n"}]
    (tmp_path / "elsewhere").mkdir()
    other = FileContentsManager(root_dir=str(tmp_path / "elsewhere"),
                                pre_save_hook=lab.strip_on_save)
    other.save({"type": "notebook", "format": "json", "content": nb}, name)
    saved = json.loads((tmp_path / "elsewhere" / name).read_text())
    assert any(c.get("outputs") for c in saved["cells"] if c["cell_type"] == "code")
