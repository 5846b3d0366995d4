"""External HELP loader (from a committed fixture) and the generic measurement-table loader."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from carb_lib.core.tables import TableError
from carb_lib.dataset.readers import (
    HELP_COLUMNS,
    DatasetError,
    convert_help,
    load_help_latency,
    load_measurements,
    parse_help_file,
    validate_measurements,
)
from carb_lib.dataset.schema import SchemaError

# a subset of HELP's folder in HELP's own format (provenance and licence: its README.md)
HELP_DIR = Path(__file__).parent / "fixtures" / "help_nb201"
SHIPPED = Path(__file__).resolve().parents[1] / "data/external/help_nb201.parquet"
N_ARCHS = 28


@pytest.fixture(scope="module")
def help_rows():
    return load_help_latency(HELP_DIR)


def test_parse_help_file_names():
    assert parse_help_file("titanx_256") == ("titanx", 256)
    assert parse_help_file("1080ti_1") == ("1080ti", 1)
    assert parse_help_file("gold_6240") == ("gold_6240", 1)
    assert parse_help_file("essential_ph_1") == ("essential_ph_1", 1)  # a phone, not batch 1
    with pytest.raises(DatasetError, match="unknown HELP latency file 'tpu_v4_8'"):
        parse_help_file("tpu_v4_8")


def test_help_fixture_is_documented():
    readme = (HELP_DIR / "README.md").read_text()
    assert "HayeonLee/HELP" in readme and "45f70eb9" in readme and "MIT" in readme
    assert "MIT License" in (HELP_DIR / "LICENSE").read_text()
    prov = pd.read_csv(HELP_DIR / "provenance.csv")
    assert list(prov["fixture_index"]) == list(range(N_ARCHS))
    assert prov["help_index"].is_monotonic_increasing and prov["arch"].is_unique


def test_load_help_schema_batches_and_flags(help_rows):
    df = help_rows
    assert list(df.columns) == list(HELP_COLUMNS)
    assert len(df) == 19 * N_ARCHS
    assert df["platform"].nunique() == 11
    sizes = df.groupby(["platform", "batch"]).size()
    assert (sizes == N_ARCHS).all() and len(sizes) == 19
    assert set(df.loc[df.platform == "help_titanx", "batch"]) == {1, 32, 256}
    assert set(df.loc[df.platform == "help_essential_ph_1", "batch"]) == {1}
    assert (df["family"] == "nb201").all() and (df["resolution"] == 32).all()
    assert (df["precision"] == "fp32").all() and (df["num_classes"] == 10).all()
    assert df["energy_j"].isna().all() and df["peak_mem_mib"].isna().all()
    assert df["licence"].str.contains("MIT").all()
    assert df["source"].str.startswith("github.com/HayeonLee/HELP@45f70eb9:").all()
    # config_id: same arch and batch -> same id across devices; batch changes it
    ids = df.pivot_table(index=["arch", "batch"], columns="platform", values="config_id",
                         aggfunc="first")  # fmt: skip
    b1 = ids.xs(1, level="batch")
    assert (b1["help_titanx"] == b1["help_pixel3"]).all()
    assert df["config_id"].str.fullmatch(r"[0-9a-f]{16}").all()
    assert df.loc[df.platform == "help_titanx", "config_id"].nunique() == 3 * N_ARCHS
    # arch index agrees with the fixture's str_arch2idx (and so with provenance.csv)
    prov = pd.read_csv(HELP_DIR / "provenance.csv")
    one = df[df.platform == "help_gold_6240"]
    assert list(one["arch"]) == list(prov["arch"]) and list(one["arch_index"]) == list(range(28))
    # implausible Pixel 3 values (< 1 ms) are flagged, not dropped: 6 of them in the fixture
    px = df[df.platform == "help_pixel3"]
    bad = px[px.status != "ok"]
    assert list(bad["arch_index"]) == [10, 12, 24, 25, 26, 27]
    assert (bad["latency_ms"] < 1.0).all() and bad["error"].str.contains("implausible").all()
    assert (px.loc[px.status == "ok", "latency_ms"] >= 1.0).all()
    assert (df.loc[df.platform != "help_pixel3", "status"] == "ok").all()
    # the loader's output passes the one validator
    validate_measurements(df, name="help")


def test_help_fixture_rows_equal_the_shipped_table(help_rows):
    """The fixture is HELP's data: its rows equal those of the converted full table."""
    if not SHIPPED.exists():
        pytest.skip("data/external/help_nb201.parquet not converted yet")
    cols = ["config_id", "platform", "batch", "arch", "latency_ms", "status", "source"]
    shipped = pd.read_parquet(SHIPPED, columns=cols)
    shipped = shipped[shipped["arch"].isin(set(help_rows["arch"]))]
    mine = help_rows[cols]
    key = ["platform", "batch", "arch"]
    a = mine.sort_values(key).reset_index(drop=True).astype(str)
    b = shipped.sort_values(key).reset_index(drop=True).astype(str)
    assert len(b) == len(a) == 19 * N_ARCHS
    pd.testing.assert_frame_equal(a, b)


def test_help_device_selection_and_errors(tmp_path):
    df = load_help_latency(HELP_DIR, devices=["titanx", "essential_ph_1", "help_pixel3"])
    assert set(df["platform"]) == {"help_titanx", "help_essential_ph_1", "help_pixel3"}
    assert len(df) == 5 * N_ARCHS
    assert len(load_help_latency(HELP_DIR, devices="titanx_256")) == N_ARCHS
    with pytest.raises(DatasetError, match="unknown HELP device"):
        load_help_latency(HELP_DIR, devices=["help_tpu"])
    with pytest.raises(FileNotFoundError, match="str_arch2idx.pt"):
        load_help_latency(tmp_path)


def test_convert_help_writes_parquet_and_licence(tmp_path):
    out = convert_help(HELP_DIR, tmp_path / "ext" / "help.parquet")
    assert out == tmp_path / "ext" / "help.parquet"
    back = pd.read_parquet(out)
    assert len(back) == 19 * N_ARCHS and list(back.columns) == list(HELP_COLUMNS)
    lic = (tmp_path / "ext" / "LICENSE-HELP").read_text()
    assert lic == (HELP_DIR / "LICENSE").read_text()
    assert not [p for p in (tmp_path / "ext").iterdir() if p.name.startswith(".tmp")]
    # a folder without its licence: nothing is written
    import shutil

    nolic = tmp_path / "nolic"
    shutil.copytree(HELP_DIR, nolic)
    (nolic / "LICENSE").unlink()
    with pytest.raises(FileNotFoundError, match="licence"):
        convert_help(nolic, tmp_path / "o2" / "help.parquet")
    assert not (tmp_path / "o2").exists()


def test_shipped_parquet_and_licence():
    if not SHIPPED.exists():
        pytest.skip("data/external/help_nb201.parquet not converted yet")
    lic = SHIPPED.parent / "LICENSE-HELP"
    assert lic.exists() and "MIT License" in lic.read_text()
    assert "Copyright (c) 2024 HayeonLee" in lic.read_text()
    card = (SHIPPED.parent / "README.md").read_text()
    assert "HELP" in card and "2106.08630" in card and "MIT" in card
    df = pd.read_parquet(SHIPPED, columns=["platform", "batch", "latency_ms", "licence"])
    assert len(df) == 19 * 15_625
    assert df["platform"].nunique() == 11


# --------------------------------------------------------------------------- generic tables
def _rows():
    return pd.DataFrame({
        "family": ["resnet", "resnet", "nb201"],
        "block": ["basic", "bottleneck", None],
        "depth": [18, 50, np.nan],
        "width": [1.0, 0.5, np.nan],
        "early_downsample": [True, False, None],
        "arch": [None, None, "|none~0|+|skip_connect~0|none~1|+|none~0|none~1|nor_conv_3x3~2|"],
        "resolution": [64, 32, 32],
        "batch": [8, 1, 4],
        "precision": ["fp32", "fp16", "fp32"],
        "num_classes": [1000, 1000, 10],
        "platform": ["cpu_x", "cpu_x", "cpu_x"],
        "latency_ms": [12.5, 3.0, 1.0],
    })  # fmt: skip


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_load_measurements_roundtrip(tmp_path, suffix):
    df = _rows()
    path = tmp_path / f"m{suffix}"
    df.to_csv(path, index=False) if suffix == ".csv" else df.to_parquet(path, index=False)
    out = load_measurements(path)
    from carb_lib.families.nb201 import NB201Config
    from carb_lib.families.resnet import ResNetConfig

    assert list(out["config_id"]) == [
        ResNetConfig("basic", 18, 1.0, True, 64, 8, "fp32").config_id,
        ResNetConfig("bottleneck", 50, 0.5, False, 32, 1, "fp16").config_id,
        NB201Config(df.loc[2, "arch"], batch=4).config_id,
    ]
    assert out["latency_ms"].dtype == np.float64
    assert list(out["latency_ms"]) == [12.5, 3.0, 1.0]


def test_family_defaults_to_resnet_and_ids_are_checked():
    df = _rows().iloc[:2].drop(columns=["family", "arch"])
    out = validate_measurements(df)
    assert list(out["family"]) == ["resnet", "resnet"]
    again = validate_measurements(out)  # the filled-in ids are accepted
    assert list(again["config_id"]) == list(out["config_id"])


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: d.drop(columns="platform"), r"missing required column\(s\) \['platform'\]"),
        (lambda d: d.assign(platform=["a", " ", "b"]), r"row 1: column 'platform' value ' '"),
        (lambda d: d.drop(columns="latency_ms"), "no target column"),
        (lambda d: d.assign(latency_ms=[1.0, "fast", 2.0]),
         r"row 1: column 'latency_ms' value 'fast' is not a number \(float\) "
         r"\(platform='cpu_x'\)"),
        (lambda d: d.assign(latency_ms=[1.0, 2.0, -3.0]),
         r"row 2: column 'latency_ms' value -3.0 is negative"),
        (lambda d: d.assign(latency_ms=[1.0, 0.0, 2.0]),
         r"row 1: column 'latency_ms' value 0.0 is zero; a cost of an ok row must be a finite "
         r"number > 0 \(platform='cpu_x'\)$"),
        (lambda d: d.assign(latency_ms=[1.0, 2.0, np.inf]),
         r"row 2: column 'latency_ms' value inf is not finite"),
        (lambda d: d.assign(depth=[18, 51, np.nan]), r"row 1: depth=51"),
        (lambda d: d.assign(arch=[None, None, "|zap~0|+|none~0|none~1|+|none~0|none~1|none~2|"]),
         r"row 2: unknown NB201 operation 'zap'"),
        (lambda d: d.assign(config_id=["0" * 16, None, None]),
         r"row 0: column 'config_id' value '0000000000000000' does not match"),
        (lambda d: d.assign(status=["ok", "great", "ok"]),
         r"row 1: column 'status' value 'great' is not a valid status"),
        (lambda d: d.assign(family=["resnet", "vit", "nb201"]),
         r"row 1: column 'family' value 'vit' is not a registered family; known: "
         r"\['resnet', 'nb201', 'mobilenetv2', 'vgg', 'efficientnet', 'module'\]"),
        (lambda d: d.drop(columns="arch"), r"row 2: nb201 rows need column\(s\) \['arch'\]"),
    ],
)  # fmt: skip
def test_load_measurements_errors_name_column_row_value(tmp_path, edit, match):
    path = tmp_path / "m.csv"
    edit(_rows()).to_csv(path, index=False)
    with pytest.raises(DatasetError, match=f"^{path}: .*{match}"):
        load_measurements(path)


def test_cost_rule_depends_on_status():
    """ok rows: finite and > 0 (or missing); other rows: missing or >= 0."""
    df = _rows().assign(status=["ok", "oom", "error"], error=[None, "OOM", "failed"],
                        latency_ms=[1.0, 0.0, np.nan], energy_j=[np.nan, np.nan, np.nan])
    out = validate_measurements(df)
    assert out["energy_j"].isna().all()
    with pytest.raises(DatasetError, match=r"row 0: column 'latency_ms' value 0.0 is zero"):
        validate_measurements(df.assign(latency_ms=[0.0, 0.0, np.nan]))
    with pytest.raises(DatasetError, match=r"row 1: column 'latency_ms' value -1.0 is negative"):
        validate_measurements(df.assign(latency_ms=[1.0, -1.0, np.nan]))


def test_one_error_type():
    assert DatasetError is SchemaError and issubclass(SchemaError, ValueError)


def test_load_measurements_missing_file_and_type(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.csv: no such file"):
        load_measurements(tmp_path / "nope.csv")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(TableError, match=r"unsupported suffix '.json'; use .csv or .parquet"):
        load_measurements(tmp_path / "x.json")
    _rows().to_parquet(tmp_path / "p.csv")
    with pytest.raises(TableError, match="looks like a Parquet file named .csv; rename it .parquet"):
        load_measurements(tmp_path / "p.csv")
    _rows().to_parquet(tmp_path / "p.pq")
    assert len(load_measurements(tmp_path / "p.pq")) == 3


def test_carb_convert_help_command(tmp_path):
    from typer.testing import CliRunner

    from carb_lib.app.cli import app

    out = tmp_path / "help.parquet"
    res = CliRunner().invoke(app, ["convert-help", "--folder", str(HELP_DIR), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert len(pd.read_parquet(out)) == 19 * N_ARCHS
    assert (tmp_path / "LICENSE-HELP").read_text() == (HELP_DIR / "LICENSE").read_text()
    res = CliRunner().invoke(app, ["convert-help", "--folder", str(tmp_path / "nope"),
                                   "--out", str(tmp_path / "o.parquet")])  # fmt: skip
    assert res.exit_code == 1 and "str_arch2idx.pt" in res.output
    assert not (tmp_path / "o.parquet").exists()
