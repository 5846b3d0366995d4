"""The data catalog (data/catalog.yaml, carb_lib.dataset.catalog): every file of data/ listed
once and present, the data card's table generated from it, the library's look-ups answered by it
exactly as the path tables it replaced answered them, a user catalog that extends it, ``carb fit
--platform P`` without ``--data``, and one line for a bad catalog."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from carb_lib.dataset import catalog as C

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
CARD = DATA / "README.md"
BEGIN, END = "<!-- data-card-table: begin -->", "<!-- data-card-table: end -->"

#: The five CPUs of the leave-one-CPU-out study, in order.
CPUS = ("cpu_epyc_zen3_2c", "cpu_epyc_zen4_2c", "cpu_epyc_zen5_2c", "cpu_xeon_emr_2c",
        "cpu_xeon_gnr_2c")


@pytest.fixture
def no_user_catalog(monkeypatch):
    monkeypatch.delenv(C.CATALOG_ENV, raising=False)


def test_every_file_of_data_is_catalogued_once_and_every_entry_exists(no_user_catalog):
    cat = C.read_catalog(C.SHIPPED_CATALOG)
    assert C.catalog_problems(cat) == []
    rels = [e.rel for e in cat.entries()]
    assert len(rels) == len(set(rels))
    on_disk = sorted(p.relative_to(DATA).as_posix() for p in DATA.rglob("*")
                     if p.is_file() and p.name != "catalog.yaml")
    assert sorted(rels) == on_disk
    for c in cat.campaigns:  # each campaign says its platform, device, protocol and date
        assert c.device in ("cpu", "cuda") and c.date and set(c.protocol) == {
            "version", "threads", "heap", "windows"}


def test_the_data_card_table_is_generated_from_the_catalog():
    text = CARD.read_text()
    table = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()
    assert C.card_table() == table


def test_lookups_find_each_platforms_files_by_platform_campaign_and_role(no_user_catalog):
    from carb_lib.dataset.catalog import DESIGN, load_catalog
    from carb_lib.ensemble import latency_default as LD
    from carb_lib.evaluation.zoo import sibling_files
    from carb_lib.transfer import cpus as TC

    def design(p: str, name: str) -> Path:
        return DATA / p / "design" / name

    # CPU_FILES: the five CPUs in order, each its ResNet rows, benchmark and audit
    assert list(TC.CPU_FILES) == list(CPUS)
    for plat in CPUS:
        assert tuple(Path(f) for f in TC.CPU_FILES[plat]) == tuple(
            design(plat, n) for n in ("rows.parquet", "kernels.parquet", "audit.parquet"))
    # sibling_files of every zoo file, with the path as a caller names it: the design rows (both
    # family sets), the zoo campaign's audit, and the benchmark timed with the zoo's heap (Zen 4's
    # kept-heap pair), else the design one
    cat = load_catalog()
    zoos = cat.files(role="rows", campaign="zoo")
    assert [cat.entry_of(z).platform for z in zoos] == [
        "cpu_epyc_zen3_2c", "cpu_epyc_zen4_2c", "cpu_epyc_zen5_2c"]
    for zoo in zoos:
        plat = zoo.parent.parent.name
        for named in (zoo, Path(os.path.relpath(zoo))):
            base = named.parent.parent
            rows = [base / "design" / n for n in ("rows.parquet", "rows_new_families.parquet")]
            bench = ("heap_pair_kept" if plat == "cpu_epyc_zen4_2c" else "design")
            assert sibling_files(named) == {
                "design_datasets": [r.as_posix() for r in rows if r.is_file()],
                "audit": (named.parent / "audit.parquet").as_posix(),
                "kernel_bench": (base / bench / "kernels.parquet").as_posix()}, zoo
    # the design rows: the ResNet file first, then the new families'
    for plat in cat.platforms():
        names = [p.name for p in cat.files(plat, DESIGN, "rows")]
        assert names in (["rows.parquet"], ["rows.parquet", "rows_new_families.parquet"]), plat
    # the cost widget's platforms: the five CPUs, then cpu_epyc_2c, the GPU last
    from carb_lib.app.cost_platforms import platform_files

    assert list(platform_files().items()) == [
        (p, design(p, "rows.parquet")) for p in (*CPUS, "cpu_epyc_2c", "gpu_nvidia_h200")]
    # the GPU campaign skips the configs of the platform's design rows (both files)
    from carb_lib.measure.gpu_campaign import _existing_ids

    want = set()
    for name in ("rows.parquet", "rows_new_families.parquet"):
        d = pd.read_parquet(design("gpu_nvidia_h200", name), columns=["config_id", "status"])
        want |= set(d.loc[d["status"].isin(["ok", "oom"]), "config_id"].astype(str))
    assert _existing_ids(DATA, "gpu_nvidia_h200") == want and want
    # the read-bandwidth probe: the Xeon 167's (its design campaign's) for each of its benchmarks
    for bench in cat.files(role="kernels"):
        plat = cat.entry_of(bench).platform
        want_probe = design(plat, "cache_probe.csv") if plat == "cpu_xeon_gnr_2c" else None
        assert LD.find_cache_probe(bench, plat) == want_probe, bench
    # find_benchmark for each campaign's rows: its own benchmark; else, where its heap differs
    # from the design campaign's, the platform's last one timed with its heap; else the design's
    heap_matched = {}
    for entry in cat.entries(role="rows"):
        plat, camp = entry.platform, entry.campaign
        got = LD.find_benchmark(plat, rows_file=entry.path)
        own = cat.files(plat, camp, "kernels")
        if own:
            assert got == own[0], entry.path
        elif got is not None and cat.entry_of(got).campaign != DESIGN:
            heap_matched[f"{plat}/{camp}"] = cat.entry_of(got).campaign
        else:
            assert got == next(iter(cat.files(plat, DESIGN, "kernels")), None), entry.path
    assert heap_matched == {"cpu_epyc_zen4_2c/zoo": "heap_pair_kept",
                            **{f"cpu_xeon_gnr_2c/{c}": "traffic"
                               for c in ("above_caps", "off_grid", "steady_source")}}
    assert [e.campaign for e in cat.benchmarks("cpu_epyc_zen4_2c", "zoo")] == [
        "heap_pair_kept", "design"]
    assert [e.campaign for e in cat.benchmarks("cpu_epyc_zen4_2c", "design")] == ["design"]


def _synthetic_platform(folder: Path, name: str = "synthetic_newcomer") -> Path:
    """A SYNTHETIC platform's rows and operator benchmark, and a user catalog naming them."""
    from kernel_synthetic import synthetic_bench

    from carb_lib.dataset.synthetic import make_synthetic_dataset

    folder.mkdir(parents=True, exist_ok=True)
    rows = make_synthetic_dataset(216, seed=3, platform=name, with_energy=False,
                                  with_telemetry=False, error_rate=0.0).drop(columns="config_id")
    rows.to_parquet(folder / "rows.parquet")
    synthetic_bench(600).assign(platform=name).to_parquet(folder / "kernels.parquet")
    (folder / "catalog.yaml").write_text(f"""format: 1
campaigns:
- platform: {name}
  campaign: design
  device: cpu
  families: [resnet]
  protocol: {{version: v2, threads: 1, heap: kept, windows: detector}}
  date: '2026-12-07'
  files:
  - {{path: rows.parquet, role: rows, families: [resnet]}}
  - {{path: kernels.parquet, role: kernels}}
""")
    return folder / "catalog.yaml"


def test_the_platform_of_a_cpu_model_is_the_campaign_measured_on_it(no_user_catalog):
    from carb_lib.dataset.catalog import load_catalog

    cat = load_catalog()
    zen4 = "AuthenticAMD family 25 model 17 stepping 1 | AVX512 | L3 32768K"
    zen5 = "AuthenticAMD family 26 model 2 stepping 1 | AVX512 | L3 32768K"
    assert cat.platform_of_cpu(zen4) == "cpu_epyc_zen4_2c"
    assert cat.platform_of_cpu(zen5, "zoo") == "cpu_epyc_zen5_2c"
    assert cat.platform_of_cpu(zen4, "no_such_campaign") is None
    assert cat.platform_of_cpu("GenuineIntel family 6 model 1 | AVX2 | L3 1K") is None
    # every catalogued CPU design campaign with a CPU model is found by it; a GPU's campaign
    # names its host's CPU, which is not the GPU platform
    for c in cat.campaigns:
        if c.campaign == "design" and c.cpu_id not in (None, "unknown"):
            found = cat.platform_of_cpu(c.cpu_id)
            assert (found == c.platform) if c.device == "cpu" else (found != c.platform)


def test_a_user_catalog_extends_the_shipped_one(tmp_path, monkeypatch):
    user = _synthetic_platform(tmp_path / "mine")
    monkeypatch.chdir(tmp_path)  # paths are the catalog's folder's, not the working folder's
    monkeypatch.setenv(C.CATALOG_ENV, "mine/catalog.yaml")
    cat = C.load_catalog()
    assert cat.platforms()[-1] == "synthetic_newcomer" and "cpu_xeon_gnr_2c" in cat.platforms()
    assert C.files(platform="synthetic_newcomer", role="rows") == [Path("mine") / "rows.parquet"]
    assert C.catalog_problems(C.read_catalog(user)) == []
    from carb_lib.ensemble.latency_default import find_benchmark

    assert find_benchmark("synthetic_newcomer") == Path("mine") / "kernels.parquet"
    # the shipped catalog is read-only: a user catalog cannot list one of its campaigns again
    (tmp_path / "dup.yaml").write_text("format: 1\ncampaigns:\n- {platform: cpu_xeon_gnr_2c, "
                                       "campaign: design, files: []}\n")
    with pytest.raises(C.CatalogError, match="cpu_xeon_gnr_2c/design is already in"):
        C.load_catalog(tmp_path / "dup.yaml")


def test_carb_fit_platform_reads_its_catalogued_rows(tmp_path, monkeypatch):
    from carb_lib.app.cli import app

    monkeypatch.delenv(C.CATALOG_ENV, raising=False)
    user = _synthetic_platform(tmp_path / "mine")
    out = tmp_path / "m.skops"
    res = CliRunner().invoke(app, ["--catalog", str(user), "fit", "--platform",
                                   "synthetic_newcomer", "--out", str(out), "--preset", "test"])
    assert res.exit_code == 0, res.output
    meta = json.loads(Path(f"{out}.json").read_text())
    assert meta["data"] == [str(tmp_path / "mine" / "rows.parquet")]
    assert meta["kernel_bench"] is not None and meta["latency_law"] == "kernel"
    assert C._USER == []  # --catalog held for that command only
    res = CliRunner().invoke(app, ["fit", "--platform", "synthetic_newcomer", "--out",
                                   str(tmp_path / "n.skops"), "--preset", "test"])
    assert res.exit_code == 1
    line = res.output.strip()
    assert len(line.splitlines()) == 1 and "'synthetic_newcomer' is not in the catalog" in line
    assert "known platforms: cpu_epyc_2c" in line


@pytest.mark.parametrize("text, words", [
    ("format: 2\n", "expected a mapping with format: 1"),
    ("format: 1\ncampaigns: [{platform: p, files: []}]\n", "missing key 'campaign'"),
    ("format: 1\ncampaigns: [{platform: p, campaign: c, files: [{path: a.parquet, "
     "role: rowz}]}]\n", "role 'rowz' is not one of rows"),
    ("format: 1\ncampaigns: [{platform: p, campaign: c, files: [{path: ../a.parquet, "
     "role: rows}]}]\n", "must stay inside the catalog's folder"),
    ("format: 1\ncampaigns: [{platform: p, campaign: c, files: [{path: a.parquet, role: rows},"
     " {path: a.parquet, role: audit}]}]\n", "a.parquet: the file is listed twice"),
    ("format: 1\ncampaigns: [{platform: p, campaign: c, files: []}, {platform: p, campaign: c,"
     " files: []}]\n", "campaign p/c is listed twice"),
    ("format: 1\ncampaigns: [unclosed\n", "not readable YAML"),
])
def test_a_bad_catalog_is_one_line(tmp_path, text, words):
    from carb_lib.app.cli import app

    bad = tmp_path / "catalog.yaml"
    bad.write_text(text)
    with pytest.raises(C.CatalogError, match="^catalog ") as err:
        C.read_catalog(bad)
    assert words in str(err.value) and len(str(err.value).splitlines()) == 1
    res = CliRunner().invoke(app, ["--catalog", str(bad), "fit", "--platform", "p", "--out",
                                   str(tmp_path / "m.skops")])
    assert res.exit_code == 1 and len(res.output.strip().splitlines()) == 1, res.output
    assert words in res.output


def test_catalogued_entries_are_described(no_user_catalog):
    cat = C.read_catalog(C.SHIPPED_CATALOG)
    assert all(e.note for e in cat.other)  # a file of no campaign says what it is
    rows = cat.entries(role="rows")
    assert all(e.card and e.families for e in rows)
    assert pd.Series([e.platform for e in rows]).nunique() == len(cat.platforms())
