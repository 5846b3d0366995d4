"""The torchvision model zoo as candidates (``carb_lib.families.zoo``, ``carb zoo``).

torchvision is imported through its one place (``carb_lib.families._torchvision``), which
survives a torchvision whose C++ operators do not match torch (simulated here); every
classification CNN of the zoo builds on the ``meta`` device (RegNet through the fallback for
factories that compute with tensors) and one of each kind is described there; names are
checked (nearest names, detection and transformers refused); features are cached on disk;
predictions and screening run from the command line with the published ImageNet accuracy as a
``max:`` objective."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from carb_lib.families import ConfigError
from carb_lib.families import _torchvision as TV

try:
    TV.import_torchvision()
except TV.TorchvisionUnavailable as exc:  # the zoo extra is not installed
    pytest.skip(f"torchvision unavailable: {exc}", allow_module_level=True)

from carb_lib.app.cli import app  # noqa: E402
from carb_lib.families import zoo  # noqa: E402
from carb_lib.families.module import build_from_spec, describe  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
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


# --------------------------------------------------------------------------- importing
def test_import_survives_torchvision_operators_that_do_not_match_torch():
    """In a fresh process whose torch refuses torchvision's operator registrations (as beside a
    mismatched torch build), torchvision is imported without them and its models build."""
    code = textwrap.dedent("""
        import torch.library
        real = torch.library.register_fake
        def refuse(op, *a, **k):
            if str(op).startswith("torchvision::"):
                raise RuntimeError(f"operator {op} does not exist")
            return real(op, *a, **k)
        torch.library.register_fake = refuse
        from carb_lib.families._torchvision import import_torchvision, operators_skipped
        tv = import_torchvision()
        m = tv.models.resnet18()
        print("OK", operators_skipped(), sum(p.numel() for p in m.parameters()))
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                         timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["OK", "True", "11689512"], res.stdout


def test_a_missing_or_broken_torchvision_is_one_clear_line():
    def missing(name):
        raise ModuleNotFoundError("No module named 'torchvision'", name="torchvision")

    def broken(name):
        raise RuntimeError("undefined symbol: _ZN3c10 something\nsecond line")

    with pytest.raises(TV.TorchvisionUnavailable, match=r"not installed: pip install "
                       r"--no-deps 'torchvision==0\.\d+\.\*'"):
        TV.import_torchvision(_import=missing)
    with pytest.raises(TV.TorchvisionUnavailable) as err:
        TV.import_torchvision(_import=broken)
    msg = str(err.value)
    assert "\n" not in msg and "undefined symbol" in msg and "pip install" in msg


def test_the_cli_reports_an_unusable_torchvision_in_one_line(monkeypatch):
    def unavailable():
        raise TV.TorchvisionUnavailable("torchvision is not installed: pip install ...")

    monkeypatch.setattr(zoo, "_tv", unavailable)
    assert_one_line_error(cli("zoo", "list"), "torchvision is not installed")


# --------------------------------------------------------------------------- the zoo
def test_the_zoo_lists_classification_cnns_only():
    names = zoo.zoo_names()
    assert len(names) >= 60
    assert {"convnext_tiny", "regnet_y_400mf", "resnet50", "mobilenet_v3_small",
            "squeezenet1_0", "alexnet", "inception_v3"} <= set(names)
    assert not [n for n in names if n.startswith(("vit_", "swin_", "maxvit"))]
    assert "fasterrcnn_resnet50_fpn" not in names and "deeplabv3_resnet50" not in names
    assert all(zoo.network_kind(n) in zoo.KINDS for n in names)
    assert set(zoo.CAMPAIGN_NETWORKS) <= set(names) and len(zoo.CAMPAIGN_NETWORKS) >= 40


def test_published_metadata_without_downloading():
    t = zoo.zoo_table(["resnet50", "mobilenet_v2"]).set_index("network")
    assert t.loc["resnet50", zoo.ACC1] == pytest.approx(80.858)
    assert t.loc["mobilenet_v2", "published_params"] == 3504872
    assert t.loc["resnet50", "network_kind"] == "resnet"


def test_every_zoo_network_builds_on_meta_with_its_published_parameter_count():
    """Every classification CNN builds on the ``meta`` device (RegNet included: its factory
    computes with tensors and falls back to a CPU build with parameters on meta) with the
    parameter count its published weights have."""
    published = zoo.zoo_table().set_index("network")["published_params"]
    for name in zoo.zoo_names():
        m = build_from_spec(zoo.FACTORY.format(name), zoo.network_kwargs(name), meta=True)
        assert sum(p.numel() for p in m.parameters()) == published[name], name


@pytest.mark.slow
def test_a_network_of_every_kind_is_described_on_meta():
    """One network of each kind (the first of :func:`zoo.zoo_names`) is measured at 96 px:
    1000 classes, FLOPs, convolutions, and the published parameter count. (Every measured
    network is described by ``make reproduce``, notebook 07.)"""
    published = zoo.zoo_table().set_index("network")["published_params"]
    first = {}
    for name in zoo.zoo_names():
        first.setdefault(zoo.network_kind(name), name)
    assert len(first) >= 10  # the kinds, not one network
    for name in first.values():
        info = describe(zoo.FACTORY.format(name), zoo.network_kwargs(name), (3, 96, 96))
        assert info.num_classes == 1000, name
        assert info.units["flops"] > 0 and info.units["n_conv"] > 0, name
        assert info.units["params"] == published[name], name


def test_regnet_builds_with_every_parameter_on_meta():
    m = build_from_spec("torchvision.models:regnet_y_400mf", meta=True)
    assert {t.device.type for t in (*m.parameters(), *m.buffers())} == {"meta"}


@pytest.mark.parametrize("names, fragments", [
    ("resnet5", ["'resnet5' is not in the zoo", "nearest: resnet50"]),
    ("mobilnet_v2", ["nearest: mobilenet_v2"]),
    ("resnet18,fasterrcnn_resnet50_fpn", ["'fasterrcnn_resnet50_fpn' is a detection model"]),
    ("deeplabv3_resnet50", ["is a segmentation model"]),
    ("vit_b_16", ["'vit_b_16' is a vision transformer"]),
])
def test_bad_names_are_one_line_naming_them(names, fragments, tmp_path):
    with pytest.raises(ConfigError) as err:
        zoo.resolve_names(names)
    assert all(f in str(err.value) for f in fragments), str(err.value)
    res = cli("zoo", "predict", "--model", str(tmp_path / "none.joblib"), "--networks", names)
    assert_one_line_error(res, *fragments)  # before any model is loaded


def test_names_in_order_without_duplicates():
    assert zoo.resolve_names(" resnet18,alexnet,resnet18") == ["resnet18", "alexnet"]
    assert zoo.resolve_names("all") == zoo.zoo_names()


def test_a_network_failing_at_a_shape_is_named_and_the_rest_goes_on(tmp_path):
    c = zoo.zoo_candidates(["inception_v3", "resnet18"], (1, 2), ("fp32",), (64,),
                           cache_dir=tmp_path)
    assert list(c.table["network"]) == ["resnet18", "resnet18"]
    [line] = c.failure_lines()
    assert line.startswith("skipped inception_v3 at 64 px: forward on input shape") and \
        "\n" not in line


def test_features_are_cached_per_network_shape_batch_and_precision(tmp_path, monkeypatch):
    first = zoo.zoo_candidates(["resnet18", "squeezenet1_1"], (1, 4), ("fp32", "fp16"), (64,),
                               cache_dir=tmp_path)
    assert len(first.table) == 8 and first.table["config_id"].is_unique
    assert zoo.cache_path(tmp_path).is_file()
    b1 = first.table[(first.table["batch"] == 1) & (first.table["precision"] == "fp32")]
    b4 = first.table[(first.table["batch"] == 4) & (first.table["precision"] == "fp32")]
    assert (b4["flops"].to_numpy() == 4 * b1["flops"].to_numpy()).all()
    assert (b4[zoo.ACC1].to_numpy() == b1[zoo.ACC1].to_numpy()).all()

    def no_compute(keys, failures):
        raise AssertionError(f"computed again: {keys}")

    monkeypatch.setattr(zoo, "_compute", no_compute)
    again = zoo.zoo_candidates(["squeezenet1_1", "resnet18"], (4, 1), ("fp16", "fp32"), (64,),
                               cache_dir=tmp_path)
    key = ["network", "batch", "precision"]
    pd.testing.assert_frame_equal(
        again.table.sort_values(key).reset_index(drop=True),
        first.table.sort_values(key).reset_index(drop=True), check_like=True)


# --------------------------------------------------------------------------- predict / screen
@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A quick model fitted through `carb fit` on SYNTHETIC ResNet/NB201 rows (the zoo is
    predicted zero-shot from its static features)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from carb_synthetic import make_carb_synthetic

    d = tmp_path_factory.mktemp("zoo_fitted")
    make_carb_synthetic(300, seed=2, energy=False, telemetry=False,
                        platform="synthetic_cpu").to_parquet(d / "syn.parquet")
    res = cli("fit", "--data", str(d / "syn.parquet"), "--out", str(d / "m.joblib"), "--quick")
    assert res.exit_code == 0, res.output
    return d / "m.joblib"


def test_predict_zoo_networks_with_intervals(fitted, tmp_path):
    out = tmp_path / "p.csv"
    res = cli("zoo", "predict", "--model", str(fitted), "--networks",
              "resnet18,regnet_x_400mf,inception_v3", "--batches", "1,8", "--resolutions", "64",
              "--cache-dir", str(tmp_path / "cache"), "--out", str(out))
    assert res.exit_code == 0, res.output
    assert "warning: skipped inception_v3 at 64 px" in res.output
    p = pd.read_csv(out)
    assert list(p["network"]) == ["resnet18"] * 2 + ["regnet_x_400mf"] * 2
    for t in ("latency_ms", "peak_mem_mib"):
        assert (p[f"{t}_pred_lo"] <= p[f"{t}_pred"]).all()
        assert (p[f"{t}_pred"] <= p[f"{t}_pred_hi"]).all()
    assert "extrapolated" in p.columns and set(p["family"]) == {"module"}
    assert "regnet_x_400mf" in res.output and "[" in res.output


def test_screen_the_zoo_with_accuracy_as_an_objective(fitted, tmp_path):
    out = tmp_path / "s" / "short.csv"
    nets = "resnet18,resnet50,mobilenet_v3_small,squeezenet1_1,regnet_y_400mf,efficientnet_b0"
    res = cli("zoo", "screen", "--model", str(fitted), "--networks", nets, "--batches", "1,4",
              "--resolutions", "64", "--budget", "latency_ms<=1000", "--k", "4",
              "--cache-dir", str(tmp_path / "cache"), "--out", str(out))
    assert res.exit_code == 0, res.output
    assert "max:imagenet_acc1" in res.output
    short = pd.read_csv(out)
    assert 0 < len(short) <= 4 and zoo.ACC1 in short.columns
    front = pd.read_csv(out.with_name("short_front.csv"))
    best = front[zoo.ACC1].max()  # the most accurate network is never dominated
    assert best == pytest.approx(80.858)  # resnet50's published acc@1


def test_screening_the_zoo_reuses_the_screening_code(fitted, tmp_path):
    from carb_lib import screening as scr
    from carb_lib.ensemble import load_model

    m = load_model(fitted)
    c = zoo.zoo_candidates(["resnet18", "mobilenet_v3_small", "squeezenet1_1"], (1,),
                           ("fp32",), (64,), cache_dir=tmp_path)
    spec = scr.DeploymentSpec(platform=m.platform_, budgets=[], quality=zoo.ACC1, k=3)
    r = scr.screen(m, c.table, spec)
    assert [o.label for o in spec.objectives][-1] == f"max:{zoo.ACC1}"
    assert r.counts["candidates"] == 3 and np.isfinite(r.table["latency_ms_hi"]).all()


# --------------------------------------------------------------------------- the campaign
def test_campaign_configs_are_a_valid_config_list(tmp_path):
    from carb_lib.measure.campaign import read_config_list

    out = tmp_path / "zoo1.parquet"
    res = cli("zoo", "configs", "--out", str(out), "--phase", "1", "--networks",
              "resnet18,regnet_x_400mf", "--resolutions", "64", "--cache-dir",
              str(tmp_path / "cache"))
    assert res.exit_code == 0, res.output
    df = read_config_list(out)  # what `carb profile --configs` reads
    assert len(df) == 6 and set(df["batch"]) == {1, 16}
    assert set(zip(df["batch"], df["precision"], strict=True)) == {(1, "fp32"), (16, "fp32"), (1, "fp16")}
    assert set(df["module"]) == {"torchvision.models:resnet18", "torchvision.models:regnet_x_400mf"}
    assert_one_line_error(cli("zoo", "configs", "--out", str(out), "--phase", "3"), "--phase 3")


def test_rss_peak_growth_of_a_call():
    """The peak RSS growth sees a transient allocation freed before the call returns (in a
    fresh process: no heap kept from earlier tests)."""
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("no /proc/self/clear_refs (not Linux)")
    code = textwrap.dedent("""
        import torch
        from carb_lib.measure.counters import rss_peak_growth_bytes
        def transient():
            t = torch.ones(64 * 2**20 // 4)  # 64 MiB, touched, freed on return
            return float(t[-1])
        out, grew = rss_peak_growth_bytes(transient)
        _, small = rss_peak_growth_bytes(lambda: None)
        print(out, grew / 2**20, small / 2**20)
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                         timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    out, grew, small = map(float, res.stdout.split())
    assert out == 1.0 and 60 <= grew <= 80 and small < 8, res.stdout


def test_the_rss_probe_measures_each_config_in_a_fresh_process(tmp_path):
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("no /proc/self/clear_refs (not Linux)")
    lst, out = tmp_path / "l.csv", tmp_path / "rss.csv"
    res = cli("zoo", "configs", "--out", str(lst), "--phase", "1", "--networks",
              "squeezenet1_1", "--resolutions", "64", "--cache-dir", str(tmp_path / "cache"))
    assert res.exit_code == 0, res.output
    one = pd.read_csv(lst).query("batch == 16")  # one config: one fresh process
    one.to_csv(lst, index=False)
    res = cli("zoo", "rss", "--configs", str(lst), "--out", str(out))
    assert res.exit_code == 0, res.output
    df = pd.read_csv(out)
    assert len(df) == 1 and (df["status"] == "ok").all(), df.to_string()
    params_mib = 1235496 * 4 / 2**20
    assert df["alloc_peak_mib"].iloc[0] > params_mib and df["rss_peak_growth_mib"].iloc[0] > 0
    res = cli("zoo", "rss", "--configs", str(lst), "--out", str(out))
    assert res.exit_code == 0 and "1/1" not in res.output  # resumed: nothing measured again
    assert len(pd.read_csv(out)) == 1
