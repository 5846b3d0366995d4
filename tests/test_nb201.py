"""The NAS-Bench-201 family: arch parsing, config ids, builder, exact analytic features."""

import random

import numpy as np
import pandas as pd
import pytest
import torch

from carb_lib.families import nb201
from carb_lib.families.nb201 import (
    NB201Config,
    all_archs,
    arch_from_ops,
    build_nb201,
    measured_nb201_features,
    nb201_grid,
    nb201_static_features,
    parse_arch,
)
from carb_lib.families.space import ConfigError

ALL_CONV3 = arch_from_ops(["nor_conv_3x3"] * 6)
ALL_NONE = arch_from_ops(["none"] * 6)
EXAMPLE = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"


def test_parse_arch_roundtrip_and_count():
    nodes = parse_arch(EXAMPLE)
    assert nodes[0] == (("nor_conv_3x3", 0),)
    assert nodes[2] == (("skip_connect", 0), ("nor_conv_3x3", 1), ("skip_connect", 2))
    archs = all_archs()
    assert len(archs) == 15_625 == len(set(archs))
    assert EXAMPLE in set(archs)
    assert arch_from_ops(nb201.arch_ops(EXAMPLE)) == EXAMPLE


@pytest.mark.parametrize(
    "bad, match",
    [
        ("|conv_5x5~0|+|none~0|none~1|+|none~0|none~1|none~2|", "unknown NB201 operation 'conv_5x5'"),
        ("|none~0|+|none~0|none~1|", "expected 3"),
        ("|none~0|+|none~0|+|none~0|none~1|none~2|", "node 2 needs 2 input"),
        ("|none~0|+|none~1|none~0|+|none~0|none~1|none~2|", "must come from node 0"),
        ("none~0|+|none~0|none~1|+|none~0|none~1|none~2|", "must look like '|op~i|...|'"),
        ("|none0|+|none~0|none~1|+|none~0|none~1|none~2|", "token 'none0'"),
        ("", "expected 3"),
    ],
)
def test_parse_arch_errors_name_the_problem(bad, match):
    with pytest.raises(ValueError, match=match.replace("|", r"\|").replace("(", r"\(")):
        parse_arch(bad)


def test_config_validation_and_id():
    c = NB201Config(EXAMPLE)
    assert (c.resolution, c.batch, c.precision, c.num_classes) == (32, 1, "fp32", 10)
    assert len(c.config_id) == 16 and int(c.config_id, 16) >= 0
    assert c.config_id == NB201Config(EXAMPLE, 32, 1, "fp32", 10).config_id
    assert c.config_id != NB201Config(EXAMPLE, batch=2).config_id
    assert c.config_id != NB201Config(EXAMPLE, precision="fp16").config_id
    with pytest.raises(ConfigError, match="unknown NB201 operation 'conv'"):
        NB201Config(EXAMPLE.replace("nor_conv_3x3", "conv", 1))
    with pytest.raises(ConfigError, match="multiple of 4"):
        NB201Config(EXAMPLE, resolution=30)
    with pytest.raises(ConfigError, match="precision='bf16'"):
        NB201Config(EXAMPLE, precision="bf16")
    with pytest.raises(ConfigError, match="batch must be >= 1"):
        NB201Config(EXAMPLE, batch=0)
    # the registry knows the family
    from carb_lib.families.space import add_config_ids, config_from_row

    row = {"family": "nb201", "arch": EXAMPLE, "resolution": 32, "batch": 4, "precision": "fp32",
           "num_classes": 10}
    assert config_from_row(row) == NB201Config(EXAMPLE, batch=4)
    ids = add_config_ids(pd.DataFrame([row]))["config_id"]
    assert ids.iloc[0] == NB201Config(EXAMPLE, batch=4).config_id


def test_builder_runs_and_matches_reference_structure():
    torch.set_num_threads(1)
    model = build_nb201(NB201Config(EXAMPLE))
    assert not model.training
    names = dict(model.named_parameters())
    # reference parameter names: stem, cells.<i>.layers.<k>.op..., lastact, classifier
    assert "stem.0.weight" in names and "classifier.weight" in names
    assert "cells.0.layers.0.op.1.weight" in names  # edge 1<-0 is nor_conv_3x3 (ReLU-Conv-BN)
    assert "cells.5.conv_a.op.1.weight" in names and "cells.5.downsample.1.weight" in names
    assert len(model.cells) == 17
    with torch.no_grad():
        out = model(torch.randn(2, 3, 32, 32))
    assert out.shape == (2, 10)
    # the all-none network outputs the classifier bias for any input (cells output zeros)
    m0 = build_nb201(NB201Config(ALL_NONE))
    with torch.no_grad():
        a, b = m0(torch.randn(1, 3, 32, 32)), m0(torch.randn(1, 3, 32, 32))
    assert torch.allclose(a, b)


def test_public_anchor_numbers():
    """NAS-Bench-201 CIFAR-10 costs (MFLOPs = multiply-accumulates, params in millions).

    All-conv3x3: 220.11 MFLOPs, 1.53 M params; all-none (and any conv-free cell): 7.78 MFLOPs,
    0.073 M params (the benchmark's range). Arch 1 ``EXAMPLE``: 113.95 MFLOPs, 0.802426 M params
    and arch 0: 15.64737 MFLOPs (NATS-Bench API output quoted in D-X-Y/NATS-Bench issue tracker (#18,
    #24, #36; their counter adds the classifier bias, +10 FLOPs).
    """
    archs = [ALL_CONV3, ALL_NONE, EXAMPLE,
             "|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|nor_conv_1x1~0|skip_connect~1|skip_connect~2|"]
    f = nb201_static_features(nb201_grid(archs))
    mac_m = (f["flops"] / 2 / 1e6).to_numpy()
    par_m = (f["params"] / 1e6).to_numpy()
    assert mac_m[0] == pytest.approx(220.11968) and par_m[0] == pytest.approx(1.531546)
    assert mac_m[1] == pytest.approx(7.78304) and par_m[1] == pytest.approx(0.073306)
    assert mac_m[2] + 1e-5 == pytest.approx(113.95137, abs=1e-6)
    assert par_m[2] == pytest.approx(0.802426, abs=1e-7)
    assert mac_m[3] + 1e-5 == pytest.approx(15.64737, abs=1e-6)


def test_op_count_features():
    f = nb201_static_features(nb201_grid([ALL_CONV3, ALL_NONE, EXAMPLE])).reset_index(drop=True)
    assert f.loc[0, "n_op_conv3x3"] == 6 and f.loc[0, "longest_conv_path"] == 3
    assert f.loc[1, "n_op_none"] == 6 and f.loc[1, "longest_conv_path"] == 0
    assert f.loc[2, ["n_op_conv3x3", "n_op_skip", "n_op_avgpool"]].tolist() == [3, 2, 1]
    # 0->1 conv, 1->3 conv: 2 convs on the longest path
    assert f.loc[2, "longest_conv_path"] == 2
    # a conv path that ends in a `none` edge does not count
    assert nb201.longest_conv_path(("nor_conv_3x3", "none", "none", "skip_connect", "none",
                                    "none")) == 0


def test_exact_features_on_45_archs(compare_features_in_processes):
    """Analytic == measured (FlopCounterMode, parameter count, forward hooks) on 45 archs (the
    five uniform cells, which put every operation on every edge, and 40 drawn)."""
    torch.set_num_threads(1)
    rng = random.Random(0)
    archs = [ALL_CONV3, ALL_NONE, arch_from_ops(["skip_connect"] * 6),
             arch_from_ops(["avg_pool_3x3"] * 6), arch_from_ops(["nor_conv_1x1"] * 6)]
    archs += rng.sample(all_archs(), 40)
    grid = nb201_grid(archs)
    # the family dispatch of compare_features: nb201_static_features against
    # measured_nb201_features, every column the latter measures (two processes when pytest
    # runs alone, the worker's own under xdist)
    cmp = compare_features_in_processes(grid)
    cols = set(measured_nb201_features(NB201Config(ALL_NONE)))
    assert cmp["config_id"].nunique() == len(grid) == 45
    assert set(cmp["column"]) == cols
    bad = cmp[~cmp["match"]]
    assert bad.empty, bad.head(5).to_string()
    # batch, precision and resolution scale exactly too
    for cfg in [NB201Config(EXAMPLE, batch=7, precision="fp16"),
                NB201Config(ALL_CONV3, resolution=16, batch=3, num_classes=100)]:
        m = measured_nb201_features(cfg)
        row = nb201_static_features(pd.DataFrame([cfg.to_dict()])).iloc[0]
        assert all(int(row[c]) == m[c] for c in cols), cfg


def test_static_features_frame_contract():
    g = nb201_grid(all_archs()[:50], batches=(1, 8))
    f = nb201_static_features(g)
    assert f.index.equals(g.index)
    from carb_lib.dataset.features import STATIC_FEATURE_COLUMNS, static_features

    assert set(STATIC_FEATURE_COLUMNS) <= set(f.columns)
    assert set(nb201.OP_COUNT_COLUMNS) <= set(f.columns)
    b1, b8 = f.iloc[:50], f.iloc[50:]
    assert np.array_equal(b8["flops"].to_numpy(), 8 * b1["flops"].to_numpy())
    assert np.array_equal(b8["params"].to_numpy(), b1["params"].to_numpy())
    assert (f["peak_act_bytes"] > 0).all()
    assert (f["peak_act_bytes"] < f["activation_bytes"] + 3 * 32 * 32 * 4 * 8).all()
    # dispatch through carb_lib.dataset.features
    pd.testing.assert_frame_equal(static_features(g), f)
    bad = g.copy()
    bad.loc[bad.index[3], "arch"] = "|x~0|+|none~0|none~1|+|none~0|none~1|none~2|"
    with pytest.raises(ConfigError, match=r"row 3: unknown NB201 operation 'x'"):
        nb201_static_features(bad)
