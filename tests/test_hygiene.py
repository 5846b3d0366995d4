"""Repository-wide checks: no absolute machine path in what the repository ships, small
modules, no ``print`` in library code."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve()
#: Files checked for machine paths: code, tests, notebooks, scripts, benchmarks, configuration.
SUFFIXES = {".py", ".ipynb", ".sh", ".yaml", ".yml", ".toml", ".cfg", ".ini"}
NAMES = {"Makefile", "run"}  # the Makefile and .ci/run
#: An absolute path on some machine: a POSIX home, work, temp or mount folder not preceded by
#: a word character, a dot or ``~`` (so ``https://host/home/...`` and ``./tmp/`` do not count),
#: or a Windows drive (``C:\Users``; an upper-case letter, so ``"... s:\n"`` is not one).
MACHINE_PATH = re.compile(
    r"(?<![\w.~$-])/(?:work|home|tmp|Users|root|mnt|scratch)/|(?<!\w)[A-Z]:\\{1,2}\w{2,}"
)
MAX_LINES = 800
SKIP_DIRS = {".git", ".venv", "runs", "node_modules", "__pycache__", ".ipynb_checkpoints"}


def shipped_files() -> list[Path]:
    """Files under version control (every file outside the skipped folders without git)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True, timeout=60).stdout.decode()
        files = [ROOT / p for p in out.split("\0") if p]
    except (OSError, subprocess.SubprocessError):
        files = [p for p in ROOT.rglob("*") if not SKIP_DIRS & set(p.relative_to(ROOT).parts)]
    return [p for p in files
            if p.is_file() and (p.suffix in SUFFIXES or p.name in NAMES) and p.resolve() != THIS]


def machine_paths(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every line of ``text`` holding an absolute machine path."""
    return [(i, line.strip()) for i, line in enumerate(text.splitlines(), start=1)
            if MACHINE_PATH.search(line)]


@pytest.mark.parametrize("line", [
    'DATA = "/work/shared/help"', "cd /home/alice/carb", "out = '/tmp/run'",
    r'p = "C:\\Users\\me\\data"', "see /Users/me/x", "mount at /mnt/data/x",
])  # fmt: skip
def test_machine_path_pattern_finds_machine_paths(line):
    assert machine_paths(line) == [(1, line)]


@pytest.mark.parametrize("line", [
    "https://github.com/home/tmp/x", "data/external/help.parquet", "./tmp/x", "~/tmp/x",
    "/sys/class/powercap", "/proc/stat", "runs/tmp/x", "a/work/b", "$HOME/work/x",
    'fail("no answer within 90 s:\\n"',
])  # fmt: skip
def test_machine_path_pattern_leaves_relative_and_system_paths(line):
    assert machine_paths(line) == []


def test_no_absolute_machine_path_in_the_repository():
    files = shipped_files()
    assert any(p.name == "cli.py" for p in files) and any(p.suffix == ".ipynb" for p in files)
    hits = [f"{p.relative_to(ROOT)}:{i}: {line[:120]}"
            for p in files for i, line in machine_paths(p.read_text(errors="replace"))]
    assert hits == [], "absolute machine paths:\n" + "\n".join(hits)


def test_no_library_module_over_800_lines():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines())
             for p in sorted((ROOT / "carb_lib").rglob("*.py"))}
    assert len(sizes) > 10
    big = {p: n for p, n in sizes.items() if n > MAX_LINES}
    assert big == {}, f"modules over {MAX_LINES} lines: {big}"


def print_calls(source: str) -> list[int]:
    """Line numbers of the calls of ``print`` in Python ``source``."""
    return [node.lineno for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "print"]


def test_print_calls_are_found():
    assert print_calls('x = 1\nprint("a")\ns = "print(b)"\n') == [2]


def test_no_print_in_library_code():
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "carb_lib").rglob("*.py"))
            for n in print_calls(p.read_text())]
    assert hits == [], "print in library code (use logging):\n" + "\n".join(hits)


#: Words of the project's history, not of the product: a numbered session or issue, a
#: "sitting", a pre-registration, "post hoc". ``docs/experiments.md`` (the history's index) is
#: the one file allowed to use them.
PROCESS_WORDS = re.compile(r"(?:\b|_)sessions?[\s_-]*\d+|sitting|pre-?regist"
                           r"|(?:\b|_)issues?[\s_#-]*\d+|post[- ]hoc", re.IGNORECASE)
PROCESS_WORDS_ALLOWED = {"docs/experiments.md"}
#: Files another branch rewrites (the README front page and its table writer): checked once that
#: branch is merged. Empty this set then; until then they still hold the history's words.
PROCESS_WORDS_PENDING: set[str] = set()
#: Exact spellings kept on purpose (none now).
PROCESS_WORDS_KEPT: tuple[str, ...] = ()
BINARY = {".parquet", ".png", ".pdf", ".jpg", ".pt", ".gz", ".zip", ".npz"}


def process_words(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every line of ``text`` holding a process word."""
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        for kept in PROCESS_WORDS_KEPT:
            line = line.replace(kept, "")
        if PROCESS_WORDS.search(line):
            out.append((i, line.strip()))
    return out


@pytest.mark.parametrize("line", [
    "measured in session 30", "Sessions 18-20", "issue 14's targets", "see issue #52",
    "a steady sitting", "Sittings", "pre-registration AH", "preregistered", "Post hoc, the",
    "data/x_session34_both.parquet", "issue_14 targets",
    "post-hoc reading",
])  # fmt: skip
def test_process_word_pattern_finds_process_words(line):
    assert process_words(line) == [(1, line)]


@pytest.mark.parametrize("line", [
    "one measurement campaign", "a session of JupyterLab", "issue_targets.csv", "the issue's source",
    "registration of a kernel",
])  # fmt: skip
def test_process_word_pattern_leaves_product_words(line):
    assert process_words(line) == []


def test_no_process_words_in_the_repository():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True, timeout=60).stdout.decode()
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout")
    hits = []
    for rel in (p for p in out.split("\0") if p):
        path = ROOT / rel
        if (rel in PROCESS_WORDS_ALLOWED | PROCESS_WORDS_PENDING or path.resolve() == THIS
                or not path.is_file()):
            continue
        if process_words(rel):
            hits.append(f"{rel}: (file name)")
        if path.suffix in BINARY:
            continue
        hits += [f"{rel}:{i}: {line[:120]}"
                 for i, line in process_words(path.read_text(errors="replace"))]
    assert hits == [], f"{len(hits)} process words:\n" + "\n".join(hits[:200])
