"""results/ and figures/ hold exactly what the study's commands write (results/MANIFEST.txt):
no stray file, no missing one, and every listed file named by the command it is listed under."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "results" / "MANIFEST.txt"
#: The folder under results/ each notebook writes (its ``results_dir`` sub-folder).
NOTEBOOK_OF_DIR = {"design_space": "00", "characterization": "01", "transfer": "02",
                   "carb": "03", "screening": "04", "cross_family": "05", "zoo": "07"}


def read_manifest(path: Path = MANIFEST) -> dict[str, list[str]]:
    """``{section: [path, ...]}`` of a manifest: ``[section]`` lines open a section, ``#`` lines
    are comments, blank lines are skipped; a path outside a section or listed twice is an error."""
    sections: dict[str, list[str]] = {}
    current = None
    seen = set()
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
        elif current is None or line in seen:
            raise ValueError(f"{path.name} line {n}: {line!r} is outside a section or repeated")
        else:
            current.append(line)
            seen.add(line)
    return sections


def tracked(*folders: str) -> set[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: tracked files unknown")
    out = subprocess.run(["git", "ls-files", *folders], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    return set(out.split())


def test_manifest_reads_sections_and_refuses_a_repeat(tmp_path):
    f = tmp_path / "m.txt"
    f.write_text("# c\n[a]\nx\n\n[b]\ny\n")
    assert read_manifest(f) == {"a": ["x"], "b": ["y"]}
    f.write_text("[a]\nx\nx\n")
    with pytest.raises(ValueError, match="line 3: 'x'"):
        read_manifest(f)
    f.write_text("x\n")
    with pytest.raises(ValueError, match="outside a section"):
        read_manifest(f)


def test_results_and_figures_hold_exactly_the_manifest():
    listed = {p for paths in read_manifest().values() for p in paths}
    files = tracked("results", "figures") - {MANIFEST.relative_to(ROOT).as_posix()}
    assert not sorted(files - listed), "stray files under results/ or figures/ (not in MANIFEST)"
    assert not sorted(listed - files), "files listed in results/MANIFEST.txt but not tracked"


def test_reproduce_outputs_belong_to_a_notebook_of_the_full_profile():
    from carb_lib.app.reproduce import load_runs

    runs = load_runs("full", ROOT / "papermill_runs.yaml")
    numbers = {Path(r.notebook).name[:2] for r in runs}
    # a run over several files (``each``) writes into a subfolder named by the file's stem
    subdirs = {r.subdir for r in runs if r.subdir}
    assert subdirs == {"gpu_nvidia_h200"}
    for path in read_manifest()["make reproduce"]:
        parts = Path(path).parts
        if len(parts) > 2 and parts[1] in subdirs:
            parts = (parts[0], *parts[2:])
        if parts[0] == "figures":
            assert parts[1][:2] in numbers and len(parts) == 2, path
        elif parts[1:] in (("claims.csv",), ("claims_vs_paper.csv",), ("claims_vs_paper.md",)):
            continue
        elif parts[1] == "claims":  # results/claims/<notebook>.csv: one notebook's claim rows
            assert parts[2][:2] in numbers, path
        else:
            assert parts[0] == "results" and len(parts) >= 3, path
            nb = "06" if parts[1:3] == ("carb", "steady_campaign") else NOTEBOOK_OF_DIR[parts[1]]
            assert nb in numbers, path


def test_other_outputs_are_named_by_the_code_that_writes_them():
    sections = read_manifest()
    assert set(sections) == {"make reproduce", "make bench", "make check-features",
                             "tests/test_browser_lab.py"}
    sources = {"make bench": "benchmarks/*.py", "make check-features": "scripts/check_*.py",
               "tests/test_browser_lab.py": "tests/test_browser_lab.py"}
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^bench:.*\n(\t.*\n)*\t.*benchmarks/\*\.py", make, re.M)
    for section, pattern in sources.items():
        text = "\n".join(p.read_text() for p in sorted(ROOT.glob(pattern)))
        for path in sections[section]:
            assert path in text or Path(path).stem in text, (section, path)
