"""Faults a new user meets, each checked in-process through typer's CliRunner or the Python API:
relative paths, thread counts of a resumed campaign, rows of an unknown CPU, failed
re-measurements, non-finite or duplicated costs, out-of-range queries, given config ids,
missing inputs and protocol values.

Rows are SYNTHETIC; nothing is measured (measuring functions are replaced where a command
would measure)."""

from __future__ import annotations

import os

import pytest
from cli_helpers import one_line_error
from typer.testing import CliRunner

from carb_lib.app.cli import app

runner = CliRunner()


# ------------------------------------------------------------------ reproduce --runs-file
def test_a_relative_runs_file_is_read_from_the_working_folder(tmp_path, monkeypatch):
    from carb_lib.app.reproduce import ReproduceError, load_runs

    (tmp_path / "mine.yaml").write_text("profiles:\n  p: []\n")
    monkeypatch.chdir(tmp_path)
    assert load_runs("p", "mine.yaml") == []  # not looked up in the repository
    with pytest.raises(ReproduceError, match="profile 'quick' is not in mine.yaml"):
        load_runs("quick", "mine.yaml")
    res = runner.invoke(app, ["reproduce", "--profile", "p", "--runs-file", "mine.yaml",
                              "--run-dir", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    # a file of the repository's name that is not here is not silently the repository's
    one_line_error(runner.invoke(app, ["reproduce", "--profile", "quick", "--runs-file",
                                       "papermill_runs.yaml", "--run-dir", str(tmp_path / "r")]),
                   "--runs-file papermill_runs.yaml", "does not exist")
    assert os.getcwd() == str(tmp_path)


def test_the_default_run_list_is_the_repositorys(tmp_path, monkeypatch):
    from carb_lib.app.reproduce import load_runs

    monkeypatch.chdir(tmp_path)
    assert load_runs("quick")  # found from any working folder


# ------------------------------------------------------------- profile: thread counts
@pytest.fixture
def torch_threads():
    """Restore PyTorch's thread count, which a campaign run in-process sets."""
    import torch

    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_resuming_a_campaign_of_another_thread_count_is_refused(tmp_path, torch_threads):
    import pandas as pd

    from carb_lib.measure import campaign

    out = tmp_path / "camp"
    out.mkdir()
    pd.DataFrame({"platform": ["mycpu"] * 2, "config_id": ["a", "b"], "status": ["ok"] * 2,
                  "threads": [1, 1]}).to_parquet(out / "results-old-000000.parquet")
    before = sorted(p.name for p in out.iterdir())
    res = runner.invoke(app, ["profile", "--out", str(out), "--platform", "mycpu", "--threads",
                              "2", "--n-sample", "1", "--no-progress"])
    one_line_error(res, f"--out {out}", "'mycpu'", "timed with 1 thread(s)",
                   "would time with 2 (--threads)", "--threads 1")
    assert sorted(p.name for p in out.iterdir()) == before  # nothing measured or written
    assert campaign.part_threads(out, "mycpu") == {1} and campaign.part_threads(out, "x") == set()


def test_profile_of_a_shipped_platform_times_with_its_thread_count(tmp_path, torch_threads):
    from carb_lib.app.cli_checks import check_shipped_threads

    data = tmp_path / "data"
    data.mkdir()
    import pandas as pd

    pd.DataFrame({"threads": [1, 1, 1]}).to_parquet(data / "onecpu.parquet")
    (data / "catalog.yaml").write_text("format: 1\ncampaigns:\n- {platform: onecpu, campaign: "
                                       "design, files: [{path: onecpu.parquet, role: rows}]}\n")
    with pytest.raises(ValueError, match=r"--platform onecpu: its rows in data/onecpu.parquet "
                                         r"were timed with 1 thread\(s\) but this campaign would "
                                         r"time with 2 \(--threads\): pass --threads 1"):
        check_shipped_threads("onecpu", 2, "cpu", root=tmp_path)
    check_shipped_threads("onecpu", 1, "cpu", root=tmp_path)  # its own count passes
    check_shipped_threads("onecpu", 2, "cuda", root=tmp_path)  # a GPU campaign is not a CPU's
    check_shipped_threads("othercpu", 2, "cpu", root=tmp_path)  # no shipped rows
    # the shipped 2-core EPYC rows were timed with one thread: profile says so, measures nothing
    out = tmp_path / "camp"
    one_line_error(runner.invoke(app, ["profile", "--out", str(out), "--platform", "cpu_epyc_2c",
                                       "--threads", "2", "--n-sample", "1", "--no-progress"]),
                   "--platform cpu_epyc_2c", "data/cpu_epyc_2c/design/rows.parquet", "timed with 1 thread(s)",
                   "--threads 1")
    assert not out.exists()


# ------------------------------------------------------------------- audit: unknown CPU
def _shipped_rows(tmp_path, cpu_id):
    from pathlib import Path

    from carb_lib.dataset.schema import read_dataset

    root = Path(__file__).resolve().parents[1]
    rows = read_dataset(root / "data" / "cpu_epyc_zen3_2c" / "design" / "rows.parquet").head(4).copy()
    rows["cpu_id"] = cpu_id
    path = tmp_path / "d.parquet"
    rows.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("marked", ["unknown", None])
def test_audit_refuses_rows_whose_cpu_is_unknown(tmp_path, monkeypatch, marked):
    from carb_lib.measure import campaign
    from carb_lib.measure.devices import UNKNOWN_CPU, cpu_identity

    assert UNKNOWN_CPU == "unknown"

    def never(*a, **k):
        raise AssertionError("measured rows of an unknown CPU")

    monkeypatch.setattr(campaign, "measure_many_in_subprocess", never)
    d = _shipped_rows(tmp_path, [cpu_identity(), marked, marked, cpu_identity()])
    line = one_line_error(runner.invoke(app, ["audit", str(d), "--n", "2", "--out",
                                              str(tmp_path / "o"), "--no-progress"]),
                          f"{d}: 2 of 4 row(s) have no cpu_id", "'unknown'", "row 1",
                          "--assume-same-cpu")
    assert "another CPU" not in line
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_an_unknown_cpu_is_never_another_cpu_nor_a_second_one():
    import pandas as pd

    from carb_lib.measure.campaign import check_one_cpu
    from carb_lib.measure.devices import UNKNOWN_CPU, cpu_identity, is_unknown_cpu, refuse_other_cpu

    refuse_other_cpu([UNKNOWN_CPU, None, cpu_identity()], "rows were", "advice")
    with pytest.raises(ValueError, match=r"another CPU \(cpu_id \['GenuineIntel x'\]\)"):
        refuse_other_cpu([UNKNOWN_CPU, "GenuineIntel x"], "rows were", "advice")
    check_one_cpu(pd.DataFrame({"platform": ["p", "p"], "cpu_id": [UNKNOWN_CPU, "A"]}), "f")
    assert [is_unknown_cpu(v) for v in (None, float("nan"), "", UNKNOWN_CPU, "A")] == [
        True, True, True, True, False]


def test_audit_with_assume_same_cpu_measures_rows_of_an_unknown_cpu(tmp_path, monkeypatch):
    from carb_lib.measure import campaign

    seen = []

    def measure(configs, device, protocol, platform):
        seen.append(len(configs))
        return [{"status": "error", "error": "stub"} for _ in configs]

    monkeypatch.setattr(campaign, "measure_many_in_subprocess", measure)
    d = _shipped_rows(tmp_path, "unknown")
    runner.invoke(app, ["audit", str(d), "--n", "2", "--out", str(tmp_path / "o"),
                        "--no-progress", "--assume-same-cpu"])
    assert seen == [2]  # measured, not refused


# ----------------------------------------------------------------- shared tiny model
CONFIG = ["family", "block", "depth", "width", "early_downsample", "resolution", "batch",
          "precision", "num_classes"]


@pytest.fixture(scope="module")
def data():
    from carb_synthetic import make_carb_synthetic

    return make_carb_synthetic(300, seed=2, energy=False, telemetry=False,
                               platform="synthetic_cpu")  # fmt: skip


def _ok(data):
    return data[data["status"] == "ok"].reset_index(drop=True)


def _fit(df, **kw):
    import warnings

    from carb_lib.ensemble import PRESETS, CARBRegressor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return CARBRegressor(**{**PRESETS["test"], **kw}).fit(df)


@pytest.fixture(scope="module")
def model_file(data, tmp_path_factory):
    from carb_lib.ensemble import save_model

    return save_model(_fit(_ok(data)), tmp_path_factory.mktemp("model") / "m.joblib")


# --------------------------------------------------------------- screen --validate
def _shortlist_result(budgets):
    from carb_lib import screening as scr
    from carb_lib.families.space import paper_grid

    grid = paper_grid().head(3).reset_index(drop=True)

    class Result:
        spec = scr.DeploymentSpec(platform="synthetic_cpu", budgets=budgets,
                                  objectives=["latency_ms"], use_quality=False)
        shortlist = grid.assign(latency_ms=2.0, latency_ms_lo=1.0, latency_ms_hi=3.0)

    return Result()


@pytest.mark.parametrize("budgets", [[], ["latency_ms<=1"]])
def test_a_failed_re_measurement_is_not_measured_with_or_without_budgets(budgets):
    from carb_lib.screening.hardware import format_hardware, validate_on_hardware

    answers = iter([{"status": "oom", "error": None}, {"status": "ok", "latency_ms": 5.0},
                    RuntimeError("the device went away")])

    def flaky(config, device, protocol):
        a = next(answers)
        if isinstance(a, Exception):
            raise a
        return a

    table, summary = validate_on_hardware(_shortlist_result(budgets), "cpu", profile_fn=flaky)
    lines = format_hardware(table, summary).splitlines()
    assert "2 config(s) not measured" in lines[0]
    assert "NOT MEASURED (status oom)" in lines[1] and "BUDGET" not in lines[1]
    assert "NOT MEASURED (RuntimeError: the device went away)" in lines[3]
    assert "BUDGET" not in lines[3] and "all budgets held" not in lines[3]
    # the one measured row is judged on its measurement
    assert ("BUDGET MISSED: latency_ms<=1" if budgets else "all budgets held") in lines[2]


def test_screen_validate_on_a_device_it_cannot_measure_on_is_refused_first(
        tmp_path, data, model_file):
    data[CONFIG].head(20).to_csv(tmp_path / "c.csv", index=False)
    res = runner.invoke(app, ["screen", "--model", str(model_file), "--candidates",
                              str(tmp_path / "c.csv"), "--k", "2", "--out",
                              str(tmp_path / "s.csv"), "--validate", "--device", "tpu"])
    one_line_error(res, "--device tpu", "--validate")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.csv"]  # nothing written


# ------------------------------------------------------------------ screen --measured
def test_screen_measured_missing_is_blamed_before_anything_is_written(tmp_path, data,
                                                                      model_file):
    data[CONFIG].head(20).to_csv(tmp_path / "c.csv", index=False)
    res = runner.invoke(app, ["screen", "--model", str(model_file), "--candidates",
                              str(tmp_path / "c.csv"), "--k", "2", "--out",
                              str(tmp_path / "s.csv"), "--measured",
                              str(tmp_path / "missing.parquet")])  # fmt: skip
    line = one_line_error(res, "--measured", "missing.parquet")
    assert "--candidates" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.csv"]  # no shortlist written


# ------------------------------------------------------------------ costs at every fit
@pytest.mark.parametrize("value, fragment", [
    (float("nan"), "value nan is missing (NaN) in an ok row"),
    (float("inf"), "value inf is not finite"), (-float("inf"), "value -inf is not finite")])
def test_library_fit_refuses_a_nan_or_infinite_cost_on_an_ok_row(data, value, fragment):
    from carb_lib.dataset.schema import SchemaError

    df = _ok(data)
    df.loc[7, "latency_ms"] = value
    with pytest.raises(SchemaError) as err:
        _fit(df)
    text = str(err.value)
    assert "\n" not in text and text.startswith("training data: row 7: column 'latency_ms' ")
    assert fragment in text and "platform='synthetic_cpu'" in text


def test_library_fit_names_rows_by_the_users_labels_and_skips_failed_rows(data):
    from carb_lib.dataset.schema import SchemaError

    df = _ok(data)
    df.index = df.index + 1  # rows counted from 1
    df.loc[5, "peak_mem_mib"] = float("nan")
    with pytest.raises(SchemaError, match=r"row 5: column 'peak_mem_mib' value nan"):
        _fit(df)
    failed = df.copy()
    failed.loc[5, "status"] = "error"  # a failed row may miss its costs: dropped, not refused
    assert _fit(failed).n_train_ == len(df) - 1


def test_fit_and_library_fit_share_the_cost_rule(tmp_path, data):
    from carb_lib.dataset.schema import SchemaError, check_costs

    df = _ok(data)
    df.loc[9, "latency_ms"] = float("inf")
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    one_line_error(runner.invoke(app, ["fit", "--data", str(path), "--out",
                                       str(tmp_path / "m.skops"), "--quick"]),
                   str(path), "row 9", "'latency_ms'", "inf", "is not finite")
    with pytest.raises(SchemaError, match=r"^f: row 9: column 'latency_ms' value inf is not"):
        check_costs(df, "f")
    check_costs(_ok(data), "f")  # clean rows pass (energy: never measured on this platform)


def test_library_fit_still_refuses_duplicates_and_a_second_platform(data):
    import numpy as np
    import pandas as pd

    df = _ok(data)
    with pytest.raises(ValueError, match="training data: rows 4, .*: config_id .* repeated"):
        _fit(pd.concat([df, df.iloc[[4]]], ignore_index=True))
    two = df.assign(platform=np.where(np.arange(len(df)) % 2, "a", "b"))
    with pytest.raises(ValueError, match=r"several platforms \['a', 'b'\]"):
        _fit(two)


# --------------------------------------------------------------------------- transfer
def _transfer(tmp_path, data, samples, query=None):
    src = tmp_path / "s.csv"
    _ok(data).to_csv(src, index=False)
    tg = tmp_path / "tg.csv"
    samples.to_csv(tg, index=False)
    q = tmp_path / "q.csv"
    (data[CONFIG].head(30) if query is None else query).to_csv(q, index=False)
    return tg, q, runner.invoke(app, ["transfer", "--source", str(src), "--target-samples",
                                      str(tg), "--query", str(q), "--out",
                                      str(tmp_path / "o.csv")])


@pytest.mark.parametrize("column, value, fragment", [
    ("width", 0.0, "width=0.0 is unknown"), ("width", -1.0, "width=-1.0 is unknown"),
    ("batch", 4097, "batch=4097 is outside the valid range 1..4096"),
    ("resolution", 0, "resolution=0 is outside the valid range")])
def test_transfer_query_out_of_range_is_one_line_naming_the_row(tmp_path, data, column, value,
                                                                 fragment):
    q = data[CONFIG].head(30).reset_index(drop=True)
    q.loc[23, column] = value
    tg = _ok(data).head(20).assign(platform="other")
    _, qpath, res = _transfer(tmp_path, data, tg, q)
    one_line_error(res, f"--query {qpath}: row 23: {fragment}")
    assert not (tmp_path / "o.csv").exists()


def test_transfer_refuses_repeated_target_samples(tmp_path, data):
    import pandas as pd

    ok = _ok(data).head(20).assign(platform="other")
    repeated = pd.concat([ok, ok.iloc[[3]].assign(latency_ms=99.0)], ignore_index=True)
    tg, _, res = _transfer(tmp_path, data, repeated)
    one_line_error(res, f"--target-samples {tg}: rows 3, 20", "repeated", "platform 'other'",
                   "counts twice")
    assert not (tmp_path / "o.csv").exists()
    # measurements of one config from two campaigns are two samples, told apart
    two = pd.concat([ok.assign(campaign="a"), ok.iloc[[3]].assign(campaign="b")],
                    ignore_index=True)
    _, _, res = _transfer(tmp_path, data, two)
    assert res.exit_code == 0, res.output


# ----------------------------------------------------------------- given config ids
def _wrong_id_configs(data, path):
    c = data[[*CONFIG, "config_id"]].head(6).reset_index(drop=True)
    c.loc[4, "config_id"] = "0123456789abcdef"
    c.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("command", ["predict", "screen"])
def test_a_config_id_that_is_not_its_configs_is_refused(tmp_path, data, model_file, command):
    c = _wrong_id_configs(data, tmp_path / "c.csv")
    option = {"predict": "--configs", "screen": "--candidates"}[command]
    args = [command, "--model", str(model_file), option, str(c), "--out", str(tmp_path / "o.csv")]
    one_line_error(runner.invoke(app, args + (["--k", "2"] if command == "screen" else [])),
                   f"{option} {c}: row 4: config_id '0123456789abcdef' does not match its config")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.csv"]


def test_transfer_refuses_a_query_config_id_that_is_not_its_configs(tmp_path, data):
    q = _wrong_id_configs(data, tmp_path / "query.csv")
    import pandas as pd

    tg = _ok(data).head(20).assign(platform="other")
    _, qpath, res = _transfer(tmp_path, data, tg, pd.read_csv(q))
    one_line_error(res, f"--query {qpath}: row 4: config_id '0123456789abcdef' does not match")


# ------------------------------------------------------------------ profile --protocol
@pytest.mark.parametrize("text, fragment", [
    ('{"max_windows": -1}', "field 'max_windows' must be >= 1, got -1"),
    ('{"cpu_min_window_s": NaN}', "field 'cpu_min_window_s' must be a finite number, got nan"),
    ('{"cpu_min_window_s": Infinity}', "must be a finite number, got inf"),
    ('{"max_windows": "8"}', "field 'max_windows' must be of type int, got '8'")])
def test_profile_refuses_protocol_values_before_anything_is_written(tmp_path, text, fragment):
    out = tmp_path / "camp"
    one_line_error(runner.invoke(app, ["profile", "--out", str(out), "--n-sample", "1",
                                       "--protocol", text, "--no-progress"]),
                   "--protocol", fragment)
    assert not out.exists()  # no part file, so nothing a later run skips as done


def test_a_protocol_file_with_a_bad_value_is_named(tmp_path):
    f = tmp_path / "p.json"
    f.write_text('{"max_windows": -1}')
    out = tmp_path / "camp"
    one_line_error(runner.invoke(app, ["profile", "--out", str(out), "--n-sample", "1",
                                       "--protocol", str(f), "--no-progress"]),
                   f"--protocol {f}: field 'max_windows' must be >= 1, got -1")
    assert not out.exists()
