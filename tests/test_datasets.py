"""External HELP loader and the generic measurement-table loader."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from carb_lib.datasets import (
    HELP_COLUMNS,
    DatasetError,
    load_help_latency,
    load_measurements,
    parse_help_file,
)

# HELP's folder in the project's shared/ beside the checkout (absent on a fresh clone: skipped)
HELP_DIR = Path(__file__).resolve().parents[2] / "shared" / "external" / "help-nb201"
SHIPPED = Path(__file__).resolve().parents[1] / "data/external/help_nb201.parquet"
needs_help = pytest.mark.skipif(not HELP_DIR.exists(), reason="HELP source folder not here")


def test_parse_help_file_names():
    assert parse_help_file("titanx_256") == ("titanx", 256)
    assert parse_help_file("1080ti_1") == ("1080ti", 1)
    assert parse_help_file("gold_6240") == ("gold_6240", 1)
    assert parse_help_file("essential_ph_1") == ("essential_ph_1", 1)  # a phone, not batch 1
    with pytest.raises(DatasetError, match="unknown HELP latency file 'tpu_v4_8'"):
        parse_help_file("tpu_v4_8")


@needs_help
def test_load_help_schema_batches_and_licence():
    df = load_help_latency(HELP_DIR, devices=["titanx", "essential_ph_1", "help_pixel3"])
    assert list(df.columns) == list(HELP_COLUMNS)
    assert set(df["platform"]) == {"help_titanx", "help_essential_ph_1", "help_pixel3"}
    sizes = df.groupby(["platform", "batch"]).size()
    assert sizes.loc[("help_titanx", 256)] == 15_625
    assert set(df.loc[df.platform == "help_titanx", "batch"]) == {1, 32, 256}
    assert set(df.loc[df.platform == "help_essential_ph_1", "batch"]) == {1}
    assert (df["family"] == "nb201").all() and (df["resolution"] == 32).all()
    assert (df["precision"] == "fp32").all() and (df["num_classes"] == 10).all()
    assert df["energy_j"].isna().all() and df["peak_mem_mib"].isna().all()
    assert df["licence"].str.contains("MIT").all()
    assert df["source"].str.startswith("github.com/HayeonLee/HELP@").all()
    # config_id: same arch and batch -> same id across devices; batch changes it
    ids = df.pivot_table(index=["arch", "batch"], columns="platform", values="config_id",
                         aggfunc="first")
    b1 = ids.xs(1, level="batch")
    assert (b1["help_titanx"] == b1["help_pixel3"]).all()
    assert df["config_id"].str.fullmatch(r"[0-9a-f]{16}").all()
    assert df.loc[df.platform == "help_titanx", "config_id"].nunique() == 3 * 15_625
    # arch index agrees with HELP's str_arch2idx
    import torch

    idx = torch.load(HELP_DIR / "str_arch2idx.pt", weights_only=True)
    sample = df.sample(50, random_state=0)
    assert all(idx[a] == i for a, i in zip(sample["arch"], sample["arch_index"], strict=True))
    # implausible Pixel 3 values are flagged, not dropped
    px = df[df.platform == "help_pixel3"]
    assert len(px) == 15_625
    bad = px[px.status != "ok"]
    assert (bad["latency_ms"] < 1.0).all() and bad["error"].str.contains("implausible").all()
    assert (px.loc[px.status == "ok", "latency_ms"] >= 1.0).all()
    with pytest.raises(DatasetError, match="unknown HELP device"):
        load_help_latency(HELP_DIR, devices=["help_tpu"])


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
    })


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_load_measurements_roundtrip(tmp_path, suffix):
    df = _rows()
    path = tmp_path / f"m{suffix}"
    df.to_csv(path, index=False) if suffix == ".csv" else df.to_parquet(path, index=False)
    out = load_measurements(path)
    assert len(out) == 3 and out["config_id"].str.fullmatch(r"[0-9a-f]{16}").all()
    from carb_lib.nb201 import NB201Config

    assert out.loc[2, "config_id"] == NB201Config(df.loc[2, "arch"], batch=4).config_id


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: d.drop(columns="platform"), "missing column 'platform'"),
        (lambda d: d.drop(columns="latency_ms"), "no target column"),
        (lambda d: d.assign(latency_ms=[1.0, "fast", 2.0]), r"row 1: column 'latency_ms' value 'fast'"),
        (lambda d: d.assign(latency_ms=[1.0, 2.0, -3.0]), r"row 2: column 'latency_ms' value -3.0"),
        (lambda d: d.assign(depth=[18, 51, np.nan]), r"row 1: depth=51"),
        (lambda d: d.assign(arch=[None, None, "|zap~0|+|none~0|none~1|+|none~0|none~1|none~2|"]),
         r"row 2: unknown NB201 operation 'zap'"),
        (lambda d: d.assign(config_id=["0" * 16, None, None]), r"row 0: column 'config_id'"),
        (lambda d: d.assign(status=["ok", "great", "ok"]), r"row 1: column 'status' value 'great'"),
        (lambda d: d.drop(columns="arch"), r"nb201 rows need column\(s\) \['arch'\]"),
    ],
)
def test_load_measurements_errors_name_column_row_value(tmp_path, edit, match):
    path = tmp_path / "m.csv"
    edit(_rows()).to_csv(path, index=False)
    with pytest.raises(DatasetError, match=match):
        load_measurements(path)


def test_load_measurements_missing_file_and_type(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_measurements(tmp_path / "nope.csv")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(DatasetError, match="unsupported file type '.json'"):
        load_measurements(tmp_path / "x.json")
