"""``carb merge`` cannot lose rows: --existing must exist, OUT's rows and columns are kept,
concurrent merges into one OUT each add their rows.

Rows here are SYNTHETIC (valid schema rows for real configs, invented costs)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import one_line_error
from typer.testing import CliRunner

import carb_lib.measure.campaign_parts as parts_mod
from carb_lib.app.cli import app
from carb_lib.dataset.schema import backup_path, empty_row, read_dataset
from carb_lib.families.space import CONFIG_COLUMNS, paper_grid
from carb_lib.measure import campaign as cp

runner = CliRunner()


@pytest.fixture(scope="module")
def grid() -> pd.DataFrame:
    return paper_grid()


def syn_rows(configs: pd.DataFrame, platform: str = "synthetic_cpu", lat: float = 2.0) -> list:
    """SYNTHETIC ok rows for real configs (valid schema rows, invented costs)."""
    rows = []
    for i, rec in enumerate(configs.to_dict(orient="records")):
        r = empty_row()
        r.update({c: rec[c] for c in CONFIG_COLUMNS}, config_id=rec["config_id"])
        r.update(
            platform=platform, status="ok", error=None, latency_ms=lat + i, peak_mem_mib=10.0 + i,
            energy_j=np.nan, energy_reason="SYNTHETIC row: no counter", n_iters=6,
            window_s=0.3, latency_mean_ms=lat + i, latency_p10_ms=lat + i,
            latency_p90_ms=lat + i, latency_cv=0.01, device_name="synthetic", torch_version="x",
            host="h", measured_at=f"2026-01-01T00:00:{i:02d}.000+00:00", threads=1,
            quality="clean",
        )  # fmt: skip
        rows.append(r)
    return rows


def parts(folder: Path, rows: list) -> Path:
    cp.PartWriter(folder, cp.RESULTS_PREFIX).write(rows)
    return folder


def test_a_missing_existing_is_refused_and_out_keeps_its_rows(tmp_path, grid):
    out = tmp_path / "d.parquet"
    assert runner.invoke(app, ["merge", str(parts(tmp_path / "a", syn_rows(grid.iloc[:10]))),
                               str(out)]).exit_code == 0  # fmt: skip
    b = parts(tmp_path / "b", syn_rows(grid.iloc[10:12]))
    for _ in range(2):  # twice: the rows are neither lost from OUT nor from OUT.bak
        one_line_error(runner.invoke(app, ["merge", str(b), str(out), "--existing",
                                           str(tmp_path / "missing.parquet")]),
                       "--existing", "missing.parquet", "no such dataset")  # fmt: skip
    assert len(read_dataset(out)) == 10


def test_an_existing_other_than_out_needs_force(tmp_path, grid):
    out, other = tmp_path / "d.parquet", tmp_path / "other.parquet"
    runner.invoke(app, ["merge", str(parts(tmp_path / "a", syn_rows(grid.iloc[:10]))), str(out)])
    runner.invoke(app, ["merge", str(parts(tmp_path / "o", syn_rows(grid.iloc[20:23]))),
                        str(other)])  # fmt: skip
    b = parts(tmp_path / "b", syn_rows(grid.iloc[10:12]))
    one_line_error(runner.invoke(app, ["merge", str(b), str(out), "--existing", str(other)]),
                   "rows would be dropped", "--force")
    assert len(read_dataset(out)) == 10
    res = runner.invoke(app, ["merge", str(b), str(out), "--existing", str(other), "--force"])
    assert res.exit_code == 0, res.output
    assert len(read_dataset(out)) == 5 and len(read_dataset(backup_path(out))) == 10
    # --existing equal to OUT is the plain extension
    c = parts(tmp_path / "c", syn_rows(grid.iloc[30:31]))
    assert runner.invoke(app, ["merge", str(c), str(out), "--existing", str(out)]).exit_code == 0
    assert len(read_dataset(out)) == 6


def test_force_keeps_a_backup(tmp_path, grid):
    out = tmp_path / "d.parquet"
    runner.invoke(app, ["merge", str(parts(tmp_path / "a", syn_rows(grid.iloc[:5]))), str(out)])
    res = runner.invoke(app, ["merge", str(parts(tmp_path / "b", syn_rows(grid.iloc[5:7]))),
                              str(out), "--force"])  # fmt: skip
    assert res.exit_code == 0 and len(read_dataset(out)) == 2
    assert len(read_dataset(backup_path(out))) == 5


def test_columns_of_out_that_the_parts_lack_are_kept_or_named(tmp_path, grid):
    out = tmp_path / "d.parquet"
    runner.invoke(app, ["merge", str(parts(tmp_path / "a", syn_rows(grid.iloc[:4]))), str(out)])
    df = pd.read_parquet(out)
    df["cpu_id"] = "GenuineSynthetic"  # a schema column the parts do not record
    df.to_parquet(out, index=False)
    res = runner.invoke(app, ["merge", str(parts(tmp_path / "b", syn_rows(grid.iloc[4:6]))),
                              str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    merged = pd.read_parquet(out).set_index("config_id")
    assert (merged.loc[grid.config_id.iloc[:4], "cpu_id"] == "GenuineSynthetic").all()
    assert merged.loc[grid.config_id.iloc[4:6], "cpu_id"].isna().all()
    df = pd.read_parquet(out)
    df["accuracy"] = np.linspace(0.5, 0.8, len(df))  # outside the schema: named, not dropped
    df.to_parquet(out, index=False)
    one_line_error(runner.invoke(app, ["merge", str(parts(tmp_path / "c", syn_rows(
        grid.iloc[6:8]))), str(out)]), "['accuracy']", "would drop them")
    assert "accuracy" in pd.read_parquet(out).columns


def test_concurrent_merges_into_one_out_lose_no_rows(tmp_path, grid, monkeypatch):
    out = tmp_path / "d.parquet"
    runner.invoke(app, ["merge", str(parts(tmp_path / "base", syn_rows(grid.iloc[:10]))),
                        str(out)])  # fmt: skip
    folders = [parts(tmp_path / f"p{i}", syn_rows(grid.iloc[10 + 5 * i:15 + 5 * i]))
               for i in range(3)]
    slow_check = parts_mod.check_one_cpu

    def slow(*a, **k):  # widen the read-modify-write window: without a lock rows are lost
        time.sleep(0.4)
        return slow_check(*a, **k)

    monkeypatch.setattr(parts_mod, "check_one_cpu", slow)
    errors: list[BaseException] = []

    def merge(folder: Path) -> None:
        try:
            parts_mod.merge_parts(folder, out)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=merge, args=(f,)) for f in folders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    merged = read_dataset(out)
    assert len(merged) == 25 and set(merged["config_id"]) == set(grid.config_id.iloc[:25])
