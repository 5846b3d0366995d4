"""A command's options are one object declared once, in its typer signature
(carb_lib.app.options): every option of ``carb fit/predict/screen/transfer/check`` is a field of
its ``Options`` class with the command line's default, and Python code that builds the object
gets what the command line does."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from carb_lib.app import cli

COMMANDS = {"fit": cli.FitOptions, "predict": cli.PredictOptions, "screen": cli.ScreenOptions,
            "transfer": cli.TransferOptions, "check": cli.CheckOptions}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_of_the_command_is_a_field_with_its_default(name):
    group = typer.main.get_command(cli.app)
    params = {p.name: p for p in group.commands[name].params}
    fields = {f.name: f for f in dataclasses.fields(COMMANDS[name])}
    assert set(fields) == set(params)
    for key, param in params.items():
        f = fields[key]
        if param.required:
            assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            continue
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING \
            else f.default
        want = param.default if not isinstance(param.default, tuple) else list(param.default)
        assert default == want or (default in (None, []) and want in (None, [], ())), key


def test_options_are_keyword_only_frozen_and_refuse_unknown_names():
    opts = cli.FitOptions(out="m.skops")
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.preset = "paper"
    with pytest.raises(TypeError, match="colour"):
        cli.FitOptions(out="m.skops", colour="red")
    with pytest.raises(TypeError, match="out"):
        cli.FitOptions()  # --out is required
    with pytest.raises(TypeError):
        cli.FitOptions("m.skops")  # keyword-only
    a, b = cli.FitOptions(out="a"), cli.FitOptions(out="b")
    assert a.data == [] and a.data is not b.data  # a list default is each object's own


def test_python_options_fit_the_model_the_command_line_fits(tmp_path):
    from carb_lib.app.fit_cli import run_fit
    from carb_lib.dataset.synthetic import make_synthetic_dataset

    rows = make_synthetic_dataset(216, seed=3, platform="synthetic_cpu", with_energy=False,
                                  with_telemetry=False, error_rate=0.0)
    rows = rows.drop(columns="config_id")  # the SYNTHETIC ids are not the family's
    rows.to_parquet(tmp_path / "d.parquet")
    common = ["--data", str(tmp_path / "d.parquet"), "--preset", "test", "--latency-law",
              "roofline"]
    res = CliRunner().invoke(cli.app, ["fit", *common, "--out", str(tmp_path / "cli.skops")])
    assert res.exit_code == 0, res.output
    said: list[str] = []
    run_fit(cli.FitOptions(data=[tmp_path / "d.parquet"], preset="test", latency_law="roofline",
                           out=tmp_path / "py.skops"), echo=said.append)
    meta = [json.loads((tmp_path / f"{n}.skops.json").read_text()) for n in ("cli", "py")]
    assert meta[0]["params"] == meta[1]["params"]
    assert any(line.startswith("latency law roofline") for line in said)
    from carb_lib.ensemble import load_model

    configs = rows.head(8)
    p_cli, p_py = (load_model(tmp_path / f"{n}.skops").predict(configs) for n in ("cli", "py"))
    pd.testing.assert_frame_equal(p_cli, p_py)
