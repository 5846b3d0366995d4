"""The family protocol and its explicit registry (carb_lib.families)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from carb_lib import families
from carb_lib.core.vocab import COMMON_CONFIG_COLUMNS, EXTRA_STATIC_FEATURES, STATIC_FEATURES
from carb_lib.families import (
    DEFAULT_FAMILY,
    ConfigError,
    Family,
    all_config_columns,
    family_indicators,
    family_names,
    get_family,
    register_family,
)
from carb_lib.families.efficientnet import EfficientNetConfig
from carb_lib.families.mobilenetv2 import MobileNetV2Config
from carb_lib.families.module import ModuleConfig
from carb_lib.families.nb201 import NB201Config, arch_from_ops
from carb_lib.families.resnet import ResNetConfig
from carb_lib.families.vgg import VGGConfig

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
CONFIGS = {
    "resnet": ResNetConfig("bottleneck", 50, 0.25, False, 48, 3, "fp16"),
    "nb201": NB201Config(EXAMPLE, resolution=16, batch=2, precision="fp32", num_classes=100),
    "mobilenetv2": MobileNetV2Config(4, 5, 0.35, 0.5, 48, 3, "fp16", num_classes=10),
    "vgg": VGGConfig(13, 0.125, True, 32, 2, "fp32"),
    "efficientnet": EfficientNetConfig(0.5, 0.5, 40, 2, "fp16", num_classes=7),
    "module": ModuleConfig(f"{ROOT}/tests/fixtures/user_module/nets.py:tiny", "3,24,20", 3,
                           "fp16", '{"blocks": 1}'),
}
NEW = ("mobilenetv2", "vgg", "efficientnet")


# --------------------------------------------------------------------------- registry
def test_registry_lists_the_built_in_families_in_order():
    assert family_names() == ("resnet", "nb201", "mobilenetv2", "vgg", "efficientnet",
                              "module")
    assert DEFAULT_FAMILY == "resnet" and DEFAULT_FAMILY in family_names()
    for name in family_names():
        fam = get_family(name)
        assert isinstance(fam, Family) and fam.name == name
        assert families.FAMILIES[name] is fam


def test_get_family_unknown_lists_the_registered_ones():
    with pytest.raises(ConfigError, match=r"family='vit' is unknown; registered families: "
                                          r"\['efficientnet', 'mobilenetv2', 'module', "
                                          r"'nb201', 'resnet', 'vgg'\]"):  # fmt: skip
        get_family("vit")
    with pytest.raises(ConfigError, match="family=nan is unknown"):
        get_family(float("nan"))


def test_register_family_refuses_silent_replacement():
    resnet = get_family("resnet")
    assert register_family(resnet) is resnet  # the same object again: a no-op

    class Other(type(resnet)):
        pass

    other = Other()
    with pytest.raises(ValueError, match="'resnet' is registered already"):
        register_family(other)
    assert get_family("resnet") is resnet
    try:
        register_family(other, replace=True)
        assert get_family("resnet") is other
    finally:
        register_family(resnet, replace=True)
    assert get_family("resnet") is resnet
    with pytest.raises(TypeError, match="needs a Family instance"):
        register_family("resnet")


def test_all_config_columns_is_the_union_in_registry_order():
    assert all_config_columns() == (
        "family", "block", "depth", "width", "early_downsample", "arch", "expansion", "kernel",
        "depth_mult", "batch_norm", "module", "module_kwargs", "input_shape", "resolution",
        "batch", "precision", "num_classes",
    )  # fmt: skip


# --------------------------------------------------------------------------- protocol
@pytest.mark.parametrize("name", list(CONFIGS))
def test_family_implements_the_protocol(name):
    fam = get_family(name)
    cfg = CONFIGS[name]
    assert isinstance(cfg, fam.config_type) and cfg.family == name
    assert fam.config_columns == ("family", *fam.own_column_names, *COMMON_CONFIG_COLUMNS[1:])
    assert fam.columns == fam.config_columns
    assert set(fam.required_columns) <= set(fam.config_columns)
    row = cfg.to_dict()
    assert tuple(row) == fam.config_columns
    assert fam.from_row(row) == cfg and fam.validate_config(row) == cfg
    frame = pd.DataFrame([row, row])
    assert fam.config_ids(frame) == [cfg.config_id, cfg.config_id]
    feats = fam.static_features(frame)
    assert tuple(feats.columns) == fam.feature_columns
    assert tuple(feats.columns[: len(STATIC_FEATURES)]) == STATIC_FEATURES
    # every family fills the extras (a user module's SE FLOPs traced since 2026-12-02)
    extras = set(EXTRA_STATIC_FEATURES)
    assert extras <= set(feats.columns)
    measured = fam.measured_features(cfg)
    assert set(measured) >= {"flops", "params", "activation_bytes", *extras}
    assert measured == {k: feats.iloc[0][k].item() for k in measured}
    assert measured["flops"] > 0 and measured["params"] > 0
    enc = fam.encode_config(frame)
    assert tuple(enc.columns) == fam.matrix_columns and enc.index.equals(frame.index)
    assert (enc.dtypes == np.float64).all()


def test_family_attributes_are_plain_functions():
    """The registered families carry their functions (a former bug: after
    ``import carb_lib.families.space`` alone, ``static_features`` was None)."""
    for name in family_names():
        fam = get_family(name)
        for attr in ("from_row", "config_ids", "build_model", "static_features",
                     "measured_features", "encode_config"):  # fmt: skip
            fn = getattr(fam, attr)
            assert callable(fn) and fn.__module__ == f"carb_lib.families.{name}", (name, attr)


@pytest.mark.parametrize(
    "name, change, fragment",
    [
        ("resnet", {"depth": 51}, "row 1: depth=51 is not valid for block 'bottleneck'; valid "
                                  "depths: [50, 101, 152, 200]"),
        ("resnet", {"block": "dense"}, "row 1: block='dense' is unknown; valid values: "
                                       "['basic', 'bottleneck']"),
        ("resnet", {"precision": "int8"}, "row 1: precision='int8' is unknown; valid values: "
                                          "['fp32', 'fp16']"),
        ("nb201", {"resolution": 30}, "row 1: resolution=30 must be a positive multiple of 4"),
        ("nb201", {"arch": "|x~0|+|none~0|none~1|+|none~0|none~1|none~2|"},
         "row 1: unknown NB201 operation 'x'"),
        ("vgg", {"depth": 12}, "row 1: depth=12 is unknown; valid values: [11, 13, 16, 19]"),
        ("mobilenetv2", {"kernel": 7}, "row 1: kernel=7 is unknown; valid values: [3, 5]"),
        ("efficientnet", {"resolution": 8}, "row 1: resolution=8 is outside the valid range "
                                            "32..1024"),
    ],
)  # fmt: skip
def test_validate_frame_names_row_column_value_and_valid_values(name, change, fragment):
    fam = get_family(name)
    df = pd.DataFrame([CONFIGS[name].to_dict()] * 3)
    for k, v in change.items():
        df[k] = df[k].astype(object)
        df.loc[1, k] = v
    with pytest.raises(ConfigError) as exc:
        fam.validate_frame(df, "configs")
    assert str(exc.value) == f"configs: {fragment}" or str(exc.value).startswith(
        f"configs: {fragment}")
    fam.validate_frame(pd.DataFrame([CONFIGS[name].to_dict()] * 3))


def test_validate_frame_names_missing_columns():
    df = pd.DataFrame([CONFIGS["resnet"].to_dict()]).drop(columns=["width", "batch"])
    with pytest.raises(ConfigError, match=r"in: row 0: resnet rows need column\(s\) "
                                          r"\['width', 'batch'\]"):  # fmt: skip
        get_family("resnet").validate_frame(df, "in")


# --------------------------------------------------------------------------- learners' encoding
def _mixed() -> pd.DataFrame:
    rows = [
        {"family": "resnet", "block": "basic", "depth": 18, "width": 0.5,
         "early_downsample": True},
        {"family": "nb201", "arch": arch_from_ops(["none", "none", "nor_conv_3x3",
                                                   "skip_connect", "nor_conv_3x3", "none"])},
        {"family": "resnet", "block": "bottleneck", "depth": 101, "width": 4.0,
         "early_downsample": "false"},
        {"family": "nb201", "arch": EXAMPLE},
        {"family": "resnet", "block": "basic", "depth": 10, "width": 0.1,
         "early_downsample": "1"},
    ]  # fmt: skip
    return pd.DataFrame(rows, index=[10, 11, 12, 13, 14])


def test_resnet_encoding_values():
    enc = get_family("resnet").encode_config(_mixed())
    assert list(enc.columns) == ["block_bottleneck", "depth", "width", "early_downsample"]
    expected = [
        [0.0, 18.0, 0.5, 1.0],
        [-1.0, -1.0, -1.0, -1.0],  # not applicable to nb201 rows
        [1.0, 101.0, 4.0, 0.0],
        [-1.0, -1.0, -1.0, -1.0],
        [0.0, 10.0, 0.1, 1.0],
    ]
    np.testing.assert_array_equal(enc.to_numpy(), expected)
    assert list(enc.index) == [10, 11, 12, 13, 14]
    assert get_family("resnet").not_applicable == -1.0


def test_nb201_encoding_values():
    enc = get_family("nb201").encode_config(_mixed())
    assert list(enc.columns) == [
        "nb201_n_none", "nb201_n_skip_connect", "nb201_n_nor_conv_1x1", "nb201_n_nor_conv_3x3",
        "nb201_n_avg_pool_3x3",
    ]  # fmt: skip
    expected = [
        [0, 0, 0, 0, 0],  # not applicable (resnet rows): no operation
        [3, 1, 0, 2, 0],
        [0, 0, 0, 0, 0],
        [0, 2, 0, 3, 1],
        [0, 0, 0, 0, 0],
    ]
    np.testing.assert_array_equal(enc.to_numpy(), np.asarray(expected, dtype=float))
    assert get_family("nb201").not_applicable == 0.0


def test_encoding_rows_argument_and_indicators():
    df = _mixed()
    only_first = np.array([True, False, False, False, False])
    enc = get_family("resnet").encode_config(df, rows=only_first)
    assert enc["depth"].tolist() == [18.0, -1.0, -1.0, -1.0, -1.0]
    ind = family_indicators(df)
    assert list(ind.columns) == [
        "family_nb201", "family_mobilenetv2", "family_vgg", "family_efficientnet",
        "family_module"]
    assert ind["family_nb201"].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]
    assert ind["family_vgg"].tolist() == [0.0] * 5
    with pytest.raises(ValueError, match="unknown NB201 operation 'bad'"):
        get_family("nb201").encode_config(df.assign(arch=df["arch"].where(
            df["family"] != "nb201", "|bad~0|+|none~0|none~1|+|none~0|none~1|none~2|")))


def test_new_family_encodings_values():
    rows = [CONFIGS[n].to_dict() for n in ("resnet", "vgg", "mobilenetv2", "efficientnet")]
    df = pd.DataFrame(rows, index=[5, 6, 7, 8])
    df.loc[6, "batch_norm"] = "false"  # a string flag, as read from a CSV
    expected = {
        "vgg": [[-1, -1, -1], [13, 0.125, 0], [-1, -1, -1], [-1, -1, -1]],
        "mobilenetv2": [[-1] * 4, [-1] * 4, [4, 5, 0.35, 0.5], [-1] * 4],
        "efficientnet": [[-1, -1], [-1, -1], [-1, -1], [0.5, 0.5]],
    }
    for name, values in expected.items():
        fam = get_family(name)
        enc = fam.encode_config(df)
        assert list(enc.columns) == [f"{name}_{c}" for c in fam.own_column_names]
        assert list(enc.index) == [5, 6, 7, 8] and fam.not_applicable == -1.0
        np.testing.assert_array_equal(enc.to_numpy(), np.asarray(values, dtype=float))
    # the matrix columns of all families never collide (resnet's depth/width vs vgg's)
    cols = [c for n in family_names() for c in get_family(n).matrix_columns]
    assert len(cols) == len(set(cols))


# --------------------------------------------------------------------------- no family branches
_MODULES = sorted(
    str(p.relative_to(ROOT / "carb_lib"))
    for p in (ROOT / "carb_lib").rglob("*.py")
    if "families" not in p.relative_to(ROOT / "carb_lib").parts
)


def _family_literals(path: Path) -> list[str]:
    """Family names used as values that steer code: compared, passed, keyed, assigned or
    used as defaults (data inside a dict literal's values and docstrings are fine)."""
    names = set(family_names())
    tree = ast.parse(path.read_text())
    hits = []

    def is_name(node):
        return isinstance(node, ast.Constant) and node.value in names

    for node in ast.walk(tree):
        found = []
        if isinstance(node, ast.Compare):
            found = [n for n in [node.left, *node.comparators] if is_name(n)]
        elif isinstance(node, ast.Call):
            found = [a for a in [*node.args, *(k.value for k in node.keywords)] if is_name(a)]
        elif isinstance(node, ast.Dict):
            found = [k for k in node.keys if k is not None and is_name(k)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            found = [node.value] if is_name(node.value) else []
        elif isinstance(node, ast.arguments):
            found = [d for d in [*node.defaults, *node.kw_defaults] if d is not None and is_name(d)]
        hits += [f"{path.name}:{n.lineno}: {n.value!r}" for n in found]
    return hits


@pytest.mark.parametrize("module", _MODULES)
def test_no_module_outside_families_branches_on_a_family_name(module):
    assert _family_literals(ROOT / "carb_lib" / module) == []


def test_the_scan_finds_a_branch(tmp_path):
    p = tmp_path / "m.py"
    p.write_text('def f(df, fam="resnet"):\n    return df["family"] == "nb201"\n')
    assert _family_literals(p) == ["m.py:1: 'resnet'", "m.py:2: 'nb201'"]
