"""Dataset schema: validation errors name column, row and value; atomic write; read back.

Rows here are synthetic (made up for the tests), never written to data/."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from carb_lib.dataset import schema as ds

ROOT = Path(__file__).resolve().parents[1]


def synthetic_row(i: int = 0, **kw) -> dict:
    row = ds.empty_row()
    row.update(
        platform="synthetic_cpu", config_id=f"{i:016x}", family="resnet", block="basic",
        depth=18, width=0.5, early_downsample=True, resolution=32, batch=4, precision="fp32",
        num_classes=1000, energy_j=np.nan, energy_reason="no energy counter: synthetic",
        latency_ms=1.5 + i, peak_mem_mib=10.0, n_iters=100, window_s=0.2,
        latency_mean_ms=1.6 + i, latency_p10_ms=1.4 + i, latency_p90_ms=1.9 + i,
        latency_cv=0.03, status="ok", error=None, device_name="synthetic", torch_version="2.13",
        host="h", measured_at="2026-01-01T00:00:00.000+00:00", threads=1,
    )  # fmt: skip
    row.update(kw)
    return row


def frame(n: int = 3, **kw) -> pd.DataFrame:
    return pd.DataFrame([synthetic_row(i, **kw) for i in range(n)])


def with_features(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()
    for c in ds.STATIC_FEATURE_COLUMNS:
        out[c] = 1.0 if c == "arith_intensity_flop_per_byte" else 7
    return out


def test_feature_columns_match_features_module():
    from carb_lib.dataset.features import STATIC_FEATURE_COLUMNS, static_features
    from carb_lib.families.space import paper_grid

    assert tuple(STATIC_FEATURE_COLUMNS) == ds.STATIC_FEATURE_COLUMNS
    from carb_lib.core.vocab import ALLOC_FEATURES, EXTRA_STATIC_FEATURES, FLOAT_STATIC_FEATURES

    alloc = tuple(ALLOC_FEATURES.values())
    cols = tuple(static_features(paper_grid().head(3)).columns)
    assert cols == (*ds.STATIC_FEATURE_COLUMNS, *EXTRA_STATIC_FEATURES, *alloc)
    for c in cols:  # every column resnet computes is in the schema, with its storage kind
        kind = "float" if c in (*FLOAT_STATIC_FEATURES, *alloc) else "int"
        assert ds.COLUMNS[c].kind == kind, c
    assert not any(ds.COLUMNS[c].required for c in alloc)  # stored datasets predate them


def test_family_columns_come_from_the_families():
    from carb_lib.families import FAMILIES
    from carb_lib.families.nb201 import OP_COUNT_COLUMNS

    assert tuple(OP_COUNT_COLUMNS) == ds.NB201_FEATURE_COLUMNS
    for fam in FAMILIES.values():
        for col in fam.own_columns:
            c = ds.COLUMNS[col.name]
            assert (c.kind, c.group, c.missing, c.nonneg) == (col.kind, "config", "family",
                                                                col.nonneg)  # fmt: skip
            assert fam.name in c.families
        for name in fam.extra_feature_columns:
            assert ds.COLUMNS[name].group == "feature" and not ds.COLUMNS[name].required
    assert ds.COLUMNS["block"].families == ("resnet",)
    assert ds.COLUMNS["arch"].families == ("nb201",)
    # the columns of files stored before the new families keep their order (``conform`` orders
    # the columns a file has; the later families' columns come after the earlier ones')
    old = ("platform", "config_id", "family", "block", "depth", "width", "early_downsample",
           "arch", "resolution", "batch", "precision", "num_classes", *ds.STATIC_FEATURE_COLUMNS,
           *ds.NB201_FEATURE_COLUMNS)  # fmt: skip
    assert tuple(c for c in ds.COLUMN_ORDER if c in old) == old
    assert ds.COLUMN_ORDER[:12] == (
        "platform", "config_id", "family", "block", "depth", "width", "early_downsample",
        "arch", "expansion", "kernel", "depth_mult", "batch_norm",
    )  # fmt: skip
    assert ds.COLUMNS["depth"].families == ("resnet", "vgg")
    assert ds.COLUMNS["width"].families == ("resnet", "mobilenetv2", "vgg", "efficientnet")


def test_valid_frame_passes_and_roundtrips(tmp_path):
    df = with_features(frame())
    path = ds.write_dataset(df, tmp_path / "d.parquet")
    back = ds.read_dataset(path)
    assert len(back) == 3 and list(back["config_id"]) == list(df["config_id"])
    assert str(back["depth"].dtype) == "Int64" and str(back["early_downsample"].dtype) == "boolean"
    assert back["energy_j"].isna().all()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]


def test_part_without_features_needs_flag():
    df = ds.conform(frame())
    ds.validate(df, require_features=False)
    with pytest.raises(ds.SchemaError, match="missing required column.*n_conv"):
        ds.validate(df)


def test_unknown_column():
    df = frame().assign(bogus=1)
    with pytest.raises(ds.SchemaError, match="unknown column.*bogus"):
        ds.validate(df, require_features=False)
    ds.validate(df, require_features=False, extra_columns=["bogus"])


def test_missing_column():
    with pytest.raises(ds.SchemaError, match="missing required column.*latency_ms"):
        ds.validate(frame().drop(columns="latency_ms"), require_features=False)


def test_negative_cost_names_column_row_value():
    df = frame()
    df.loc[1, "latency_ms"] = -2.0
    with pytest.raises(ds.SchemaError) as e:
        ds.validate(df, require_features=False)
    msg = str(e.value)
    assert msg == (
        "row 1: column 'latency_ms' value -2.0 is negative; a cost of an ok row must be a "
        "finite number > 0 (config_id='0000000000000001', platform='synthetic_cpu')"
    )


@pytest.mark.parametrize("value, why", [(0.0, "is zero"), (np.inf, "is not finite")])
def test_ok_costs_must_be_finite_and_positive(value, why):
    df = frame()
    df.loc[1, "peak_mem_mib"] = value
    with pytest.raises(ds.SchemaError,
                       match=f"row 1: column 'peak_mem_mib' value .* {why}.*0000000000000001"):
        ds.validate(df, require_features=False)


def test_costs_of_failed_rows_may_be_zero():
    df = frame()
    df.loc[0, ["latency_ms", "n_iters", "latency_cv"]] = [0.0, np.nan, np.nan]
    df.loc[0, ["status", "error"]] = ["error", "failed: synthetic"]
    ds.validate(df, require_features=False)


def test_unknown_family_is_named():
    df = frame()
    df.loc[2, "family"] = "vit"
    with pytest.raises(ds.SchemaError, match="row 2: column 'family' value 'vit' is not a regis"):
        ds.validate(df, require_features=False)


def test_complete_and_measurement_levels_share_the_cost_rule():
    """The same row breaks both levels with the same message."""
    df = frame()
    df.loc[1, "latency_ms"] = 0.0
    msgs = []
    for complete in (True, False):
        with pytest.raises(ds.SchemaError) as e:
            ds.validate_table(df, complete=complete, require_features=False)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    assert "value 0.0 is zero; a cost of an ok row must be a finite number > 0" in msgs[0]


def test_energy_dynamic_may_be_negative():
    ds.validate(frame(energy_dynamic_j=-0.01), require_features=False)


def test_nan_where_not_allowed():
    df = frame()
    df.loc[2, "peak_mem_mib"] = np.nan
    with pytest.raises(ds.SchemaError, match="'peak_mem_mib'.*status 'ok'.*0000000000000002"):
        ds.validate(df, require_features=False)
    df = frame()
    df.loc[0, "platform"] = None
    with pytest.raises(ds.SchemaError, match="'platform'.*may never be missing"):
        ds.validate(df, require_features=False)


def test_energy_nan_needs_reason():
    df = frame()
    df.loc[0, "energy_reason"] = None
    with pytest.raises(ds.SchemaError, match="'energy_j'.*energy_reason"):
        ds.validate(df, require_features=False)


def test_targets_may_be_nan_when_not_ok():
    df = frame()
    df.loc[0, ["latency_ms", "peak_mem_mib", "n_iters", "latency_cv"]] = np.nan
    df.loc[0, "status"] = "oom"
    df.loc[0, "error"] = "OutOfMemoryError: synthetic"
    ds.validate(df, require_features=False)
    df.loc[0, "error"] = None
    with pytest.raises(ds.SchemaError, match="'error'.*not 'ok'"):
        ds.validate(df, require_features=False)


def test_bad_status():
    df = frame()
    df.loc[1, "status"] = "done"
    with pytest.raises(ds.SchemaError, match="'status'.*'done'.*allowed"):
        ds.validate(df, require_features=False)


def test_duplicate_platform_config_id():
    df = pd.concat([frame(2), frame(1)], ignore_index=True)
    with pytest.raises(ds.SchemaError, match="duplicated"):
        ds.validate(df, require_features=False)
    ds.validate(df, require_features=False, unique=False)
    other = frame(1, platform="synthetic_gpu")  # same config on another platform is fine
    ds.validate(pd.concat([frame(1), other]), require_features=False)


def test_family_columns_and_config_id_format():
    df = frame()
    df.loc[0, "block"] = None
    with pytest.raises(ds.SchemaError, match="'block'.*family"):
        ds.validate(df, require_features=False)
    df = frame()
    df.loc[0, "config_id"] = "XYZ"
    with pytest.raises(ds.SchemaError, match="config_id.*16 lowercase hex"):
        ds.validate(df, require_features=False)


def test_wrong_type():
    df = frame()
    df["latency_ms"] = df["latency_ms"].astype(object)
    df.loc[0, "latency_ms"] = "fast"
    with pytest.raises(ds.SchemaError, match="'latency_ms'.*'fast'.*not a number"):
        ds.validate(df, require_features=False)


def test_write_with_backup_keeps_the_previous_version(tmp_path):
    path = tmp_path / "d.parquet"
    ds.write_dataset(with_features(frame(2)), path)
    ds.write_dataset(with_features(frame(3)), path, backup=True)
    assert len(ds.read_dataset(path)) == 3
    assert len(ds.read_dataset(ds.backup_path(path))) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.parquet", "d.parquet.bak"]


def test_write_refuses_invalid_and_keeps_old_file(tmp_path):
    path = tmp_path / "d.parquet"
    ds.write_dataset(with_features(frame()), path)
    before = path.read_bytes()
    bad = with_features(frame())
    bad.loc[0, "status"] = "maybe"
    with pytest.raises(ds.SchemaError):
        ds.write_dataset(bad, path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.parquet"]


def test_read_validates(tmp_path):
    p = tmp_path / "raw.parquet"
    df = with_features(frame())
    df.loc[0, "latency_ms"] = -1.0
    df.to_parquet(p)
    with pytest.raises(ds.SchemaError, match="negative"):
        ds.read_dataset(p)


def test_describe_schema_lists_every_column():
    t = ds.describe_schema()
    assert set(t["column"]) == set(ds.COLUMN_ORDER)


def test_measurement_path_imports_without_modelling_libraries():
    """The GPU box has no xgboost/lightgbm/matplotlib: the measurement modules must not
    import them (they are blocked here and must stay unloaded)."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('xgboost', 'lightgbm', 'matplotlib', 'seaborn',"
        " 'papermill'):\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import carb_lib.dataset.schema, carb_lib.measure.telemetry, carb_lib.measure.profiling, carb_lib.measure.campaign\n"
        "import carb_lib.measure.gpu_campaign, carb_lib.families.space, carb_lib.dataset.features\n"
        "print('ok')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout
