"""Adding a platform is data, not code: a SYNTHETIC platform registered in a user catalog reaches
the studies (notebook 01, the transfer inventory, the notebooks' data parameters, the
leave-one-CPU-out table's platforms, ``carb fit --platform``) with no change to ``carb_lib``;
``carb merge`` and ``carb kernels`` register what they write.

The platform ``cpu_synthetic_lab`` is SYNTHETIC: the shipped Zen 4 ResNet rows, operator
benchmark and audit with latencies times 1.25 and another CPU string (docs/measuring.md's
recipe, step by step)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from carb_lib.app.cli import app
from carb_lib.dataset import catalog as C

runner = CliRunner()
LAB = "cpu_synthetic_lab"
CPU_ID = "SYNTHETIC lab CPU | AVX2 | L3 16384K"
#: The time columns scaled in a SYNTHETIC copy of network rows (of a benchmark: ``time_ms``).
LATENCY_COLS = ("latency_ms", "latency_mean_ms", "latency_p10_ms", "latency_p90_ms")


def _synthetic(path: Path, source: Path, time_cols: tuple[str, ...], *, platform: str = LAB,
               n: int | None = None) -> Path:
    """A SYNTHETIC copy of the shipped file ``source`` (its first ``n`` rows) at ``path``:
    platform ``platform``, CPU :data:`CPU_ID`, ``time_cols`` times 1.25."""
    d = pd.read_parquet(source)
    d = d if n is None else d.head(n)
    d["platform"] = platform
    if "cpu_id" in d.columns:
        d["cpu_id"] = CPU_ID
    for col in time_cols:
        if col in d.columns:
            d[col] = d[col] * 1.25
    path.parent.mkdir(parents=True, exist_ok=True)
    d.to_parquet(path, index=False)
    return path


@pytest.fixture
def lab(tmp_path: Path) -> dict[str, Path]:
    """The SYNTHETIC platform's three files under a user data folder (nothing registered)."""
    zen4 = "cpu_epyc_zen4_2c"
    root = tmp_path / "mydata"
    lat = LATENCY_COLS
    return {
        "root": root,
        "rows": _synthetic(root / LAB / "design" / "rows.parquet",
                           C.platform_file(zen4, "rows", family="resnet"), lat),
        "kernels": _synthetic(root / LAB / "design" / "kernels.parquet",
                              C.platform_file(zen4, "kernels"), ("time_ms", "kernel_ms")),
        "audit": _synthetic(root / LAB / "design" / "audit.parquet",
                            C.platform_file(zen4, "audit", family="resnet"), lat),
    }


def _add(cat: Path, path: Path, role: str):
    return runner.invoke(app, ["--catalog", str(cat), "catalog", "add", str(path), "--role", role])


def test_catalog_add_registers_the_files_with_their_facts(lab):
    cat = lab["root"] / "catalog.yaml"
    for role in ("rows", "kernels", "audit"):
        res = _add(cat, lab[role], role)
        assert res.exit_code == 0, res.output
        assert f"registered {lab[role]} as {role} of {LAB}/design" in res.output
    raw = yaml.safe_load(cat.read_text())
    (camp,) = raw["campaigns"]
    assert (camp["platform"], camp["campaign"], camp["device"]) == (LAB, "design", "cpu")
    assert camp["cpu_id"] == CPU_ID and camp["families"] == ["resnet"]
    assert camp["protocol"]["threads"] == 1 and camp["protocol"]["heap"] == "default"
    assert [(f["path"], f["role"]) for f in camp["files"]] == [
        (f"{LAB}/design/rows.parquet", "rows"), (f"{LAB}/design/kernels.parquet", "kernels"),
        (f"{LAB}/design/audit.parquet", "audit")]
    again = _add(cat, lab["rows"], "rows")  # the same file twice: said, not listed twice
    assert again.exit_code == 0 and "already catalogued" in again.output
    assert len(C.read_catalog(cat).campaigns[0].files) == 3
    listing = runner.invoke(app, ["--catalog", str(cat), "catalog", "list", "--platform", LAB])
    assert f"{LAB}/design (cpu" in listing.output and "[user]" in listing.output
    check = runner.invoke(app, ["--catalog", str(cat), "catalog", "check"])
    assert check.exit_code == 0 and "catalog ok" in check.output, check.output


def test_a_registered_platform_joins_the_studies_without_a_code_change(lab, monkeypatch):
    from carb_lib.transfer.cpus import cpu_files, load_cpu_rows
    from carb_lib.transfer.data import load_transfer_data

    cat = lab["root"] / "catalog.yaml"
    for role in ("rows", "kernels", "audit"):
        assert _add(cat, lab[role], role).exit_code == 0
    assert LAB not in cpu_files()
    monkeypatch.setenv(C.CATALOG_ENV, str(cat))
    # the leave-one-CPU-out study's platforms (notebooks 02 and 03): the five CPUs and the lab's
    files = cpu_files()
    assert list(files)[-1] == LAB and len(files) == 6
    assert files[LAB] == (str(lab["rows"]), str(lab["kernels"]), str(lab["audit"]))
    rows = load_cpu_rows()
    assert LAB in set(rows["platform"]) and rows.groupby("platform").size().nunique() == 1
    # notebooks 01 and 02: the named platforms and every platform of the user catalog
    assert C.study_files([]) == [lab["rows"]]
    assert C.study_files(["cpu_epyc_2c"])[-1] == lab["rows"]
    _, inv = load_transfer_data(external=None, platforms=[])
    assert inv[["status", "platforms"]].values.tolist() == [["loaded", LAB]]
    # notebooks 03-07: a platform name for a data parameter, read as its file of that role
    assert C.resolve(LAB, "rows", family="resnet") == str(lab["rows"])
    assert C.resolve(f"{LAB}/design", "kernels") == str(lab["kernels"])
    assert C.resolve([LAB], "audit", family="!resnet") == [None]
    assert C.platform_file(LAB, "kernels") == lab["kernels"]
    assert C.platform_file(LAB, "audit", family="resnet") == lab["audit"]
    with pytest.raises(C.CatalogError, match=f"platform '{LAB}' has no campaign 'zoo'"):
        C.resolve(f"{LAB}/zoo", "rows")


@pytest.mark.slow
def test_notebook_01_studies_a_platform_of_the_user_catalog(lab, monkeypatch, run_notebook):
    cat = lab["root"] / "catalog.yaml"
    assert _add(cat, lab["rows"], "rows").exit_code == 0
    monkeypatch.setenv(C.CATALOG_ENV, str(cat))
    rec, out = run_notebook("notebooks/01_characterization.ipynb", {
        "platforms": [], "quick": True, "n_boot": 20, "fig_dir": "figures",
        "results_dir": "results"})
    assert rec["synthetic"] is False and rec["platforms"] == [LAB]
    scaling = pd.read_csv(out / "results/characterization/scaling.csv")
    assert set(scaling["platform"]) == {LAB}


def test_fit_platform_reads_the_user_catalogs_rows(lab, tmp_path):
    cat = lab["root"] / "catalog.yaml"
    assert _add(cat, lab["rows"], "rows").exit_code == 0
    model = tmp_path / "lab_model.skops"
    res = runner.invoke(app, ["--catalog", str(cat), "fit", "--platform", LAB, "--preset", "test",
                              "--latency-law", "roofline", "--out", str(model)])
    assert res.exit_code == 0, res.output
    assert model.is_file() and LAB in res.output


def test_merge_registers_its_output_in_the_user_catalog(tmp_path, monkeypatch):
    from test_safety_merge import parts, syn_rows

    from carb_lib.families.space import paper_grid

    grid = paper_grid()
    folder = parts(tmp_path / "parts", syn_rows(grid.iloc[:6], platform="cpu_lab_merge"))
    root = tmp_path / "mydata"
    out, ref = root / "cpu_lab_merge.parquet", root / "cpu_lab_merge_reference.parquet"
    # without a user catalog: merged, not registered, and one line says how
    res = runner.invoke(app, ["merge", str(folder), str(tmp_path / "plain.parquet")])
    assert res.exit_code == 0 and "is not registered (name a user catalog" in res.output
    assert not (tmp_path / "catalog.yaml").exists()
    monkeypatch.setenv(C.CATALOG_ENV, str(root / "catalog.yaml"))
    res = runner.invoke(app, ["merge", str(folder), str(out), "--campaign", "first"])
    assert res.exit_code == 0, res.output
    assert f"registered {out} as rows of cpu_lab_merge/first" in res.output
    (camp,) = C.read_catalog(root / "catalog.yaml").campaigns
    assert (camp.platform, camp.campaign, camp.date) == ("cpu_lab_merge", "first", "2026-01-01")
    assert [e.rel for e in camp.files] == ["cpu_lab_merge.parquet"]
    assert camp.protocol["threads"] == 1
    # extending the same file: still one entry
    more = parts(tmp_path / "more", syn_rows(grid.iloc[6:8], platform="cpu_lab_merge"))
    res = runner.invoke(app, ["merge", str(more), str(out), "--campaign", "first",
                              "--reference-out", str(ref)])
    assert res.exit_code == 0 and "already catalogued" in res.output, res.output
    assert len(C.read_catalog(root / "catalog.yaml").campaigns[0].files) == 1 + ref.is_file()


def test_kernels_registers_its_benchmark_in_the_user_catalog(tmp_path, monkeypatch):
    root = tmp_path / "mydata"
    monkeypatch.setenv(C.CATALOG_ENV, str(root / "catalog.yaml"))
    out = root / "kernels" / "cpu_lab_ops.parquet"
    res = runner.invoke(app, ["kernels", "--out", str(out), "--n", "3", "--no-anchors",
                              "--no-cache-probe", "--no-progress", "--platform", "cpu_lab_ops",
                              "--campaign", "first"])
    assert res.exit_code == 0, res.output
    assert f"registered {out} as kernels of cpu_lab_ops/first" in res.output
    (camp,) = C.read_catalog(root / "catalog.yaml").campaigns
    assert camp.protocol["heap"] == "kept" and camp.protocol["threads"] == 1
    assert camp.cpu_id not in (None, "unknown")
    assert [(e.rel, e.role) for e in camp.files] == [("kernels/cpu_lab_ops.parquet", "kernels")]


def test_register_refuses_with_one_line(lab, tmp_path, monkeypatch):
    cat = lab["root"] / "catalog.yaml"
    outside = tmp_path / "elsewhere.parquet"
    outside.write_bytes(lab["rows"].read_bytes())
    cases = [
        (_add(cat, outside, "rows"), "is not under the catalog's folder"),
        (_add(C.SHIPPED_CATALOG, lab["rows"], "rows"), "the shipped catalog is read-only"),
        (_add(cat, lab["rows"], "gossip"), "role 'gossip' is not one of"),
        (runner.invoke(app, ["catalog", "add", str(lab["rows"]), "--role", "rows"]),
         "no user catalog to register in"),
    ]
    for res, words in cases:
        assert res.exit_code == 1, res.output
        lines = [ln for ln in res.output.splitlines() if ln.strip()]
        assert len(lines) == 1 and words in lines[0], res.output
    assert not cat.exists()  # nothing written by a refusal
    # a campaign the shipped catalog holds cannot be extended by a user catalog
    zen3 = lab["root"] / "zen3.parquet"
    d = pd.read_parquet(lab["rows"]).assign(platform="cpu_epyc_zen3_2c")
    d.to_parquet(zen3, index=False)
    res = _add(cat, zen3, "rows")
    assert res.exit_code == 1 and "is already in" in res.output and "--campaign" in res.output
    # another CPU in the same campaign is refused
    assert _add(cat, lab["rows"], "rows").exit_code == 0
    other = lab["root"] / "other_cpu.parquet"
    pd.read_parquet(lab["rows"]).assign(cpu_id="another CPU").to_parquet(other, index=False)
    res = _add(cat, other, "audit")
    assert res.exit_code == 1 and "register it as another campaign" in res.output
    assert len(C.read_catalog(cat).campaigns[0].files) == 1
