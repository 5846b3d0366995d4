"""Family ``module``: any user network from a factory and an input shape.

Features measured on the meta device (cached, scaled in batch) against measurements at the
config's own batch and precision and against hand counts; structure-hash config ids; the
``--module`` options of ``carb profile``, ``predict`` and ``screen``; bad input gets one line
naming the problem (and the user code's exception) and nothing is measured or written."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from carb_lib.app.cli import app
from carb_lib.dataset.features import compare_features, static_features
from carb_lib.families import ConfigError, family_names, get_family
from carb_lib.families import module as M

NETS = Path(__file__).parent / "fixtures" / "user_module" / "nets.py"
TINY = f"{NETS}:tiny"
runner = CliRunner()


def cli(*args: str):
    return runner.invoke(app, list(args))


def assert_one_line_error(res, *fragments: str) -> None:
    assert res.exit_code == 1, res.output
    out = res.output.strip()
    assert "Traceback" not in out and out.startswith("error:"), out
    assert len(out.splitlines()) == 1, out
    for f in fragments:
        assert f in out, (f, out)


# --------------------------------------------------------------------------- features
def test_registered_after_the_built_in_families():
    assert family_names()[-1] == "module"
    fam = get_family("module")
    assert fam.own_column_names == ("module", "module_kwargs", "input_shape")
    assert fam.matrix_columns == () and fam.predict_unseen
    assert not get_family("resnet").predict_unseen


def test_static_features_scale_exactly_to_the_measured_ones():
    """Per-sample features (batch 1, fp32, cached) scaled in batch and precision equal a
    measurement at the config's own batch and precision, on every exact column."""
    df = M.module_configs(TINY, "3,40,48", batches=(1, 3, 16), precisions=("fp32", "fp16"),
                          module_kwargs='{"blocks": 3, "width": 24}')
    assert len(df) == 6 and df["config_id"].is_unique
    cmp = compare_features(df)
    assert set(cmp["column"]) == set(M.EXACT_COLUMNS)
    assert cmp["match"].all(), cmp[~cmp["match"]].to_string()
    f = static_features(df).set_index(df["batch"].astype(str) + df["precision"])
    assert f.loc["16fp32", "flops"] == 16 * f.loc["1fp32", "flops"]
    assert f.loc["16fp16", "activation_bytes"] * 2 == f.loc["16fp32", "activation_bytes"]


def test_hand_counts_of_a_user_network():
    cfg = M.ModuleConfig(TINY, (3, 32, 32), 2, "fp32", '{"blocks": 3}')
    f = static_features(pd.DataFrame([cfg.to_dict()])).iloc[0]
    # stem + 3 x (dw, SE fc1, SE fc2, pw); BN: stem + 3; GELU + 3 x (ReLU6, SiLU, Sigmoid)
    assert (f["n_conv"], f["n_bn"], f["n_act"], f["n_fc"]) == (13, 4, 10, 1)
    assert (f["n_dwconv"], f["n_se"], f["n_add"], f["n_pool"]) == (3, 3, 3, 4)
    real = M.build_from_spec(TINY, '{"blocks": 3}')
    assert f["params"] == sum(p.numel() for p in real.parameters())
    assert f["max_channels"] == 16 and cfg.num_classes == 10 and cfg.resolution == 32
    # FLOPs on the real (CPU) model, by FlopCounterMode, for the whole batch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.no_grad(), FlopCounterMode(display=False) as fcm:
        real(torch.randn(2, 3, 32, 32))
    assert f["flops"] == fcm.get_total_flops()
    dw = 3 * 2 * (16 * 9 * 16 * 16) * 2  # 3 depthwise convs, 16 x 16 outputs, batch 2
    assert f["dw_flops_share"] == dw / f["flops"]
    # SE: Conv2d(16, 4, 1) and Conv2d(4, 16, 1) on a 1 x 1 map, 3 blocks, batch 2
    assert f["se_flops"] == 3 * 2 * (16 * 4 + 4 * 16) * 2


@pytest.mark.parametrize("family", ["resnet", "mobilenetv2", "efficientnet", "nb201"])
def test_flops_equal_flop_counter_mode_on_the_project_networks(family):
    """Measured as a user module, the project's networks (ResNet, MobileNetV2, EfficientNet,
    NB201) have FlopCounterMode's FLOPs and their families' analytic features."""
    from torch.utils.flop_counter import FlopCounterMode

    from carb_lib.families.efficientnet import EfficientNetConfig
    from carb_lib.families.mobilenetv2 import MobileNetV2Config
    from carb_lib.families.nb201 import NB201Config
    from carb_lib.families.resnet import ResNetConfig

    cfg = {"resnet": ResNetConfig("bottleneck", 50, 0.25, True, 64, 2, "fp32"),
           "mobilenetv2": MobileNetV2Config(6, 5, 0.5, 0.5, 64, 2, "fp32"),
           "efficientnet": EfficientNetConfig(0.5, 0.5, 64, 2, "fp32"),
           "nb201": NB201Config("|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|"
                                "skip_connect~0|nor_conv_3x3~1|none~2|", 32, 2)}[family]
    with torch.device("meta"):
        model = cfg.build_model()
    meas = M.measure_module(model, (3, cfg.resolution, cfg.resolution), 2)
    with torch.no_grad(), FlopCounterMode(display=False) as fcm:
        model(torch.empty(2, 3, cfg.resolution, cfg.resolution, device="meta"))
    assert meas["flops"] == fcm.get_total_flops()
    analytic = static_features(pd.DataFrame([cfg.to_dict()])).iloc[0]
    cols = ("flops", "params", "n_conv", "n_bn", "n_fc", "n_dwconv", "n_add", "n_se")
    for col in (*cols, "se_flops") if family != "nb201" else cols:
        assert meas[col] == analytic[col], col  # se_flops: traced from each gate to its pool
    if cfg.family in ("mobilenetv2", "efficientnet"):  # depthwise share, as the family has it
        assert meas["dw_flops_share"] == analytic["dw_flops_share"]


def test_importable_factory_with_kwargs_and_structure_ids():
    a = M.ModuleConfig("torch.nn:Conv2d", "3,32,32", 4, "fp32",
                       {"in_channels": 3, "out_channels": 8, "kernel_size": 3})
    f = static_features(pd.DataFrame([a.to_dict()])).iloc[0]
    assert f["flops"] == 2 * 8 * 3 * 9 * 30 * 30 * 4 and f["params"] == 8 * 3 * 9 + 8
    assert a.num_classes == 8 * 30 * 30
    # the same network from another factory has the same id; any change makes a new one
    b = M.ModuleConfig(f"{NETS}:conv", "3,32,32", 4, "fp32")
    assert a.config_id == b.config_id
    ids = {M.ModuleConfig(f"{NETS}:conv", "3,32,32", 4, "fp32", {"out_channels": 9}).config_id,
           M.ModuleConfig(f"{NETS}:conv", "3,32,33", 4, "fp32").config_id,
           M.ModuleConfig(f"{NETS}:conv", "3,32,32", 5, "fp32").config_id,
           M.ModuleConfig(f"{NETS}:conv", "3,32,32", 4, "fp16").config_id, a.config_id}
    assert len(ids) == 5
    row = a.to_dict()
    assert M.config_from_row(row) == a and get_family("module").config_ids(
        pd.DataFrame([row])) == [a.config_id]


def test_cache_per_module_and_shape_and_a_changed_file(tmp_path):
    M._describe.cache_clear()
    M.describe(TINY, "{}", "3,32,32")
    hits = M._describe.cache_info().hits
    times = []
    for _ in range(50):
        t0 = time.perf_counter()
        M.ModuleConfig(TINY, "3,32,32", 8, "fp16")
        times.append(time.perf_counter() - t0)
    assert M._describe.cache_info().hits == hits + 50 and M._describe.cache_info().misses == 1
    assert np.median(times) < 0.01  # target 1 ms (benchmarks/bench_module_family.py)
    # an edited factory file is measured again
    p = tmp_path / "net.py"
    p.write_text("from torch import nn\ndef net():\n    return nn.Conv2d(3, 4, 1)\n")
    a = M.ModuleConfig(f"{p}:net", "3,8,8", 1, "fp32")
    p.write_text("from torch import nn\ndef net():\n    return nn.Conv2d(3, 5, 1)\n")
    os.utime(p, ns=(time.time_ns(), time.time_ns() + 10**9))
    b = M.ModuleConfig(f"{p}:net", "3,8,8", 1, "fp32")
    assert a.config_id != b.config_id and (a.num_classes, b.num_classes) == (4 * 64, 5 * 64)


def test_derived_columns_must_agree():
    with pytest.raises(ConfigError, match=r"num_classes=7 does not match the module .*"
                                          r"num_classes 10"):
        M.ModuleConfig(TINY, "3,32,32", 1, "fp32", num_classes=7)
    with pytest.raises(ConfigError, match="resolution=64 does not match"):
        M.config_from_row({"module": TINY, "input_shape": "3,32,32", "batch": 1,
                           "precision": "fp32", "resolution": 64})


@pytest.mark.parametrize(
    "spec, shape, fragment",
    [
        ("no_such_pkg.nets:f", "3,32,32",
         "cannot import 'no_such_pkg.nets': ModuleNotFoundError: No module named 'no_such_pkg'"),
        ("missing/nets.py:f", "3,32,32", "FileNotFoundError"),
        (f"{NETS}:broken", "3,32,32", "the factory raised: ZeroDivisionError: width / 0"),
        (f"{NETS}:not_a_module", "3,32,32", "the factory returned int, not a torch.nn.Module"),
        (f"{NETS}:nope", "3,32,32", "has no attribute 'nope'"),
        (f"{NETS}:two_inputs", "3,32,32", "forward on input shape (1, 3, 32, 32) failed: "
                                          "TypeError"),
        (TINY, "5,32,32", "forward on input shape (1, 5, 32, 32) failed: RuntimeError"),
        (TINY, "3,32", "input_shape='3,32' has rank 2; it must be C,H,W"),
        (TINY, "3,32,32,1", "has rank 4"),
        (TINY, "3,0,32", "must be C,H,W (3 positive integers)"),
        ("tiny", "3,32,32", "module='tiny' must be 'package.module:function'"),
    ],
)
def test_bad_modules_are_one_line_naming_the_problem(spec, shape, fragment):
    with pytest.raises(ConfigError) as exc:
        M.ModuleConfig(spec, shape, 1, "fp32")
    assert fragment in str(exc.value) and "\n" not in str(exc.value)


def test_a_factory_file_with_a_syntax_error(tmp_path):
    p = tmp_path / "bad.py"
    p.write_text("def net(:\n")
    with pytest.raises(ConfigError, match=r"importing .*bad.py failed: SyntaxError"):
        M.describe(f"{p}:net", "{}", "3,8,8")


# --------------------------------------------------------------------------- command line
def test_profile_measures_a_user_module_and_merges(tmp_path):
    out = tmp_path / "parts"
    res = cli("profile", "--device", "cpu", "--module", TINY, "--input-shape", "3,32,32",
              "--batches", "2", "--module-kwargs", '{"blocks": 1}', "--platform", "test_module",
              "--threads", "1", "--out", str(out), "--no-progress", "--ref-every", "0",
              "--time-budget-s", "60")  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "'ok': 1" in res.output
    data = tmp_path / "test_module.parquet"
    assert cli("merge", str(out), str(data)).exit_code == 0
    from carb_lib.dataset.schema import read_dataset, validate

    df = read_dataset(data)
    validate(df)
    row = df.iloc[0]
    assert (row["family"], row["module"], row["input_shape"], row["batch"]) == (
        "module", TINY, "3,32,32", 2)
    assert row["status"] == "ok" and row["latency_ms"] > 0 and row["peak_mem_mib"] > 0
    assert row["config_id"] == M.ModuleConfig(TINY, "3,32,32", 2, "fp32",
                                              '{"blocks": 1}').config_id


def _module_rows(template: pd.DataFrame) -> pd.DataFrame:
    """SYNTHETIC ok rows of user modules (valid schema rows, invented costs that follow the
    static features): 4 widths x 3 depths x 4 batches of ``tiny`` at 32 px."""
    cfgs = pd.concat([M.module_configs(TINY, "3,32,32", (1, 4, 16, 64), ("fp32",),
                                       {"width": w, "blocks": b})
                      for w in (8, 16, 24, 32) for b in (1, 2, 3)], ignore_index=True)
    feats = static_features(cfgs)
    rows = pd.DataFrame([template.iloc[0].to_dict()] * len(cfgs))
    for c in cfgs.columns:
        rows[c] = cfgs[c].to_numpy()
    for c in feats.columns:
        rows[c] = feats[c].to_numpy()
    rng = np.random.default_rng(0)
    rows["latency_ms"] = (0.2 + feats["flops"].to_numpy() / 2e8) * rng.lognormal(0, 0.03, len(rows))
    rows["peak_mem_mib"] = 20 + feats["activation_bytes"].to_numpy() / 2**20
    return rows


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """Quick models fitted through `carb fit` on SYNTHETIC rows: ResNet/NB201 only, and with
    rows of user modules too."""
    sys.path.insert(0, str(Path(__file__).parent))
    from carb_synthetic import make_carb_synthetic

    d = tmp_path_factory.mktemp("fitted")
    data = make_carb_synthetic(300, seed=2, energy=False, telemetry=False,
                               platform="synthetic_cpu")  # fmt: skip
    data.to_parquet(d / "syn.parquet")
    res = cli("fit", "--data", str(d / "syn.parquet"), "--out", str(d / "m.joblib"), "--quick")
    assert res.exit_code == 0, res.output
    both = pd.concat([data, _module_rows(data[data["status"] == "ok"])], ignore_index=True)
    both.to_parquet(d / "syn_module.parquet")
    res = cli("fit", "--data", str(d / "syn_module.parquet"), "--out", str(d / "mm.joblib"),
              "--quick")  # fmt: skip
    assert res.exit_code == 0, res.output
    return d / "m.joblib", d / "mm.joblib"


def test_predict_and_screen_a_user_module(fitted, tmp_path):
    """A model fitted with rows of user modules predicts and screens another user module
    (other widths, an unseen input size) from the command line."""
    _, model = fitted
    out = tmp_path / "p.csv"
    res = cli("predict", "--model", str(model), "--module", TINY, "--input-shape", "3,40,40",
              "--module-kwargs", '{"width": 20}', "--batches", "1,8,64",
              "--precisions", "fp32,fp16", "--out", str(out))  # fmt: skip
    assert res.exit_code == 0, res.output
    pred = pd.read_csv(out)
    assert len(pred) == 6 and set(pred["family"]) == {"module"}
    assert np.isfinite(pred["latency_ms_pred"]).all()
    fp32 = pred[pred["precision"] == "fp32"]  # the invented cost law of _module_rows
    truth = 0.2 + fp32["flops"] / 2e8
    np.testing.assert_allclose(fp32["latency_ms_pred"], truth, rtol=0.3)
    assert fp32["latency_ms_pred"].is_monotonic_increasing  # batches 1, 8, 64
    short = tmp_path / "s" / "short.csv"
    res = cli("screen", "--model", str(model), "--module", TINY, "--input-shape", "3,32,32",
              "--batches", "1,2,4,8", "--budget", "latency_ms<=1000", "--k", "3",
              "--out", str(short))  # fmt: skip
    assert res.exit_code == 0, res.output
    assert set(pd.read_csv(short)["family"]) == {"module"}


def test_a_model_without_module_rows_predicts_a_user_module_zero_shot(fitted, tmp_path):
    """A family with ``predict_unseen`` (user modules) is predicted from its static features
    by a model that never saw it (no family columns of its own to miss)."""
    model, _ = fitted
    out = tmp_path / "p.csv"
    res = cli("predict", "--model", str(model), "--module", TINY, "--input-shape", "3,32,32",
              "--batches", "1,16", "--out", str(out))  # fmt: skip
    assert res.exit_code == 0, res.output
    pred = pd.read_csv(out)
    assert len(pred) == 2 and set(pred["family"]) == {"module"}
    assert np.isfinite(pred["latency_ms_pred"]).all() and (pred["latency_ms_pred"] > 0).all()
    assert pred["latency_ms_pred"].iloc[1] > pred["latency_ms_pred"].iloc[0]  # batch 16 > 1


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["--module", "no_such_pkg.nets:f", "--input-shape", "3,32,32"],
         ["cannot import 'no_such_pkg.nets'", "ModuleNotFoundError"]),
        (["--module", f"{NETS}:broken", "--input-shape", "3,32,32"],
         ["the factory raised: ZeroDivisionError: width / 0"]),
        (["--module", TINY, "--input-shape", "4,32,32"],
         ["forward on input shape (1, 4, 32, 32) failed", "RuntimeError"]),
        (["--module", TINY, "--input-shape", "32,32"], ["has rank 2; it must be C,H,W"]),
        (["--module", TINY], ["--module needs --input-shape C,H,W"]),
        (["--module", TINY, "--input-shape", "3,32,32", "--batches", "1,x"],
         ["--batches '1,x' must be comma-separated integers"]),
        (["--module", TINY, "--input-shape", "3,32,32", "--precisions", "int8"],
         ["precision='int8' is unknown"]),
        (["--configs", "{vit}"], ["row 0: family='vit' is unknown; registered families"]),
        (["--configs", "{vgg}"], ["row 1: depth=12 is unknown; valid values: [11, 13, 16, 19]"]),
    ],
)
@pytest.mark.parametrize("command", ["profile", "predict", "screen"])
def test_bad_input_is_one_line_and_nothing_is_measured_or_written(fitted, tmp_path, command,
                                                                  args, fragments):
    from carb_lib.families.vgg import VGGConfig

    good = VGGConfig(11, 0.125, True, 32, 1, "fp32").to_dict()
    files = {"{vit}": pd.DataFrame([{**good, "family": "vit"}]),
             "{vgg}": pd.DataFrame([good, {**good, "depth": 12}])}
    args = list(args)
    for i, a in enumerate(args):
        if a in files:
            args[i] = str(tmp_path / "configs.csv")
            files[a].to_csv(args[i], index=False)
    out = tmp_path / ("parts" if command == "profile" else "out.csv")
    if command == "profile":
        res = cli("profile", "--device", "cpu", "--out", str(out), "--no-progress", *args)
    elif command == "predict":
        res = cli("predict", "--model", str(fitted[1]), "--out", str(out), *args)
    else:
        args = ["--candidates" if a == "--configs" else a for a in args]
        res = cli("screen", "--model", str(fitted[1]), "--budget", "latency_ms<=50",
                  "--out", str(out), *args)  # fmt: skip
    assert_one_line_error(res, *fragments)
    assert not out.exists()


def test_the_readme_example_network():
    """``examples/my_cnn.py:my_cnn`` (README, *Your own network*): four depthwise-separable
    blocks, no residual add and no SE, its parameters those of the built network."""
    spec = str(Path(__file__).resolve().parents[1] / "examples" / "my_cnn.py") + ":my_cnn"
    cfg = M.ModuleConfig(spec, (3, 96, 96), 8, "fp16")
    f = static_features(pd.DataFrame([cfg.to_dict()])).iloc[0]
    assert (f["n_conv"], f["n_dwconv"], f["n_bn"], f["n_fc"]) == (9, 4, 9, 1)
    assert (f["n_add"], f["n_se"], f["se_flops"]) == (0, 0, 0)
    assert f["params"] == sum(p.numel() for p in M.build_from_spec(spec, "{}").parameters())
    assert f["param_bytes"] == 2 * f["params"] and cfg.num_classes == 1000


def test_a_shared_model_predicts_a_user_module(fitted, tmp_path):
    """A ``--feature-set shared`` model reads ``se_flops``, which user modules now carry (before
    a campaign of 2026-12-02 such a prediction stopped at a missing ``se_flops`` column)."""
    data = fitted[0].parent / "syn.parquet"
    model, out = tmp_path / "shared.joblib", tmp_path / "p.csv"
    res = cli("fit", "--data", str(data), "--out", str(model), "--quick",
              "--feature-set", "shared")  # fmt: skip
    assert res.exit_code == 0, res.output
    res = cli("predict", "--model", str(model), "--module", TINY, "--input-shape", "3,32,32",
              "--batches", "1,16", "--out", str(out))  # fmt: skip
    assert res.exit_code == 0, res.output
    pred = pd.read_csv(out)
    assert len(pred) == 2 and (pred["se_flops"] > 0).all()
    assert np.isfinite(pred["latency_ms_pred"]).all() and (pred["latency_ms_pred"] > 0).all()


@pytest.mark.parametrize("linear", [False, True])
def test_se_flops_of_functional_and_linear_squeeze_excitation(linear):
    """The SE branch is traced through functional calls (``x.mean``, ``torch.relu``,
    ``torch.sigmoid``) and reshapes; neither the 3x3 conv before it nor the classifier after
    it counts."""
    cfg = M.ModuleConfig(f"{NETS}:functional_se", (3, 32, 32), 4, "fp32",
                         json.dumps({"linear": linear}))
    f = static_features(pd.DataFrame([cfg.to_dict()])).iloc[0]
    assert f["n_se"] == 1
    assert f["se_flops"] == 4 * 2 * (16 * 4 + 4 * 16)  # reduce + expand, batch 4
