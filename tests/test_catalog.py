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

#: The path tables the catalog replaced, as they were (relative to the repository).
OLD_CPU_FILES = {
    "cpu_epyc_zen3_2c": ("data/cpu_epyc_zen3_2c.parquet", "data/kernels/cpu_epyc_zen3_2c.parquet",
                         "data/audit/cpu_epyc_zen3_2c.parquet"),
    **{p: (f"data/other_cpus/{p}.parquet", f"data/kernels/{p}.parquet",
           f"data/audit/other_cpus/{p}.parquet")
       for p in ("cpu_epyc_zen4_2c", "cpu_epyc_zen5_2c", "cpu_xeon_emr_2c", "cpu_xeon_gnr_2c")},
}
OLD_DESIGN_FILES = ("{stem}.parquet", "new_families/{stem}.parquet", "other_cpus/{stem}.parquet",
                    "other_cpus/new_families/{stem}.parquet")
OLD_SHIPPED_DATA_FOLDERS = ("data", "data/other_cpus")


def _old_sibling_files(zoo_dataset: Path) -> dict:
    data, stem = zoo_dataset.parent.parent, zoo_dataset.stem

    def present(p: Path) -> str | None:
        return p.as_posix() if p.is_file() else None

    design = [present(data / f.format(stem=stem)) for f in OLD_DESIGN_FILES]
    return {"design_datasets": [d for d in design if d],
            "audit": present(data / "audit" / "zoo" / f"{stem}.parquet"),
            "kernel_bench": present(data / "kernels" / f"{stem}.parquet")}


def _old_find_benchmark(platform: str, campaign: str | None) -> Path | None:
    names = [f"{platform}.parquet"]
    if campaign and campaign != platform and campaign.startswith(f"{platform}_"):
        names.insert(0, f"{campaign}.parquet")
    for name in names:
        if (DATA / "kernels" / name).is_file():
            return DATA / "kernels" / name
    return None


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


def test_lookups_equal_the_old_path_tables(no_user_catalog):
    from carb_lib.app.cli_checks import check_shipped_threads  # noqa: F401 - the module loads
    from carb_lib.dataset.catalog import DESIGN, load_catalog
    from carb_lib.ensemble import latency_default as LD
    from carb_lib.evaluation.zoo import sibling_files
    from carb_lib.transfer import cpus as TC

    # CPU_FILES: same platforms, same order, same files
    new = TC.CPU_FILES
    assert list(new) == list(OLD_CPU_FILES)
    for plat, spec in OLD_CPU_FILES.items():
        assert tuple(Path(p) for p in new[plat]) == tuple(ROOT / p for p in spec)
    # sibling_files of every zoo file, with the path as a caller names it
    # (the one change: Zen 4's zoo rows, timed with the heap kept, go with the operator benchmark
    # timed with the heap kept, which the old table did not know)
    kept = {"cpu_epyc_zen4_2c": "kernels/cpu_epyc_zen4_2c_heap_pair_kept.parquet"}
    for zoo in sorted((DATA / "zoo").glob("*.parquet")):
        for named in (zoo, Path(os.path.relpath(zoo))):
            old = _old_sibling_files(named)
            if zoo.stem in kept:
                old["kernel_bench"] = (named.parent.parent / kept[zoo.stem]).as_posix()
            assert sibling_files(named) == old, zoo.name
    # the shipped rows check_shipped_threads reads: the old folders' <platform>.parquet come first
    cat = load_catalog()
    for plat in cat.platforms():
        old = [ROOT / f / f"{plat}.parquet" for f in OLD_SHIPPED_DATA_FOLDERS
               if (ROOT / f / f"{plat}.parquet").is_file()]
        new_rows = cat.files(plat, DESIGN, "rows")
        assert new_rows[:len(old)] == old and all(
            "new_families/" in p.relative_to(DATA).as_posix() for p in new_rows[len(old):])
    # the cost widget's platforms: the CPU_FILES platforms, then cpu_epyc_2c, the GPU last
    from carb_lib.app.cost_platforms import platform_files

    old_widget = {**{p: ROOT / s[0] for p, s in OLD_CPU_FILES.items()},
                  "cpu_epyc_2c": DATA / "cpu_epyc_2c.parquet",
                  "gpu_nvidia_h200": DATA / "gpu_nvidia_h200.parquet"}
    assert list(platform_files().items()) == list(old_widget.items())
    # the GPU campaign skips the configs of the platform's design rows (both files, as before)
    from carb_lib.measure.gpu_campaign import _existing_ids

    old_ids = set()
    for p in (DATA / "gpu_nvidia_h200.parquet", DATA / "new_families" / "gpu_nvidia_h200.parquet"):
        d = pd.read_parquet(p, columns=["config_id", "status"])
        old_ids |= set(d.loc[d["status"].isin(["ok", "oom"]), "config_id"].astype(str))
    assert _existing_ids(DATA, "gpu_nvidia_h200") == old_ids and old_ids
    # the read-bandwidth probe of every benchmark: the one beside it, by name, as before
    for bench in cat.files(role="kernels"):
        old_probe = next((bench.with_name(n) for n in (f"{bench.stem}_cache_probe.csv",
                                                       f"{cat.entry_of(bench).platform}"
                                                       "_cache_probe.csv")
                          if bench.with_name(n).is_file()), None)
        assert LD.find_cache_probe(bench, cat.entry_of(bench).platform) == old_probe, bench
    # find_benchmark: every platform, with every rows file's stem as the campaign: as before,
    # except rows of a campaign timed with another heap than the design campaign and without a
    # benchmark of its own, which now get the platform's last benchmark timed with their heap
    stems = {None, *(e.path.name.split(".")[0] for e in cat.entries(role="rows"))}
    heap_matched = {}
    for plat in cat.platforms():
        for stem in stems:
            new = LD.find_benchmark(plat, campaign=stem)
            camp = cat.campaign(plat, stem[len(plat) + 1:]) if stem and stem.startswith(
                f"{plat}_") else None
            design = cat.campaign(plat, "design")
            if camp is not None and design is not None and not cat.files(plat, camp.campaign,
                                                                          "kernels") \
                    and camp.protocol.get("heap") not in (None, design.protocol.get("heap")):
                heap_matched[stem] = new.name
                assert cat.campaign(plat, cat.entry_of(new).campaign).protocol["heap"] == \
                    camp.protocol["heap"], stem
            else:
                assert new == _old_find_benchmark(plat, stem), (plat, stem)
    assert heap_matched == {f"cpu_xeon_gnr_2c_{c}": "cpu_xeon_gnr_2c_traffic.parquet"
                            for c in ("above_caps", "off_grid", "steady_source")}
    # a catalogued rows file's own campaign decides, whatever its name: the Zen 4 zoo rows (heap
    # kept) get the kept-heap benchmark, as notebook 07's sibling_files gives them
    zoo4 = cat.files("cpu_epyc_zen4_2c", "zoo", "rows")[0]
    assert LD.find_benchmark("cpu_epyc_zen4_2c", rows_file=zoo4).name == \
        "cpu_epyc_zen4_2c_heap_pair_kept.parquet"
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
