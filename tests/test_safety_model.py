"""Model files cannot run code: the safe format, the trusted types, --trust, hostile files.

SYNTHETIC data and tiny models; every command runs in-process through typer's CliRunner.
"""

from __future__ import annotations

import pickle
import shutil
import warnings
import zipfile
from pathlib import Path

import joblib
import pandas as pd
import pytest
from carb_synthetic import make_carb_synthetic
from typer.testing import CliRunner

from carb_lib.app.cli import app
from carb_lib.ensemble import (
    PRESETS,
    TRUSTED_TYPES,
    CARBRegressor,
    ModelFileError,
    load_model,
    save_model,
)

HELP_DIR = Path(__file__).parent / "fixtures" / "help_nb201"


class Hostile:
    """Unpickling this object creates the file ``marker`` (a stand-in for any command)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


@pytest.fixture(scope="module")
def data():
    return make_carb_synthetic(300, seed=2, energy=False, telemetry=False,
                               platform="synthetic_cpu")  # fmt: skip


@pytest.fixture(scope="module")
def fitted(data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return CARBRegressor(**{**PRESETS["test"], "learners": ("xgb", "lgbm", "et")}).fit(data)


def _configs(data, path):
    data[["family", "block", "depth", "width", "early_downsample", "resolution", "batch",
          "precision", "num_classes"]].head(5).to_csv(path, index=False)  # fmt: skip
    return path


def _hostile(tmp_path, name="evil.joblib"):
    marker = tmp_path / "code_ran"
    joblib.dump({"metadata": {}, "model": Hostile(marker)}, tmp_path / name)
    return tmp_path / name, marker


def _one_line_error(res) -> str:
    assert res.exit_code == 1, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    return lines[0]


def test_model_file_is_a_skops_archive_of_trusted_types_only(fitted, data, tmp_path):
    import skops.io as sio

    path = save_model(fitted, tmp_path / "m.joblib")
    assert zipfile.is_zipfile(path)
    assert set(sio.get_untrusted_types(file=path)) <= set(TRUSTED_TYPES)
    with pytest.raises(pickle.UnpicklingError):  # not a pickle at all
        pickle.loads(path.read_bytes())
    again = load_model(path)
    test = data.tail(40)
    pd.testing.assert_frame_equal(again.predict_interval(test, coverage=0.8),
                                  fitted.predict_interval(test, coverage=0.8))
    pd.testing.assert_frame_equal(again.oof_predictions_, fitted.oof_predictions_)
    assert again.platform_ == "synthetic_cpu"


def test_hostile_joblib_file_runs_no_code_in_load_model(tmp_path):
    path, marker = _hostile(tmp_path)
    with pytest.raises(ModelFileError, match=r"evil\.joblib is not a CARB model file in the safe"):
        load_model(path)
    assert not marker.exists()


def test_hostile_joblib_file_runs_no_code_in_predict_and_screen(data, tmp_path):
    path, marker = _hostile(tmp_path)
    configs = _configs(data, tmp_path / "c.csv")
    runner = CliRunner()
    res = runner.invoke(app, ["predict", "--model", str(path), "--configs", str(configs),
                              "--out", str(tmp_path / "p.csv")])  # fmt: skip
    assert "--trust" in _one_line_error(res) and str(path) in res.output
    res = runner.invoke(app, ["screen", "--model", str(path), "--out", str(tmp_path / "s.csv")])
    assert "--trust" in _one_line_error(res)
    assert not marker.exists() and not (tmp_path / "p.csv").exists()


def test_a_skops_file_holding_a_foreign_type_is_refused_without_loading(tmp_path):
    import os

    import skops.io as sio
    from sklearn.preprocessing import FunctionTransformer

    path = tmp_path / "tampered.joblib"
    sio.dump({"metadata": {}, "model": FunctionTransformer(func=os.system)}, path)
    with pytest.raises(ModelFileError, match=r"tampered\.joblib refused: .*posix\.system|system"):
        load_model(path)


@pytest.mark.parametrize("content", [b"", b"hello world\n", b"\x80\x04K\xb7.", b"PK\x03\x04junk"])
def test_a_foreign_or_broken_file_is_one_line_naming_it(data, tmp_path, content):
    bad = tmp_path / "notes.bin"
    bad.write_bytes(content)
    res = CliRunner().invoke(app, ["predict", "--model", str(bad), "--configs",
                                   str(_configs(data, tmp_path / "c.csv")),
                                   "--out", str(tmp_path / "p.csv")])  # fmt: skip
    assert "notes.bin" in _one_line_error(res)
    with pytest.raises(ModelFileError, match="notes.bin"):
        load_model(bad, trust=True)  # even trusted: one error naming the file


def test_a_zip_that_is_not_a_model_is_refused(tmp_path):
    path = tmp_path / "archive.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("a.txt", "hello")
    with pytest.raises(ModelFileError, match="archive.zip"):
        load_model(path)


def test_an_earlier_joblib_model_loads_only_with_trust(fitted, data, tmp_path):
    path = tmp_path / "old.joblib"
    save_model(fitted, tmp_path / "new.joblib")
    shutil.copy(tmp_path / "new.joblib.json", tmp_path / "old.joblib.json")
    import json

    meta = json.loads((tmp_path / "old.joblib.json").read_text())
    meta.pop("model_sha256")  # an earlier version's sidecar names no model file by content
    (tmp_path / "old.joblib.json").write_text(json.dumps(meta))
    joblib.dump({"metadata": meta, "model": fitted}, path)
    with pytest.raises(ModelFileError, match="--trust"):
        load_model(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert load_model(path, trust=True).platform_ == "synthetic_cpu"
    configs = _configs(data, tmp_path / "c.csv")
    res = CliRunner().invoke(app, ["predict", "--model", str(path), "--configs", str(configs),
                                   "--out", str(tmp_path / "p.csv"), "--trust"])  # fmt: skip
    assert res.exit_code == 0, res.output


def test_a_folder_as_model_is_one_line(tmp_path):
    with pytest.raises(ModelFileError, match="is a folder"):
        load_model(tmp_path)


def test_convert_help_never_suggests_weights_only_false(tmp_path):
    folder = tmp_path / "help"
    shutil.copytree(HELP_DIR, folder)
    victim = next(p for p in sorted(folder.glob("*.pt")) if p.stem != "str_arch2idx")
    victim.write_bytes(b"garbage, not a tensor file")
    res = CliRunner().invoke(app, ["convert-help", "--folder", str(folder), "--out",
                                   str(tmp_path / "o.parquet")])  # fmt: skip
    line = _one_line_error(res)
    assert victim.name in line and "weights_only=False" not in res.output
    assert not (tmp_path / "o.parquet").exists()


def test_convert_help_on_a_folder_without_latency_files_writes_nothing(tmp_path):
    folder = tmp_path / "help"
    folder.mkdir()
    shutil.copy(HELP_DIR / "str_arch2idx.pt", folder)
    shutil.copy(HELP_DIR / "LICENSE", folder)
    res = CliRunner().invoke(app, ["convert-help", "--folder", str(folder), "--out",
                                   str(tmp_path / "o.parquet")])  # fmt: skip
    assert "no HELP latency file" in _one_line_error(res)
    assert not (tmp_path / "o.parquet").exists()
