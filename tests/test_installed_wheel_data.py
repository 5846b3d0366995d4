"""An installed package reads data through its catalogs only: carb_lib built as a wheel and
installed into a folder of its own (no repository ``data/`` beside it), run from a temporary
working folder with a user catalog pointing at a copied fixture, ``carb fit --platform``,
``carb predict`` and ``carb zoo predict`` open no data file outside the fixture's folder (every
``open`` recorded by an audit hook in the command's process, and every path given to pandas'
and pyarrow's Parquet readers, which open files in C++).

The fixture is SYNTHETIC: 400 shipped Zen 4 ResNet rows and the Zen 4 operator benchmark with
latencies times 1.25, another platform name and CPU string (test_new_platform_recipe's
``_synthetic``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from carb_lib.dataset import catalog as C

REPO = Path(__file__).resolve().parents[1]
LAB = "cpu_wheel_lab"
DATA_SUFFIXES = {".parquet", ".csv", ".yaml", ".yml", ".json", ".skops", ".joblib"}
#: Runs a carb command in this process with every opened path recorded (argv[1]: the record).
RUNNER = """
import json, os, shlex, sys
opened = []
def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        opened.append(os.path.abspath(os.fsdecode(args[0])))
sys.addaudithook(hook)
record, commands = sys.argv[1], sys.argv[2:]
# pyarrow opens Parquet files in C++ (no audit event): its entry points record their path
import pandas as pd, pyarrow.parquet as pq
def recorded(fn):
    def run(source, *args, **kwargs):
        if isinstance(source, (str, bytes, os.PathLike)):
            opened.append(os.path.abspath(os.fsdecode(source)))
        return fn(source, *args, **kwargs)
    return run
pd.read_parquet = recorded(pd.read_parquet)
pq.read_table = recorded(pq.read_table)
pq.ParquetFile = recorded(pq.ParquetFile)
pq.read_schema = recorded(pq.read_schema)
pq.read_metadata = recorded(pq.read_metadata)
import carb_lib
from carb_lib.dataset.catalog import SHIPPED_CATALOG
from carb_lib.app.cli import app
runs = []
for command in commands:  # one process, each command's opened files apart
    opened.clear()
    code = 0
    try:
        app(shlex.split(command), prog_name="carb", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code or 0
    runs.append({"command": command, "opened": list(opened), "code": code})
    if code:
        break
with open(record, "w") as fh:
    json.dump({"runs": runs, "package": carb_lib.__file__, "shipped": str(SHIPPED_CATALOG)}, fh)
"""

@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """carb_lib built as a wheel from a copy of its sources and installed into a folder."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(REPO / "carb_lib", src / "carb_lib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (REPO / name).is_file():
            shutil.copy(REPO / name, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", str(src), "--no-deps", "--no-build-isolation", "-w",
                    str(tmp / "dist")], check=True, capture_output=True, cwd=tmp)
    (wheel,) = (tmp / "dist").glob("carb_lib-*.whl")
    subprocess.run([*pip, "install", "--no-deps", "--target", str(tmp / "site"), str(wheel)],
                   check=True, capture_output=True, cwd=tmp)
    assert not (tmp / "site" / "data").exists()
    return tmp / "site"


@pytest.fixture
def fixture_catalog(tmp_path) -> Path:
    from test_new_platform_recipe import CPU_ID, LATENCY_COLS, _synthetic

    root = tmp_path / "fixture"
    zen4 = "cpu_epyc_zen4_2c"
    rows = _synthetic(root / "rows.parquet", C.platform_file(zen4, "rows", family="resnet"),
                      LATENCY_COLS, platform=LAB, n=400)
    bench = _synthetic(root / "kernels" / "bench.parquet", C.platform_file(zen4, "kernels"),
                       ("time_ms",), platform=LAB)
    cat = root / "catalog.yaml"
    for path, role in ((rows, "rows"), (bench, "kernels")):
        C.register(path, role=role, platform=LAB, catalog=cat, cpu_id=CPU_ID,
                   families=("resnet",) if role == "rows" else (),
                   protocol={"threads": 1, "heap": "default"})
    return cat


def _carb(site: Path, work: Path, catalog: Path, *commands: str) -> dict:
    """Run the carb ``commands`` in one process of the installed package; what each opened."""
    record = work / "opened.json"
    env = {**os.environ, "PYTHONPATH": str(site), C.CATALOG_ENV: str(catalog),
           "CARB_CACHE_DIR": str(work / "cache")}
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(record), *commands], cwd=work,
                          env=env, capture_output=True, text=True, timeout=300)
    out = json.loads(record.read_text())
    assert [r["code"] for r in out["runs"]] == [0] * len(commands), proc.stdout + proc.stderr
    out["output"] = proc.stdout + proc.stderr
    return out


def _data_files(opened: list[str], site: Path, work: Path) -> set[Path]:
    """Opened files that hold data: not the installed package, Python or its libraries,
    and not the command's own outputs in the working folder."""
    skip = [Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), site.resolve(),
            work.resolve()]
    out = set()
    for p in map(Path, opened):
        p = p.resolve()
        if p.suffix in DATA_SUFFIXES and not any(p.is_relative_to(s) for s in skip):
            out.add(p)
    return out


@pytest.mark.slow
def test_an_installed_package_opens_no_data_file_outside_the_catalogs_root(
        installed, fixture_catalog, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    root = fixture_catalog.parent.resolve()
    from carb_lib.families.space import paper_grid

    paper_grid().head(5).to_csv(work / "configs.csv", index=False)
    out = _carb(installed, work, fixture_catalog,
                f"fit --platform {LAB} --preset test --out lab.skops",
                "predict --model lab.skops --configs configs.csv --out pred.csv",
                "zoo predict --model lab.skops --networks resnet18 --out zoo.csv")
    assert Path(out["package"]).resolve().is_relative_to(installed.resolve())
    assert not Path(out["shipped"]).exists()  # no repository data/ beside the package
    assert "latency law kernel: operator benchmark" in out["output"]
    assert str(fixture_catalog.parent / "kernels" / "bench.parquet") in out["output"]
    assert len(pd.read_csv(work / "pred.csv")) == 5 and len(pd.read_csv(work / "zoo.csv")) == 1
    for run in out["runs"]:
        outside = {p for p in _data_files(run["opened"], installed, work)
                   if not p.is_relative_to(root)}
        assert not outside, (run["command"], sorted(map(str, outside)))
        assert not any(Path(p).resolve().is_relative_to((REPO / "data").resolve())
                       for p in run["opened"]), run["command"]
    fit_read = _data_files(out["runs"][0]["opened"], installed, work)
    assert {root / "rows.parquet", root / "kernels" / "bench.parquet"} <= fit_read
