import numpy as np
import pandas as pd
import pytest

from carb_lib.families.space import (
    BATCH_SIZES,
    PRECISIONS,
    RESNET_COLUMNS,
    STAGE_BLOCKS,
    ConfigError,
    ResNetConfig,
    build_model,
    config_from_row,
    configs_from_frame,
    extended_sample,
    paper_grid,
    resnet_config_id,
    stage_widths,
    strata,
    stratified_sample,
)


@pytest.fixture(scope="module")
def grid():
    return paper_grid()


def test_grid_size_and_uniqueness(grid):
    assert len(grid) == 17_280
    assert grid["config_id"].is_unique
    assert list(grid.columns) == ["config_id", *RESNET_COLUMNS]
    assert grid.groupby(["block", "depth"]).ngroups == 12
    assert set(grid["batch"]) == set(BATCH_SIZES)


def test_config_id_is_a_stable_content_hash(grid):
    row = grid.iloc[1234]
    cfg = config_from_row(row)
    assert cfg.config_id == row["config_id"]
    # a pinned value: the same on every machine and run
    assert resnet_config_id("bottleneck", 50, 1.0, True, 224, 1, "fp32") == ResNetConfig(
        "bottleneck", 50, 1, True, 224, 1, "fp32").config_id
    assert ResNetConfig("basic", 18, 1.0, True, 32, 1, "fp32").config_id == "7787e4479923a2fa"
    assert ResNetConfig("basic", 18, 1.0, True, 32, 1, "fp32").config_id != ResNetConfig(
        "basic", 18, 1.0, True, 32, 2, "fp32").config_id


def test_depth_equals_weighted_layers():
    from torch import nn

    for (block, depth) in STAGE_BLOCKS:
        cfg = ResNetConfig(block, depth, 0.1, True, 32, 1, "fp32")
        model = build_model(cfg)
        weighted = 0
        for name, m in model.named_modules():
            if isinstance(m, nn.Conv2d) and "downsample" not in name:
                weighted += 1
            elif isinstance(m, nn.Linear):
                weighted += 1
        assert weighted == depth, (block, depth)
        assert not model.training


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"depth": 50}, "valid depths: [8, 10, 12, 14, 18, 22, 26, 34]"),
        ({"precision": "bf16"}, "valid values: ['fp32', 'fp16']"),
        ({"batch": 0}, "batch=0 is outside the valid range"),
        ({"width": 0.3}, "width=0.3 is unknown"),
        ({"block": "dense"}, "valid values: ['basic', 'bottleneck']"),
        ({"resolution": 4}, "resolution=4 is outside"),
        ({"early_downsample": "yes"}, "early_downsample must be True or False"),
    ],
)
def test_validation_lists_valid_values(kwargs, fragment):
    base = dict(block="basic", depth=18, width=1.0, early_downsample=True, resolution=32,
                batch=1, precision="fp32")
    base.update(kwargs)
    with pytest.raises(ConfigError) as exc:
        ResNetConfig(**base)
    assert fragment in str(exc.value)


def test_off_grid_resolution_and_batch_allowed():
    cfg = ResNetConfig("basic", 10, 0.5, False, 224, 3, "fp16")
    assert cfg.resolution == 224 and cfg.batch == 3


def test_configs_from_frame_names_the_row():
    df = pd.DataFrame([
        dict(block="basic", depth=18, width=1.0, early_downsample=True, resolution=32, batch=1,
             precision="fp32"),
        dict(block="basic", depth=19, width=1.0, early_downsample=True, resolution=32, batch=1,
             precision="fp32"),
    ], index=["a", "b"])
    with pytest.raises(ConfigError, match="row 'b'"):
        configs_from_frame(df)


def test_stage_widths_rounding():
    assert stage_widths(1.0) == (64, 128, 256, 512)
    assert stage_widths(0.1) == (8, 16, 24, 48)
    assert stage_widths(0.75) == (48, 96, 192, 384)
    assert all(w % 8 == 0 and w >= 8 for x in (0.1, 0.25, 4.0) for w in stage_widths(x))


def test_build_model_runs_and_outputs_classes():
    import torch

    cfg = ResNetConfig("bottleneck", 50, 0.1, True, 32, 2, "fp32")
    with torch.no_grad():
        out = build_model(cfg)(torch.zeros(2, 3, 32, 32))
    assert out.shape == (2, 1000)


def test_stratified_sample_covers_strata(grid):
    s = stratified_sample(grid, 200, seed=3)
    assert len(s) == 200 and s["config_id"].is_unique
    assert set(s["block"]) == {"basic", "bottleneck"}
    assert set(s["precision"]) == set(PRECISIONS)
    assert strata(s).nunique() == strata(grid).nunique()  # every stratum present
    s2 = stratified_sample(grid, 200, seed=3)
    assert list(s.index) == list(s2.index)  # seeded
    assert list(stratified_sample(grid, 200, seed=4).index) != list(s.index)


def test_extended_sample_valid():
    df = extended_sample(500, seed=1)
    assert len(df) == 500
    assert df["resolution"].max() > 128
    configs_from_frame(df.head(50))
    assert np.all(df["config_id"].str.len() == 16)


def test_dense_sample_draws_a_far_larger_space():
    """``extended-dense``: every 2 px from 32 to 512 and every batch 1..1024; few repeats."""
    from carb_lib.families.space import dense_sample, validate_config_frame
    from carb_lib.screening import load_candidates

    df = dense_sample(20_000, seed=3)
    validate_config_frame(df, "dense sample")
    assert df["config_id"].nunique() >= 19_990  # 94.8M configs: ~2 repeats expected
    assert set(df["resolution"]) <= set(range(32, 513, 2)) and df["resolution"].nunique() == 241
    assert df["batch"].between(1, 1024).all() and df["batch"].nunique() > 1000
    ext = extended_sample(100_000, seed=3)
    assert 50_000 < ext["config_id"].nunique() <= 69_120  # the extended space: 69,120 configs
    loaded = load_candidates("extended-dense", n_extended=5_000, seed=4)
    assert loaded["config_id"].is_unique and len(loaded) >= 4_999
    pd.testing.assert_frame_equal(loaded.head(100), dense_sample(5_000, seed=4).head(100))
    with pytest.raises(ValueError, match="'extended-dense' nor an existing file"):
        load_candidates("extended-sparse")


def test_rows_without_family_are_the_default_family():
    from carb_lib.families import DEFAULT_FAMILY
    from carb_lib.families.space import add_config_ids, family_of, validate_config_frame

    row = dict(block="basic", depth=18, width=1.0, early_downsample=True, resolution=32,
               batch=1, precision="fp32")  # fmt: skip
    cfg = config_from_row(row)
    assert isinstance(cfg, ResNetConfig) and cfg.family == DEFAULT_FAMILY
    assert config_from_row({**row, "family": np.nan}) == cfg
    df = pd.DataFrame([row, {**row, "family": None}, {**row, "family": "resnet"}])
    assert family_of(df).tolist() == [DEFAULT_FAMILY] * 3
    assert family_of(df.drop(columns="family")).tolist() == [DEFAULT_FAMILY] * 3
    ids = add_config_ids(df)["config_id"]
    assert ids.tolist() == [cfg.config_id] * 3
    validate_config_frame(df)


def test_validate_config_frame_dispatches_per_family_and_names_the_position():
    from carb_lib.families.nb201 import nb201_grid
    from carb_lib.families.space import validate_config_frame

    mixed = pd.concat([paper_grid().head(3), nb201_grid(batches=(1,)).head(3)])  # index repeats
    validate_config_frame(mixed)
    bad = mixed.copy()
    bad["resolution"] = bad["resolution"].astype(object)
    bad.iloc[4, bad.columns.get_loc("resolution")] = 30
    with pytest.raises(ConfigError, match=r"^in: row 4: resolution=30 must be a positive "
                                          r"multiple of 4"):  # fmt: skip
        validate_config_frame(bad, "in")
    bad = mixed.assign(family=[*mixed["family"].iloc[:5], "vit"])
    with pytest.raises(ConfigError, match=r"^in: row 5: family='vit' is unknown"):
        validate_config_frame(bad, "in")
    with pytest.raises(ConfigError, match="in: no rows"):
        validate_config_frame(mixed.iloc[:0], "in")


def test_build_model_dispatches_on_the_family():
    from carb_lib.families.nb201 import NB201Config

    cfg = NB201Config("|none~0|+|none~0|none~1|+|none~0|none~1|nor_conv_1x1~2|")
    assert type(build_model(cfg)).__name__ == "TinyNetwork"
    assert type(build_model(ResNetConfig("basic", 8, 0.1, True, 32, 1, "fp32"))).__name__ == (
        "ResNet")
