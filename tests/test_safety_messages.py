"""User mistakes get one line naming the file, option and value (exit 1), never an internal
exception (exit 2).

SYNTHETIC data and tiny models; every command runs in-process through typer's CliRunner.
"""

from __future__ import annotations

import warnings

import pytest
from carb_synthetic import make_carb_synthetic
from cli_helpers import one_line_error
from typer.testing import CliRunner

from carb_lib.app.cli import app
from carb_lib.ensemble import PRESETS, CARBRegressor, ModelFileError, load_model, save_model

runner = CliRunner()
CONFIG = ["family", "block", "depth", "width", "early_downsample", "resolution", "batch",
          "precision", "num_classes"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("msg")
    data = make_carb_synthetic(240, seed=2, energy=False, telemetry=False,
                               platform="synthetic_cpu")  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = CARBRegressor(**PRESETS["test"]).fit(data[data["status"] == "ok"])
    path = save_model(model, tmp / "m.joblib")
    data[CONFIG].head(10).to_csv(tmp / "c.csv", index=False)
    return {"model": path, "configs": tmp / "c.csv", "tmp": tmp, "n_cal": min(
        len(s) for g in model.conformal_scores_.values() for s in g.values())}


def test_a_coverage_the_calibration_cannot_honour_is_one_line(files, tmp_path):
    assert files["n_cal"] < 99
    res = runner.invoke(app, ["predict", "--model", str(files["model"]), "--configs",
                              str(files["configs"]), "--out", str(tmp_path / "p.csv"),
                              "--coverage", "0.99"])  # fmt: skip
    one_line_error(res, "--coverage 0.99 needs at least 99 calibration scores",
                   f"has {files['n_cal']}", str(files["model"]))
    res = runner.invoke(app, ["screen", "--model", str(files["model"]), "--candidates",
                              str(files["configs"]), "--out", str(tmp_path / "s.csv"),
                              "--coverage", "0.99"])  # fmt: skip
    one_line_error(res, "--coverage 0.99 needs at least 99")
    assert not (tmp_path / "p.csv").exists() and not (tmp_path / "s.csv").exists()


def test_a_broken_metadata_file_is_named(files, tmp_path):
    import shutil

    shutil.copy(files["model"], tmp_path / "m.joblib")
    (tmp_path / "m.joblib.json").write_text("{not json")
    with pytest.raises(ModelFileError, match=r"m\.joblib\.json \(the metadata of m\.joblib\)"):
        load_model(tmp_path / "m.joblib")
    one_line_error(runner.invoke(app, ["predict", "--model", str(tmp_path / "m.joblib"),
                                       "--configs", str(files["configs"]), "--out",
                                       str(tmp_path / "p.csv")]), "m.joblib.json")  # fmt: skip


@pytest.mark.parametrize("args, fragment", [
    (["noise", "--n-configs", "0"], "--n-configs must be >= 1, got 0"),
    (["noise", "--repeats", "1"], "--repeats must be >= 2, got 1"),
])
def test_noise_counts_are_checked(tmp_path, args, fragment):
    one_line_error(runner.invoke(app, [*args, "--out", str(tmp_path / "n")]), fragment)


def test_predict_help_names_the_columns_it_writes():
    res = runner.invoke(app, ["predict", "--help"], terminal_width=400)
    text = " ".join(res.output.split())
    assert "{t}_pred_lo" in text and "{t}, {t}_lo" not in text


def test_kernels_default_platform_names_the_threads_it_records(monkeypatch):
    import torch

    from carb_lib.kernels.draw import default_kernel_platform

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert default_kernel_platform(1).endswith("_1t")
        assert default_kernel_platform(3).endswith("_3t")
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("make", [
    lambda t: t,  # a folder
    lambda t: (t / "m.csv", (t / "m.csv").write_text("a,b\n1,2\n"))[0],
    lambda t: (t / "m.json", (t / "m.json").write_text('{"format": 1}'))[0],
])
def test_a_non_model_file_as_model_is_exit_1_naming_it(files, tmp_path, make):
    path = make(tmp_path)
    res = runner.invoke(app, ["predict", "--model", str(path), "--configs",
                              str(files["configs"]), "--out", str(tmp_path / "p.parquet")])
    one_line_error(res, str(path))
