"""Fault injection for the measurement commands: bad input gets one clear line (never a
traceback), writes never destroy a dataset, one writer per campaign folder.

Rows here are SYNTHETIC (platform names start with ``synthetic``): they exercise merging and
validation, never the instrument."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from carb_lib.app.cli import app
from carb_lib.dataset.schema import (
    atomic_write_parquet,
    backup_path,
    clean_temporary_files,
    empty_row,
    read_dataset,
)
from carb_lib.families.space import CONFIG_COLUMNS, paper_grid
from carb_lib.measure import campaign as cp
from carb_lib.measure.lock import LOCK_NAME, FolderLock, FolderLockedError

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


def write_parts(folder: Path, rows: list) -> Path:
    cp.PartWriter(folder, cp.RESULTS_PREFIX).write(rows)
    return folder


def cli(*args: str):
    return runner.invoke(app, list(args))


def assert_one_line_error(res, *fragments: str, code: int = 1) -> None:
    assert res.exit_code == code, res.output
    out = res.output.strip()
    assert "Traceback" not in out
    assert out.startswith("error:") or out.startswith("internal error:"), out
    assert len(out.splitlines()) == 1, out
    for f in fragments:
        assert f in out, (f, out)


# ---------------------------------------------------------------------------- merge
def test_merge_extends_an_existing_dataset_and_keeps_a_backup(tmp_path, grid):
    out = tmp_path / "data" / "synthetic_cpu.parquet"
    a = write_parts(tmp_path / "a", syn_rows(grid.iloc[:30]))
    assert cli("merge", str(a), str(out)).exit_code == 0
    first = read_dataset(out)
    assert len(first) == 30
    assert stat.S_IMODE(os.stat(out).st_mode) & 0o044  # readable by others, not 0600
    b = write_parts(tmp_path / "b", syn_rows(grid.iloc[25:40], lat=50.0))
    res = cli("merge", str(b), str(out))
    assert res.exit_code == 0, res.output
    merged = read_dataset(out)
    assert len(merged) == 40 and merged["config_id"].is_unique  # 30 + 15 - 5 overlapping
    old = merged.set_index("config_id").loc[grid.config_id.iloc[25:30], "latency_ms"]
    assert (old < 50).all()  # existing ok rows win over later duplicates
    assert len(read_dataset(backup_path(out))) == 30  # the previous version is kept


def test_merge_refuses_another_platform_unless_asked(tmp_path, grid):
    out = tmp_path / "x.parquet"
    cli("merge", str(write_parts(tmp_path / "a", syn_rows(grid.iloc[:5]))), str(out))
    other = write_parts(tmp_path / "b", syn_rows(grid.iloc[5:9], platform="synthetic_gpu"))
    res = cli("merge", str(other), str(out))
    assert_one_line_error(res, "platform mismatch", "synthetic_cpu", "synthetic_gpu")
    assert len(read_dataset(out)) == 5  # untouched
    res = cli("merge", str(other), str(out), "--allow-mixed-platforms")
    assert res.exit_code == 0 and len(read_dataset(out)) == 9


def test_merge_force_overwrites_without_merging(tmp_path, grid):
    out = tmp_path / "x.parquet"
    cli("merge", str(write_parts(tmp_path / "a", syn_rows(grid.iloc[:5]))), str(out))
    res = cli("merge", str(write_parts(tmp_path / "b", syn_rows(grid.iloc[5:7]))), str(out),
              "--force")  # fmt: skip
    assert res.exit_code == 0 and len(read_dataset(out)) == 2


@pytest.mark.parametrize(
    "make_out, fragment",
    [
        (lambda t: t / "folder_out", "is a folder"),
        (lambda t: t / "out.csv", "name it *.parquet"),
        (lambda t: t / "out.txt", "name it *.parquet"),
    ],
)
def test_merge_bad_output(tmp_path, grid, make_out, fragment):
    parts = write_parts(tmp_path / "a", syn_rows(grid.iloc[:3]))
    out = make_out(tmp_path)
    if out.name == "folder_out":
        out.mkdir()
    assert_one_line_error(cli("merge", str(parts), str(out)), fragment)


def test_merge_bad_inputs(tmp_path, grid):
    assert_one_line_error(cli("merge", str(tmp_path / "nope"), str(tmp_path / "o.parquet")),
                          "no such campaign folder")  # fmt: skip
    (tmp_path / "empty").mkdir()
    assert_one_line_error(cli("merge", str(tmp_path / "empty"), str(tmp_path / "o.parquet")),
                          "no results-")  # fmt: skip
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "results-x-000000.parquet").write_bytes(b"not parquet at all")
    assert_one_line_error(cli("merge", str(corrupt), str(tmp_path / "o.parquet")),
                          "cannot read the part files")  # fmt: skip
    parts = write_parts(tmp_path / "a", syn_rows(grid.iloc[:3]))
    bad_existing = tmp_path / "broken.parquet"
    bad_existing.write_bytes(b"garbage")
    assert_one_line_error(cli("merge", str(parts), str(bad_existing)),
                          "cannot read the existing dataset")  # fmt: skip
    assert bad_existing.read_bytes() == b"garbage"  # nothing written half


def test_merge_rejects_invalid_rows_and_writes_nothing(tmp_path, grid):
    rows = syn_rows(grid.iloc[:4])
    rows[2]["latency_ms"] = -1.0
    folder = tmp_path / "p"
    folder.mkdir()
    atomic_write_parquet(pd.DataFrame(rows), folder / "results-x-000000.parquet")
    out = tmp_path / "o.parquet"
    res = cli("merge", str(folder), str(out))
    assert_one_line_error(res, "latency_ms", grid.config_id.iloc[2], "negative")
    assert not out.exists()


# ---------------------------------------------------------------------------- lock
def test_lock_refuses_a_live_holder_and_takes_over_a_stale_one(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (folder / LOCK_NAME).write_text(json.dumps(
            {"pid": sleeper.pid, "host": socket.gethostname(), "since": "then"}))  # fmt: skip
        with pytest.raises(FolderLockedError, match=f"in use by pid {sleeper.pid} on this host"):
            FolderLock(folder).acquire()
    finally:
        sleeper.kill()
        sleeper.wait()
    with FolderLock(folder) as lock:  # the holder is dead now: stale, taken over
        assert lock.took_over["pid"] == sleeper.pid
        assert json.loads((folder / LOCK_NAME).read_text())["pid"] == os.getpid()
    assert not (folder / LOCK_NAME).exists()
    (folder / LOCK_NAME).write_text(json.dumps({"pid": 1, "host": "elsewhere", "since": "x"}))
    with pytest.raises(FolderLockedError, match="host 'elsewhere'"):
        FolderLock(folder).acquire()


def test_profile_on_a_locked_folder_is_refused_before_measuring(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (folder / LOCK_NAME).write_text(json.dumps(
            {"pid": holder.pid, "host": socket.gethostname(), "since": "now"}))  # fmt: skip
        res = cli("profile", "--out", str(folder), "--n-sample", "1", "--no-progress")
    finally:
        holder.kill()
        holder.wait()
    assert_one_line_error(res, "in use by pid", str(holder.pid))
    assert not list(folder.glob("results-*"))


def test_temporary_files_of_a_killed_write_are_cleaned(tmp_path):
    (tmp_path / ".tmp-results-x.parquet.abc").write_bytes(b"half")
    (tmp_path / "results-keep.parquet").write_bytes(b"x")
    removed = clean_temporary_files(tmp_path)
    assert [p.name for p in removed] == [".tmp-results-x.parquet.abc"]
    assert (tmp_path / "results-keep.parquet").exists()


# ---------------------------------------------------------------------------- profile input
@pytest.mark.parametrize(
    "content, fragment",
    [
        ("family,block,depth,width,early_downsample,resolution,batch,precision,num_classes\n"
         "resnet,basic,19,0.5,True,64,8,fp32,1000\n", "row 0"),
        ("config_id,colour\nabc,red\n", "unknown column(s) ['colour']"),
        ("config_id\n0123456789abcdef\n", "not a config of the paper grid"),
        ("config_id\n", "no rows"),
    ],
)  # fmt: skip
def test_profile_configs_file_errors(tmp_path, content, fragment):
    f = tmp_path / "c.csv"
    f.write_text(content)
    out = tmp_path / "out"
    res = cli("profile", "--configs", str(f), "--out", str(out), "--no-progress")
    assert_one_line_error(res, fragment)
    assert not list(out.glob("results-*")) if out.exists() else True


def test_profile_out_is_a_file(tmp_path):
    f = tmp_path / "out"
    f.write_text("x")
    res = cli("profile", "--out", str(f), "--n-sample", "1", "--no-progress")
    assert_one_line_error(res, "is a file")


def test_debug_shows_the_traceback(tmp_path):
    f = tmp_path / "c.csv"
    f.write_text("config_id,colour\nabc,red\n")
    res = runner.invoke(app, ["--debug", "profile", "--configs", str(f), "--out",
                              str(tmp_path / "o"), "--no-progress"])  # fmt: skip
    assert res.exit_code != 0 and res.exception is not None
    assert "unknown column" in str(res.exception)


def test_audit_bad_inputs(tmp_path):
    assert_one_line_error(cli("audit", str(tmp_path / "missing.parquet")), "no such dataset")
    (tmp_path / "bad.parquet").write_bytes(b"nope")
    assert_one_line_error(cli("audit", str(tmp_path / "bad.parquet")))


def test_noise_into_an_output_that_is_a_file(tmp_path, grid):
    f = tmp_path / "out"
    f.write_text("x")
    cfg = tmp_path / "c.csv"
    grid.iloc[[0]][["config_id"]].to_csv(cfg, index=False)
    res = cli("noise", "--configs", str(cfg), "--out", str(f), "--n-configs", "1",
              "--repeats", "1", "--mode", "back_to_back", "--in-process")  # fmt: skip
    assert_one_line_error(res)


@pytest.mark.parametrize(
    "opt, value",
    [("--n-sample", "0"), ("--timeout-s", "0"), ("--timeout-s", "-1"), ("--time-budget-s", "0"),
     ("--threads", "0"), ("--max-gflops", "-2"), ("--ref-every", "-1"), ("--cooldown-s", "-1")],
)  # fmt: skip
def test_profile_option_ranges(tmp_path, opt, value):
    res = cli("profile", "--out", str(tmp_path / "o"), opt, value, "--no-progress")
    assert_one_line_error(res, opt, value)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "old, new", [("--time-budget", "--time-budget-s"), ("--timeout", "--timeout-s"),
                 ("--cooldown", "--cooldown-s")],
)  # fmt: skip
def test_profile_old_option_spellings_warn_and_keep_their_meaning(tmp_path, old, new):
    """The old spelling is hidden, warns in one line, and its value is the new option's (an
    invalid value is refused under the new name)."""
    res = cli("profile", "--out", str(tmp_path / "o"), old, "-5", "--no-progress")
    assert res.exit_code == 1, res.output
    lines = res.output.strip().splitlines()
    assert lines == [f"warning: {old} is deprecated; use {new}",
                     f"error: {new} must be > 0 seconds/GFLOP, got -5.0"]
    help_text = cli("profile", "--help").output
    assert new in help_text and f"{old} " not in help_text.replace(new, "")
    both = cli("profile", "--out", str(tmp_path / "o"), old, "5", new, "6", "--no-progress")
    assert_one_line_error(both, f"{old} and {new} are the same option")


def test_noise_old_spread_gap_spelling(tmp_path):
    res = cli("noise", "--out", str(tmp_path / "o"), "--spread-gap", "-1", "--n-configs", "1")
    assert res.exit_code == 1
    assert res.output.strip().splitlines() == [
        "warning: --spread-gap is deprecated; use --spread-gap-s",
        "error: --spread-gap-s must be >= 0 seconds, got -1.0"]


def test_every_command_goes_through_the_one_error_path():
    from carb_lib.app import cli as cli_mod

    names = sorted(c.name or c.callback.__name__ for c in app.registered_commands)
    assert {"noise", "profile", "merge", "audit", "screen", "fit", "predict", "transfer",
            "convert-help", "reproduce", "readme", "publish"} <= set(names)
    for c in app.registered_commands:
        assert c.callback.__wrapped__ is not None, c.name
    # a command's own code never catches the user errors the error path reports
    import inspect

    src = inspect.getsource(cli_mod)
    body = src.split("def main(", 1)[1]
    assert "except" not in body.split("# every command goes through the one error path")[0]


def test_cli_logging_goes_to_stderr_and_debug_adds_detail(capsys):
    import logging

    from carb_lib.app.cli import configure_logging

    log = logging.getLogger("carb.campaign")
    saved = {n: logging.getLogger(n).level for n in ("carb", "carb_lib")}
    try:
        configure_logging(debug=False)
        configure_logging(debug=False)  # idempotent: one handler
        log.info("progress line")
        log.debug("detail line")
        logging.getLogger("carb_lib.characterize.scaling").info("module logger line")
        err = capsys.readouterr().err.splitlines()
        assert err == ["progress line", "module logger line"]
        configure_logging(debug=True)
        log.debug("detail line")
        assert capsys.readouterr().err.splitlines() == ["detail line"]
    finally:
        for n, level in saved.items():
            logging.getLogger(n).setLevel(level)


# ---------------------------------------------------------------------------- config frames
@pytest.mark.parametrize(
    "change, fragment",
    [
        (dict(width=-0.5), "width=-0.5"),
        (dict(resolution=0), "resolution=0 is outside the valid range"),
        (dict(batch=10**9), "batch=1000000000 is outside"),
        (dict(depth=19), "depth=19 is not valid"),
        (dict(block="wide"), "block='wide' is unknown"),
        (dict(precision="int8"), "precision='int8' is unknown"),
        (dict(family="vit"), "family='vit' is unknown"),
    ],
)
def test_invalid_configs_are_named_by_row(grid, change, fragment):
    from carb_lib.families.space import ConfigError, validate_config_frame

    df = grid.iloc[:5].reset_index(drop=True)
    for k, v in change.items():
        df[k] = df[k].astype(object)
        df.loc[3, k] = v
    with pytest.raises(ConfigError, match="candidates: row 3: "):
        validate_config_frame(df, "candidates")
    try:
        validate_config_frame(df, "candidates")
    except ConfigError as exc:
        assert fragment in str(exc)


def test_off_grid_but_valid_configs_pass_and_large_frames_work(grid):
    from carb_lib.families.space import extended_sample, validate_config_frame

    df = grid.iloc[:3].copy()
    df["resolution"] = [33, 200, 1000]
    df["batch"] = [3, 5, 4000]
    validate_config_frame(df)
    big = extended_sample(100_000, seed=0)
    validate_config_frame(big)  # distinct configs once each
    big.loc[big.index[-1], "resolution"] = 2048
    with pytest.raises(Exception, match=f"row {len(big) - 1}: resolution=2048"):
        validate_config_frame(big)


# ---------------------------------------------------------------------------- fit / predict / screen
@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A quick model fitted through `carb fit` on SYNTHETIC rows."""
    sys.path.insert(0, str(Path(__file__).parent))
    from carb_synthetic import make_carb_synthetic

    d = tmp_path_factory.mktemp("fitted")
    data = make_carb_synthetic(300, seed=2, energy=False, telemetry=False,
                               platform="synthetic_cpu")  # fmt: skip
    data.to_parquet(d / "synthetic_cpu.parquet")
    res = cli("fit", "--data", str(d / "synthetic_cpu.parquet"), "--out", str(d / "m.joblib"),
              "--quick")  # fmt: skip
    assert res.exit_code == 0, res.output
    cfg = data[list(CONFIG_COLUMNS)].head(6).reset_index(drop=True)
    return d, data, cfg


@pytest.mark.parametrize(
    "column, value, fragment",
    [
        ("width", -0.5, "width=-0.5"),
        ("resolution", 0, "resolution=0"),
        ("batch", 10**9, "batch=1000000000"),
        ("block", "wide", "block='wide'"),
        ("precision", "bf8", "precision='bf8'"),
    ],
)
@pytest.mark.parametrize("command", ["predict", "screen"])
def test_out_of_range_configs_are_refused_by_predict_and_screen(fitted, tmp_path, command,
                                                                column, value, fragment):
    d, _, cfg = fitted
    bad = cfg.copy()
    bad[column] = bad[column].astype(object)
    bad.loc[4, column] = value
    f = tmp_path / "c.csv"
    bad.to_csv(f, index=False)
    out = tmp_path / "o.csv"
    if command == "predict":
        res = cli("predict", "--model", str(d / "m.joblib"), "--configs", str(f), "--out", str(out))
    else:
        res = cli("screen", "--model", str(d / "m.joblib"), "--candidates", str(f),
                  "--budget", "latency_ms<=50", "--out", str(out))  # fmt: skip
    assert_one_line_error(res, "row 4", fragment)
    assert not out.exists()


def test_off_grid_configs_are_predicted(fitted, tmp_path):
    d, _, cfg = fitted
    cfg = cfg.copy()
    cfg["resolution"] = 33
    cfg["batch"] = 3
    f = tmp_path / "c.csv"
    cfg.to_csv(f, index=False)
    res = cli("predict", "--model", str(d / "m.joblib"), "--configs", str(f), "--out",
              str(tmp_path / "o.csv"))  # fmt: skip
    assert res.exit_code == 0, res.output
    assert len(pd.read_csv(tmp_path / "o.csv")) == 6


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda p, c: c.to_parquet(p.with_suffix(".csv")) or p.with_suffix(".csv"),
         "looks like a Parquet file"),
        (lambda p, c: (p.with_suffix(".txt").write_text("a,b\n1,2\n"), p.with_suffix(".txt"))[1],
         "unsupported suffix '.txt'"),
        (lambda p, c: (p.with_suffix(".csv").write_text(""), p.with_suffix(".csv"))[1],
         "cannot read as csv"),
        (lambda p, c: c.head(0).to_csv(p.with_suffix(".csv"), index=False)
         or p.with_suffix(".csv"), "no rows"),
        (lambda p, c: p.parent / "missing.csv", "no such file"),
    ],
)  # fmt: skip
def test_predict_bad_config_files(fitted, tmp_path, make, fragment):
    d, _, cfg = fitted
    f = make(tmp_path / "c", cfg)
    res = cli("predict", "--model", str(d / "m.joblib"), "--configs", str(f), "--out",
              str(tmp_path / "o.csv"))  # fmt: skip
    assert_one_line_error(res, fragment)


@pytest.mark.parametrize(
    "out, fragment",
    [("pred.txt", "unsupported suffix '.txt'"), ("folder.csv", "is a folder")],
)
def test_predict_bad_outputs(fitted, tmp_path, out, fragment):
    d, _, cfg = fitted
    f = tmp_path / "c.csv"
    cfg.to_csv(f, index=False)
    if out == "folder.csv":
        (tmp_path / out).mkdir()
    res = cli("predict", "--model", str(d / "m.joblib"), "--configs", str(f), "--out",
              str(tmp_path / out))  # fmt: skip
    assert_one_line_error(res, fragment)


def test_predict_with_a_file_that_is_not_a_model(fitted, tmp_path):
    _, _, cfg = fitted
    f = tmp_path / "c.csv"
    cfg.to_csv(f, index=False)
    junk = tmp_path / "m.joblib"
    junk.write_bytes(b"not a model")
    res = cli("predict", "--model", str(junk), "--configs", str(f), "--out", str(tmp_path / "o.csv"))
    assert res.exit_code in (1, 2) and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "mutate, fragment",
    [
        (lambda d: d.assign(latency_ms=d.latency_ms.where(d.index != 7, 0.0)), "row 7"),
        (lambda d: d.assign(latency_ms=d.latency_ms.where(d.index != 9, np.inf)), "inf"),
        (lambda d: d.assign(peak_mem_mib=d.peak_mem_mib.where(d.index != 3, -0.5)), "-0.5"),
        (lambda d: d.assign(latency_ms=d.latency_ms.astype(object).where(d.index != 5, "fast")),
         "'fast' is not a number"),
        (lambda d: pd.concat([d, d.iloc[:4]], ignore_index=True), "is duplicated"),
        (lambda d: d.assign(depth=d.depth.where(d.index != 2, 19)), "depth=19"),
    ],
)  # fmt: skip
def test_fit_refuses_bad_measurements(fitted, tmp_path, mutate, fragment):
    _, data, _ = fitted
    bad = mutate(data.reset_index(drop=True).copy())
    f = tmp_path / "bad.parquet" if bad["latency_ms"].dtype != object else tmp_path / "bad.csv"
    bad.to_parquet(f) if f.suffix == ".parquet" else bad.to_csv(f, index=False)
    res = cli("fit", "--data", str(f), "--out", str(tmp_path / "m.joblib"), "--quick")
    assert_one_line_error(res, fragment)
    assert not (tmp_path / "m.joblib").exists()


def test_screen_drops_duplicate_candidates(fitted, tmp_path):
    d, data, _ = fitted
    cands = data[list(CONFIG_COLUMNS)].head(40)
    f = tmp_path / "c.parquet"
    pd.concat([cands, cands.head(10)]).to_parquet(f)
    out = tmp_path / "sl.csv"
    res = cli("screen", "--model", str(d / "m.joblib"), "--candidates", str(f),
              "--budget", "latency_ms<=1e9", "--k", "40", "--out", str(out))  # fmt: skip
    assert res.exit_code == 0, res.output
    sl = pd.read_csv(out)
    assert sl["config_id"].is_unique


# ---------------------------------------------------------------------------- GPU campaign helpers
def test_anchor_summary_and_counter_ratio():
    from carb_lib.measure.gpu_campaign import anchor_summary, counter_vs_integrated

    s = anchor_summary({"status": "ok", "batch": 256, "latency_ms": 25.6, "energy_j": 2.56})
    assert s["images_per_s"] == pytest.approx(10_000) and s["mj_per_image"] == pytest.approx(10)
    assert s["verdict"] == "plausible"
    s = anchor_summary({"status": "ok", "batch": 256, "latency_ms": 1.0, "energy_j": 0.256})
    assert "outside" in s["verdict"] and "suspect" in s["verdict"]  # 256k img/s, 1 mJ/img
    assert anchor_summary({"status": "oom", "error": "x"}) == {"status": "oom", "error": "x"}
    rows = pd.DataFrame({"status": ["ok", "ok", "error"], "energy_j": [1.0, 2.0, np.nan],
                         "n_iters": [100, 100, 1], "power_sampled_w": [200.0, 400.0, 1.0],
                         "window_s": [0.5, 0.5, 1.0]})  # fmt: skip
    r = counter_vs_integrated(rows)
    assert r["n"] == 2 and r["median"] == pytest.approx(1.0)
    assert counter_vs_integrated(None) == {"n": 0}


def test_a_family_the_model_never_saw_goes_to_its_transfer_model_or_is_refused(fitted,
                                                                               tmp_path):
    from carb_lib.ensemble import load_model, save_model

    d, _, _ = fitted
    f = tmp_path / "nb.csv"
    pd.DataFrame([{"family": "nb201", "arch": "|nor_conv_3x3~0|+|nor_conv_3x3~0|skip_connect~1|"
                   "+|nor_conv_3x3~0|skip_connect~1|avg_pool_3x3~2|", "resolution": 32,
                   "batch": 8, "precision": "fp32", "num_classes": 10}]).to_csv(f, index=False)
    res = cli("predict", "--model", str(d / "m.joblib"), "--configs", str(f), "--out",
              str(tmp_path / "o.csv"))  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "0 row(s) by the fitted model (families ['resnet']), 1 by its transfer model" \
        in res.output
    assert pd.read_csv(tmp_path / "o.csv")["predicted_by"].tolist() == ["transfer model"]
    # a model without a transfer model (fitted in Python) still refuses the family in one line
    m = load_model(d / "m.joblib")
    del m.transfer_model_
    save_model(m, tmp_path / "plain.skops")
    res = cli("predict", "--model", str(tmp_path / "plain.skops"), "--configs", str(f), "--out",
              str(tmp_path / "o2.csv"))  # fmt: skip
    assert_one_line_error(res, "row 0", "family 'nb201' was never seen", "['resnet']")


@pytest.mark.parametrize(
    "text, fragment",
    [("profiles: [unclosed", "not valid YAML"), ("- just\n- a list\n", "must be a mapping"),
     ("profiles:\n  quick:\n    - parameters: {}\n", "has no 'notebook'")],
)
def test_malformed_run_list(tmp_path, text, fragment):
    f = tmp_path / "runs.yaml"
    f.write_text(text)
    res = cli("reproduce", "--profile", "quick", "--runs-file", str(f), "--run-dir",
              str(tmp_path / "r"))  # fmt: skip
    assert_one_line_error(res, fragment)
