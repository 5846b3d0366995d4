"""Measurement commands refuse bad settings before measuring: protocol values, rows of an
unknown CPU in an audit; a failed measurement is never a budget miss.

Rows here are SYNTHETIC or shipped rows that are never re-measured (the measuring function is
replaced); every command runs in-process through typer's CliRunner."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import one_line_error
from typer.testing import CliRunner

from carb_lib.app.cli import app
from carb_lib.measure.protocol import protocol_settings

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.mark.parametrize("text, fragment", [
    ('{"max_windows": -1}', "'max_windows' must be >= 1, got -1"),
    ('{"n_windows": 0}', "'n_windows' must be >= 1"),
    ('{"cpu_min_iters": 0}', "'cpu_min_iters' must be >= 1"),
    ('{"cpu_min_window_s": 0}', "'cpu_min_window_s' must be > 0"),
    ('{"min_cpu_share": 1.5}', "'min_cpu_share' must be >= 0 and <= 1"),
    ('{"backoff_s": -0.1}', "'backoff_s' must be >= 0"),
    ('{"n_windows": 9}', "max_windows (8) must be >= n_windows (9)"),
])
def test_profile_refuses_protocol_values_before_the_campaign(tmp_path, text, fragment):
    out = tmp_path / "camp"
    one_line_error(runner.invoke(app, ["profile", "--out", str(out), "--n-sample", "2",
                                       "--protocol", text, "--no-progress"]),
                   "--protocol", fragment)  # fmt: skip
    assert not out.exists()  # nothing written, nothing to skip as done later


def test_valid_protocol_values_pass():
    assert protocol_settings('{"max_windows": 12, "n_windows": 3, "min_cpu_share": 1}') == {
        "max_windows": 12, "n_windows": 3, "min_cpu_share": 1}


# --------------------------------------------------------------- screen --validate
def test_a_failed_measurement_is_never_a_budget_miss():
    from carb_lib import screening as scr
    from carb_lib.families.space import paper_grid
    from carb_lib.screening.hardware import format_hardware, validate_on_hardware

    grid = paper_grid().head(3).reset_index(drop=True)
    shortlist = grid.assign(latency_ms=2.0, latency_ms_lo=1.0, latency_ms_hi=3.0)
    spec = scr.DeploymentSpec(platform="synthetic_cpu", budgets=["latency_ms<=10"],
                              objectives=["latency_ms"], use_quality=False)  # fmt: skip

    class Result:
        pass

    result = Result()
    result.spec, result.shortlist = spec, shortlist

    def broken(config, device, protocol):
        raise RuntimeError("unknown device 'tpu'")

    table, summary = validate_on_hardware(result, "tpu", profile_fn=broken)
    assert (summary.budget_checks, summary.budgets_held, summary.not_measured) == (0, 0, 3)
    text = format_hardware(table, summary)
    assert "BUDGET MISSED" not in text and text.count("NOT MEASURED (RuntimeError") == 3


# --------------------------------------------------------------------------- audit
def _rows_without_cpu_id(tmp_path) -> Path:
    from carb_lib.dataset.schema import read_dataset

    rows = read_dataset(ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "rows.parquet").head(4)
    # a file measured before the CPU model was recorded: "unknown" in the first two rows, no
    # value at all in the last two
    assert (rows["cpu_id"] == "unknown").all()
    rows["cpu_id"] = pd.Series(["unknown", "unknown", None, None], dtype="string")
    rows.to_parquet(tmp_path / "d.parquet", index=False)
    return tmp_path / "d.parquet"


def test_audit_refuses_rows_without_cpu_id_before_measuring(tmp_path, monkeypatch):
    from carb_lib.measure import campaign

    def never(*a, **k):
        raise AssertionError("measured rows of an unknown CPU")

    monkeypatch.setattr(campaign, "measure_many_in_subprocess", never)
    d = _rows_without_cpu_id(tmp_path)
    one_line_error(runner.invoke(app, ["audit", str(d), "--n", "2", "--out",
                                       str(tmp_path / "o"), "--no-progress"]),
                   "4 of 4 row(s) have no cpu_id", "--assume-same-cpu")  # fmt: skip


def test_audit_with_assume_same_cpu_measures(tmp_path, monkeypatch):
    from carb_lib.measure import campaign

    seen = []

    def measure(configs, device, protocol, platform):
        seen.append(len(configs))
        return [{"config_id": c["config_id"] if "config_id" in c else cid, "status": "ok",
                 "latency_ms": 1.0, "peak_mem_mib": 1.0, "measured_at": "now"}
                for c, cid in zip(configs, ids, strict=True)]

    d = _rows_without_cpu_id(tmp_path)
    from carb_lib.dataset.schema import read_dataset
    from carb_lib.measure.audit import sample_rows

    ids = sample_rows(read_dataset(d), 2, 0)["config_id"].tolist()
    monkeypatch.setattr(campaign, "measure_many_in_subprocess", measure)
    res = runner.invoke(app, ["audit", str(d), "--n", "2", "--out", str(tmp_path / "o"),
                              "--no-progress", "--assume-same-cpu"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert seen == [2] and np.isfinite(pd.read_parquet(next((tmp_path / "o").glob(
        "*_audit_rows.parquet")))["log_ratio"]).all()


@pytest.mark.parametrize("args, fragment", [
    (["--platform", "synthetic_cpu_1t", "--threads", "2"], "names 1 thread(s) but this campaign "
                                                            "would time with 2 (--threads)"),
    (["--platform", "synthetic_cpu_7t"], "names 7 thread(s)"),
])
def test_profile_refuses_a_platform_name_of_another_thread_count(tmp_path, args, fragment):
    out = tmp_path / "camp"
    one_line_error(runner.invoke(app, ["profile", "--out", str(out), "--n-sample", "1",
                                       "--no-progress", *args]), fragment, "--threads")
    assert not out.exists()
