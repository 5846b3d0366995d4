import numpy as np
import pandas as pd
import pytest

from carb_lib.core.vocab import ALLOC_FEATURES, EXTRA_STATIC_FEATURES
from carb_lib.dataset.features import (
    EXACT_COLUMNS,
    STATIC_FEATURE_COLUMNS,
    compare_features,
    measured_features,
    static_features,
)
from carb_lib.families.space import (
    ConfigError,
    ResNetConfig,
    paper_grid,
    strata,
    stratified_sample,
)


def _frame(*configs):
    return pd.DataFrame([c.to_dict() for c in configs])


def test_resnet50_anchor():
    """Standard ResNet-50 at 224x224, batch 1: 8.178 GFLOPs (4.1 GMAC), 25,557,032 parameters."""
    cfg = ResNetConfig("bottleneck", 50, 1.0, True, 224, 1, "fp32")
    f = static_features(_frame(cfg)).iloc[0]
    assert round(f["flops"] / 1e9, 3) == 8.178
    assert f["flops"] == measured_features(cfg)["flops"]  # FlopCounterMode on the built model
    assert f["params"] == 25_557_032  # torchvision resnet50's parameter count
    assert f["n_conv"] == 53 and f["n_bn"] == 53 and f["n_fc"] == 1
    assert f["max_channels"] == 2048
    # extras: stem max-pool + global pool, one residual add per block (3+4+6+3), no depthwise
    assert (f["n_pool"], f["n_add"], f["n_dwconv"], f["n_se"]) == (2, 16, 0, 0)
    assert f["dw_flops_share"] == 0.0 and f["se_flops"] == 0


def test_compare_features_dispatches_to_every_family():
    """One mixed frame of every registered family: each family's own ``measured_features``
    measures (extras included, ``dw_flops_share`` a float) and every value agrees exactly."""
    from pathlib import Path

    from carb_lib.families import efficientnet, family_names, mobilenetv2, vgg
    from carb_lib.families.module import ModuleConfig
    from carb_lib.families.nb201 import nb201_grid

    nets = Path(__file__).parent / "fixtures" / "user_module" / "nets.py"
    user = ModuleConfig(f"{nets}:tiny", "3,32,32", 3, "fp16").to_dict()
    parts = [paper_grid().iloc[[5]], nb201_grid(batches=(2,)).iloc[[7]],
             mobilenetv2.sample_configs(1, seed=3).assign(resolution=32),
             vgg.sample_configs(1, seed=3).assign(resolution=32, width=0.125),
             efficientnet.sample_configs(1, seed=3).assign(resolution=32, width=0.5),
             pd.DataFrame([user])]
    mixed = pd.concat(parts, ignore_index=True)
    mixed = mixed.drop(columns="config_id")
    cmp = compare_features(mixed)
    assert cmp.groupby("config_id").ngroups == 6 == len(family_names())
    assert cmp["match"].all(), cmp[~cmp["match"]].to_string()
    for col in ("flops", *EXTRA_STATIC_FEATURES):  # a user module's SE FLOPs too (traced)
        assert (cmp["column"] == col).sum() == 6, col
    se = cmp[(cmp["column"] == "se_flops") & (cmp["config_id"] == 5)]["measured"].tolist()
    assert se == [2 * 2 * (16 * 4 + 4 * 16) * 3]  # tiny: 2 SE blocks of 16 channels, batch 3
    share = cmp.loc[cmp["column"] == "dw_flops_share", "measured"].tolist()
    assert share[:2] == [0, 0] and 0 < share[2] < 1 and 0 < share[5] < 1  # depthwise convs
    # the comparison is real: the measured values are those of each family's own function
    from carb_lib.families.space import config_from_row

    for i in (2, 5):
        meas = measured_features(config_from_row(mixed.iloc[i].to_dict()))
        got = cmp[cmp["config_id"] == i].set_index("column")["measured"]
        assert {k: got[k] for k in meas} == meas


def test_columns_and_scaling_with_batch_and_precision():
    a = ResNetConfig("basic", 18, 0.5, False, 64, 4, "fp32")
    b = ResNetConfig("basic", 18, 0.5, False, 64, 8, "fp16")
    f = static_features(_frame(a, b))
    assert list(f.columns) == [*STATIC_FEATURE_COLUMNS, *EXTRA_STATIC_FEATURES,
                               *ALLOC_FEATURES.values()]
    assert f.loc[1, "flops"] == 2 * f.loc[0, "flops"]
    assert f.loc[1, "params"] == f.loc[0, "params"]
    assert f.loc[1, "param_bytes"] * 2 == f.loc[0, "param_bytes"]
    assert f.loc[1, "activation_bytes"] == f.loc[0, "activation_bytes"]  # 2x batch, 1/2 bytes
    ai = f["flops"] / (f["param_bytes"] + f["activation_bytes"])
    np.testing.assert_allclose(f["arith_intensity_flop_per_byte"], ai)
    assert (f["peak_act_bytes"] < f["activation_bytes"]).all()


def _exact_sample() -> pd.DataFrame:
    grid = paper_grid()
    # two configs of each of the 32 strata (block, depth tier, batch tier, precision); the
    # exhaustive check over the whole grid is `make check-features`
    sample = stratified_sample(grid, 2 * strata(grid).nunique(), seed=11)
    assert strata(sample).value_counts().min() == 2
    for col in ("resolution", "width"):  # every resolution and width of the grid
        assert set(sample[col]) == set(grid[col]), col
    ends = grid.resolution.isin([grid.resolution.min(), grid.resolution.max()])
    extremes = grid[
        ((grid.depth == 200) & (grid.width == 4.0) & (grid.batch == 1) & ends)
        | ((grid.width == 0.1) & (grid.batch == 256) & (grid.depth == 8) & ends)
        | ((grid.resolution == 32) & grid.early_downsample & (grid.batch == 2)
           & (grid.depth == 34) & (grid.width == 1.0))
        | ((grid.resolution == 128) & ~grid.early_downsample & (grid.batch == 1)
           & (grid.depth == 152) & (grid.width == 0.25))
    ]
    out = pd.concat([sample, extremes]).drop_duplicates("config_id")
    assert out["early_downsample"].nunique() == 2 and (out["width"] == 0.1).any()
    return out


@pytest.mark.slow
def test_analytic_equals_measured_on_stratified_sample(compare_features_in_processes):
    cmp = compare_features_in_processes(_exact_sample())
    assert cmp["config_id"].nunique() >= 64
    assert set(cmp["column"]) >= {*EXACT_COLUMNS, *EXTRA_STATIC_FEATURES}
    bad = cmp[~cmp["match"]]
    assert bad.empty, bad.head(10).to_string()


def test_measured_features_detects_a_difference():
    """The comparison is real: a different config gives different measured FLOPs."""
    a = measured_features(ResNetConfig("basic", 10, 0.25, True, 32, 1, "fp32"))
    b = measured_features(ResNetConfig("basic", 10, 0.25, True, 48, 1, "fp32"))
    assert b["flops"] > a["flops"] and b["params"] == a["params"]


def test_bad_rows_are_named():
    df = _frame(ResNetConfig("basic", 18, 1.0, True, 32, 1, "fp32"))
    df.loc[0, "precision"] = "fp8"
    with pytest.raises(ConfigError, match="precision='fp8'"):
        static_features(df)
    df = _frame(ResNetConfig("basic", 18, 1.0, True, 32, 1, "fp32"))
    df.loc[0, "depth"] = 50
    with pytest.raises(ConfigError, match="row 0"):
        static_features(df)
    with pytest.raises(ConfigError, match="missing column"):
        static_features(df.drop(columns="width"))


def test_mixed_families_dispatch_and_keep_the_index():
    from carb_lib.families.nb201 import OP_COUNT_COLUMNS, nb201_grid, nb201_static_features

    res = paper_grid().iloc[[5, 900, 17_000]]
    nb = nb201_grid(batches=(2,)).iloc[:2]
    mixed = pd.concat([res.iloc[:1], nb.iloc[:1], res.iloc[1:], nb.iloc[1:]])
    mixed.index = [7, 3, 9, 1, 4]
    f = static_features(mixed)
    assert list(f.index) == [7, 3, 9, 1, 4]
    res_f = static_features(res).set_axis([7, 9, 1])
    pd.testing.assert_frame_equal(f.loc[[7, 9, 1], list(res_f.columns)], res_f,
                                  check_dtype=False)
    nb_f = nb201_static_features(nb).set_axis([3, 4])
    assert set(f.columns) == set(nb_f.columns)  # nb201 has every resnet column and its ops
    pd.testing.assert_frame_equal(f.loc[[3, 4], list(nb_f.columns)], nb_f, check_dtype=False)
    assert f.loc[[7, 9, 1], list(OP_COUNT_COLUMNS)].isna().all().all()


def test_unknown_family_is_named():
    df = _frame(ResNetConfig("basic", 18, 1.0, True, 32, 1, "fp32"),
                ResNetConfig("basic", 18, 1.0, True, 32, 2, "fp32"))
    df.loc[1, "family"] = "vit"
    with pytest.raises(ConfigError, match=r"row 1: family='vit' is unknown"):
        static_features(df)


def test_fill_static_features_fills_absent_and_missing_columns_only():
    from carb_lib.dataset.features import fill_static_features, static_features

    grid = paper_grid().head(4)
    full = static_features(grid)
    df = grid.assign(flops=[1.0, np.nan, 3.0, 4.0], params=7)  # 'n_conv' absent
    out = fill_static_features(df, ["flops", "params", "n_conv"])
    np.testing.assert_array_equal(out["flops"], full["flops"])  # a NaN: recomputed
    assert (out["params"] == 7).all()  # complete: kept as stored
    np.testing.assert_array_equal(out["n_conv"], full["n_conv"])  # absent: added
    assert "n_conv" not in df.columns and np.isnan(df["flops"].iloc[1])  # input untouched
    assert fill_static_features(df, ["params"]) is df  # nothing to do: no copy
