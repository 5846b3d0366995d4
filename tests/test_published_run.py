"""docs/run: the published pages name the commit they were run at, and it matches the
checkout's notebooks and library (carb_lib.app.reproduce.publication_state)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from carb_lib.app.reproduce import publication_state

REPO = Path(__file__).resolve().parents[1]


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root,
                          capture_output=True, text=True, check=True).stdout.strip()


def test_publication_state_follows_the_notebooks_and_library(tmp_path):
    root = tmp_path / "repo"
    (root / "carb_lib").mkdir(parents=True)
    (root / "notebooks").mkdir()
    (root / "carb_lib/x.py").write_text("a = 1\n")
    (root / "notebooks/n.ipynb").write_text("{}\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "one")
    first = _git(root, "rev-parse", "HEAD")
    dest = root / "docs/run"
    assert "does not exist" in publication_state(dest, root)
    dest.mkdir(parents=True)
    (dest / "summary.json").write_text(json.dumps({"00": {}}))
    assert "names no commit" in publication_state(dest, root)
    (dest / "summary.json").write_text(json.dumps({"_run": {"commit": first, "dirty": False}}))
    assert publication_state(dest, root) is None
    (root / "README.md").write_text("text\n")  # not a source of the numbers
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "two")
    assert publication_state(dest, root) is None
    (root / "carb_lib/x.py").write_text("a = 2\n")
    _git(root, "commit", "-qam", "three")
    assert "carb_lib/x.py changed" in publication_state(dest, root)
    (dest / "summary.json").write_text(json.dumps({"_run": {"commit": "f" * 40}}))
    assert "not in this checkout" in publication_state(dest, root)
    (dest / "summary.json").write_text(json.dumps({"_run": {"commit": first, "dirty": True}}))
    assert "uncommitted" in publication_state(dest, root)


def test_the_published_pages_are_those_of_the_current_commit():
    meta = json.loads((REPO / "docs/run/summary.json").read_text()).get("_run")
    if not meta:
        pytest.skip("docs/run predates runs that record their commit: make reproduce, then "
                    "carb publish runs/full-<time>")
    assert publication_state(REPO / "docs/run", REPO) is None


def test_a_run_is_dirty_only_when_the_code_it_executes_differs(tmp_path):
    """The run's outputs (results/, figures/) never make it dirty; its notebooks and library do
    (git_state reads only the paths it is given)."""
    import subprocess

    from carb_lib.app.reproduce import git_state

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "carb_lib").mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "carb_lib" / "m.py").write_text("x = 1\n")
    (tmp_path / "results" / "r.csv").write_text("a\n1\n")
    git("add", ".")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c")
    (tmp_path / "results" / "r.csv").write_text("a\n2\n")
    assert git_state(tmp_path, paths=("carb_lib",))["dirty"] is False
    assert git_state(tmp_path)["dirty"] is True
    (tmp_path / "carb_lib" / "m.py").write_text("x = 2\n")
    assert git_state(tmp_path, paths=("carb_lib",))["dirty"] is True
