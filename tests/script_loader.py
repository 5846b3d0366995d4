"""Load a file of ``scripts/`` as a module, for tests of its functions."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py``, executed as a module named ``name``."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rescore(script: str, src: Path, out: Path, *flags: str,
            files: tuple[str, ...] = ("summary.csv", "agreement.txt")):
    """Run the scorer ``scripts/<script>.py`` on copies of ``files`` of the committed outputs
    in ``src`` (copied into ``out``): its command, its completed process, and the
    ``scores.txt`` it wrote and the committed one, each without the first line (the command)."""
    import subprocess
    import sys

    for name in files:
        (out / name).write_bytes((src / name).read_bytes())
    cmd = [sys.executable, str(SCRIPTS / f"{script}.py"), str(out), *flags]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=SCRIPTS.parent, timeout=120)
    got = (out / "scores.txt").read_text().split("\n", 1)[1] if r.returncode == 0 else None
    return cmd, r, got, (src / "scores.txt").read_text().split("\n", 1)[1]
