"""Load a file of ``scripts/`` as a module, for tests of its functions; run a campaign script
that must refuse, or a step of ``scripts/campaign_lib.sh``, or trace a campaign in a scratch tree
with a stub python, for tests of the shell scripts."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
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


def refused(script: str, *args: str, watch: Path) -> tuple[subprocess.CompletedProcess, bool]:
    """Run ``scripts/<script>`` with ``args`` it must refuse, with ``PYTHON=false`` and a bare
    ``PATH`` so that nothing can be measured: its completed process, and whether the names of
    the files under ``watch`` (recursively) are as before."""
    before = sorted(p.name for p in watch.rglob("*"))
    r = subprocess.run(["bash", str(SCRIPTS / script), *args], capture_output=True, text=True,
                       timeout=60, env={"PATH": "/usr/bin:/bin", "PYTHON": "false"})
    return r, sorted(p.name for p in watch.rglob("*")) == before


def campaign_lib(call: str, py: str) -> subprocess.CompletedProcess:
    """Source ``scripts/campaign_lib.sh`` with ``PY`` = ``py`` and run ``call`` in the
    repository root."""
    script = (f"set -euo pipefail; PY={shlex.quote(py)}; CARB=\"$PY -m carb_lib.cli\"; "
              f". scripts/campaign_lib.sh; {call}")
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                          cwd=SCRIPTS.parent, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(SCRIPTS.parent)})


def verdicts(text: str, prefix: str) -> dict[str, str]:
    """A scorer's judgements: ``{"X1": "HELD", ...}`` from its lines ``PREFIX<n> HELD: ...`` or
    ``PREFIX<n> MISSED: ...``."""
    found = (re.match(rf"({re.escape(prefix)}\d+) (HELD|MISSED):", line)
             for line in text.splitlines())
    return {m.group(1): m.group(2) for m in found if m}


def stub_campaign(tmp: Path, extra: str = "") -> tuple[Path, Path]:
    """The shell scripts of ``scripts/`` copied into a scratch tree ``tmp``, and a stub python
    that appends its arguments to ``tmp/argv.txt`` as one line, then runs the shell lines
    ``extra``: the log and the stub (give it as ``PYTHON``)."""
    (tmp / "scripts").mkdir()
    for sh in SCRIPTS.glob("*.sh"):
        (tmp / "scripts" / sh.name).write_text(sh.read_text())
    log = tmp / "argv.txt"
    stub = tmp / "py"
    stub.write_text(f'#!/bin/sh\necho "$@" >> {log}\n{extra}')
    stub.chmod(0o755)
    return log, stub


def run_stubbed(script: str, tmp: Path, stub: Path, *args: str) -> subprocess.CompletedProcess:
    """Run the campaign ``scripts/<script>`` copied into ``tmp`` (:func:`stub_campaign`) with
    ``args`` and the stub python."""
    return subprocess.run(["bash", f"scripts/{script}", *args], capture_output=True, text=True,
                          cwd=tmp, timeout=60, env={**os.environ, "PYTHON": str(stub)})


def earlier_new_family_rows(tmp: Path, *names: str) -> None:
    """Empty files ``tmp/data/other_cpus/new_families/<name>.parquet``: the rows a campaign
    must find before it runs."""
    d = tmp / "data" / "other_cpus" / "new_families"
    d.mkdir(parents=True)
    for name in names:
        (d / f"{name}.parquet").write_text("")


def replication_summary(folder: Path, *, r2: tuple[float, float, float],
                        within: tuple[float, float, float],
                        mape: tuple[float, float, float]) -> None:
    """``folder/replication_summary.csv`` as ``kernel_law_replication.py`` writes it: the kernel
    law's rows of the random, small-batch and large-batch splits with ``r2``, ``within`` and
    ``mape`` (in that order), and a roofline row of the small-batch split (R² 0.80, 30 %
    within ±10 %, MAPE 28 %)."""
    import pandas as pd

    folder.mkdir(parents=True)
    pd.DataFrame({"split": ["random (test part)", "batch_small (batch<=8 held out)",
                            "batch_large (batch>=64 held out)", "batch_small (batch<=8 held out)"],
                  "law": ["kernel", "kernel", "kernel", "roofline"],
                  "r2": [*r2, 0.80], "within_10pct": [*within, 0.3],
                  "mape_pct": [*mape, 28.0]}).to_csv(folder / "replication_summary.csv",
                                                     index=False)
