"""The product scripts of ``scripts/``: few, valid, standalone (none imports or sources another,
no test imports one), and the new-CPU campaign refuses to overwrite a measured platform."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "scripts").iterdir() if p.is_file())
MAX_SCRIPTS = 15


def test_scripts_are_few_and_only_python_or_bash():
    assert 0 < len(SCRIPTS) <= MAX_SCRIPTS, [p.name for p in SCRIPTS]
    assert {p.suffix for p in SCRIPTS} <= {".py", ".sh"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_parses_and_imports_no_other_script(script):
    names = {p.stem for p in SCRIPTS}
    text = script.read_text()
    if script.suffix == ".sh":
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
        # sourcing another file of scripts/ is importing it; running one is allowed
        assert not re.search(r"(^|[;&|]\s*|\s)(\.|source)\s+\S*scripts/", text, re.M), script.name
        return
    tree = ast.parse(text, filename=str(script))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module.split(".")[0])
    assert not imported & names, f"{script.name} imports {sorted(imported & names)}"
    assert "sys.path.insert" not in text and "sys.path.append" not in text, script.name


def test_no_test_imports_a_script():
    names = {p.stem for p in SCRIPTS if p.suffix == ".py"}
    for test in sorted((ROOT / "tests").rglob("*.py")):
        if test.name == Path(__file__).name:
            continue
        tree = ast.parse(test.read_text(), filename=str(test))
        for node in ast.walk(tree):
            mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                    else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not {m.split(".")[0] for m in mods} & (names | {"scripts"}), test.name
        assert "spec_from_file_location" not in test.read_text() or "scripts" not in \
            test.read_text(), test.name


@pytest.mark.parametrize("script", [p for p in SCRIPTS if p.suffix == ".py"], ids=lambda p: p.name)
def test_python_script_prints_its_usage(script):
    r = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True,
                       timeout=120, cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert "usage" in r.stdout.lower()


def test_new_cpu_campaign_needs_a_platform_and_refuses_a_measured_one():
    script = ROOT / "scripts" / "new_cpu_campaign.sh"
    r = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "platform name" in r.stderr
    before = sorted(p.name for p in (ROOT / "data" / "cpu_xeon_gnr_2c").rglob("*"))
    r = subprocess.run(["bash", str(script), "cpu_xeon_gnr_2c"], capture_output=True,
                       text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "PYTHON": "false"})
    assert r.returncode == 2
    assert r.stderr.strip() == ("new_cpu_campaign: data/cpu_xeon_gnr_2c/design/kernels.parquet exists: "
                                "a new CPU writes new files (another platform name?)")
    assert r.stdout == ""
    assert sorted(p.name for p in (ROOT / "data" / "cpu_xeon_gnr_2c").rglob("*")) == before


def test_read_bandwidth_probe_refuses_an_existing_file_or_a_wrong_suffix(tmp_path):
    script = ROOT / "scripts" / "read_bandwidth_probe.py"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    (tmp_path / "probe.csv").write_text("x\n")
    for out, msg in ((tmp_path / "probe.csv", "exists"), (tmp_path / "probe.txt", ".csv file")):
        r = subprocess.run([sys.executable, str(script), str(out)], capture_output=True,
                           text=True, timeout=120, env=env)
        assert r.returncode == 2 and msg in r.stderr and len(r.stderr.splitlines()) == 1
    assert (tmp_path / "probe.csv").read_text() == "x\n"
    assert not (tmp_path / "probe.txt").exists()


def test_read_bandwidth_probe_writes_the_file_carb_fit_reads(tmp_path):
    import pandas as pd

    out = tmp_path / "probe.csv"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "read_bandwidth_probe.py"),
                        str(out), "--sizes-mib", "1", "2", "--window-s", "0.001",
                        "--n-windows", "2"], capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    probe = pd.read_csv(out)
    assert probe.columns.tolist() == ["size_mib", "read_gb_per_s", "cv"]
    assert probe["size_mib"].tolist() == [1, 2] and (probe["read_gb_per_s"] > 0).all()
