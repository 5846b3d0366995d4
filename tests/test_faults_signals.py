"""Faults a user causes with the keyboard or an empty file: Ctrl-C (SIGINT) in the middle of a
`carb profile` campaign, and an empty query in `carb transfer`.

Each case asserts the exit code, the message, and that no file is half-written or lost.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from fast_protocol import FAST_SETTINGS

from carb_lib.measure import campaign as cp

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
CARB = [sys.executable, "-m", "carb_lib.app.cli"]


@pytest.fixture(scope="module")
def configs_file(tmp_path_factory) -> Path:
    """10 configs of at most 20 MFLOP (whole batch), as a config list for ``--configs``."""
    cfg = cp.sample_configs(10, seed=5, max_gflops=0.02, sample_under_cap=True)
    path = tmp_path_factory.mktemp("cfg") / "configs.parquet"
    cfg.to_parquet(path)
    return path


#: Short windows (20 ms), interference detector off (`--protocol`): these tests are about
#: signals and bookkeeping, not timing; the study's protocol takes ~10 s per config here.
FAST = json.dumps({**FAST_SETTINGS, "cpu_min_window_s": 0.02})


def _profile_cmd(configs: Path, out: Path) -> list[str]:
    return [*CARB, "profile", "--device", "cpu", "--platform", "synthetic_cpu", "--threads", "1",
            "--configs", str(configs), "--out", str(out), "--no-progress", "--seed", "0",
            "--ref-every", "4", "--protocol", FAST]


def _default_sigint() -> None:
    """In the child, before exec: SIGINT back to its default disposition and unblocked.

    A process inherits an *ignored* SIGINT and a blocked signal mask across ``exec`` (a job
    started with ``&`` from a script, or a parent whose libraries changed them), and Python
    then installs no KeyboardInterrupt handler: Ctrl-C does nothing and the campaign runs to
    its end with exit 0. A user's Ctrl-C arrives with the default disposition; so must ours."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _sigint_state(pid: int) -> str:
    """The SigIgn / SigBlk / SigCgt lines of ``/proc/PID/status`` (for a failure message)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return "(no /proc)"
    return "; ".join(ln for ln in lines if ln.startswith(("SigIgn", "SigBlk", "SigCgt")))


def test_sigint_mid_campaign_keeps_every_written_row_and_resumes(tmp_path, configs_file):
    out = tmp_path / "parts"
    proc = subprocess.Popen(_profile_cmd(configs_file, out), env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)
    state = ""
    try:
        t_end = time.time() + 120
        while time.time() < t_end and proc.poll() is None:
            if len(list(out.glob("results-*.parquet"))) >= 2:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "campaign finished before it could be interrupted"
        state = _sigint_state(proc.pid)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, f"an interrupted campaign must not exit 0 (child {state})"
    assert "Traceback" not in err, err
    before = cp.read_parts(out, cp.RESULTS_PREFIX)
    assert 2 <= len(before) < 10 and before["config_id"].is_unique
    # every part file is a complete Parquet file; no temporary file is left behind
    for part in out.glob("results-*.parquet"):
        pd.read_parquet(part)
    stamps = dict(zip(before["config_id"], before["measured_at"], strict=True))

    done = subprocess.run(_profile_cmd(configs_file, out), env=ENV, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    after = cp.read_parts(out, cp.RESULTS_PREFIX)
    want = set(pd.read_parquet(configs_file)["config_id"])
    assert len(after) == 10 and after["config_id"].is_unique and set(after["config_id"]) == want
    for cid, ts in stamps.items():  # rows written before Ctrl-C are untouched
        assert after.loc[after["config_id"] == cid, "measured_at"].iloc[0] == ts
    assert not list(out.glob(".tmp-*")), "temporary files left after the resumed run"
    written = json.loads((out / "protocol.json").read_text())  # the --protocol settings used
    assert written["cpu_min_window_s"] == 0.02 and written["threads"] == 1
    assert written["n_windows"] == 3  # untouched fields keep the study's values


@pytest.mark.parametrize("bad, message", [
    ('{"max_windows": 2.5}', "field 'max_windows' must be of type int, got 2.5"),
    ('{"cpu_window": 1}', "unknown field(s) ['cpu_window']"),
    ('{"threads": 2}', "with their own options"),
    ("{cpu_min_window_s: 1}", "not valid JSON"),
    ("no_such.json", "neither a JSON object nor a .json file"),
])
def test_bad_protocol_settings_are_one_line_and_write_nothing(tmp_path, configs_file, bad,
                                                             message):
    out = tmp_path / "parts"
    cmd = [*_profile_cmd(configs_file, out)[:-1], bad]
    res = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: --protocol:"), res.stderr
    assert message in lines[0]
    assert not out.exists()


def test_transfer_with_empty_query_is_one_line_and_writes_nothing(tmp_path):
    data = pd.read_parquet(ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "rows.parquet")
    ok = data[data["status"] == "ok"]
    src, tgt = tmp_path / "src.parquet", tmp_path / "tgt.parquet"
    ok.head(200).to_parquet(src)
    ok.tail(10).assign(platform="other_cpu").to_parquet(tgt)
    query = tmp_path / "query.csv"
    ok.head(0)[["config_id", "family", "block", "depth", "width", "early_downsample",
                "resolution", "batch", "precision", "num_classes"]].to_csv(query, index=False)
    out = tmp_path / "pred.csv"
    res = subprocess.run([*CARB, "transfer", "--source", str(src), "--target-samples", str(tgt),
                          "--query", str(query), "--out", str(out)],
                         env=ENV, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), res.stderr
    assert "query.csv" in lines[0] and "no rows" in lines[0]
    assert not out.exists()


def test_profile_says_how_to_stop_it_when_sigint_is_ignored(tmp_path, configs_file):
    """Started with SIGINT ignored (a background job), `carb profile` names the way to stop it
    once it starts measuring; with the default disposition it says nothing of the kind; and bad
    input stays one line either way (the note comes after every check)."""

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    one = tmp_path / "one.parquet"
    pd.read_parquet(configs_file).iloc[:1].to_parquet(one)
    runs = {}
    for name, preexec in (("ignored", ignore_sigint), ("default", _default_sigint)):
        cmd = [*_profile_cmd(one, tmp_path / name), "--ref-every", "0"]
        runs[name] = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=300,
                                    preexec_fn=preexec)
        assert runs[name].returncode == 0, runs[name].stderr
        assert len(cp.done_ids(tmp_path / name, "synthetic_cpu")) == 1
    assert "Ctrl-C (SIGINT) is ignored" in runs["ignored"].stderr
    assert "kill " in runs["ignored"].stderr
    assert "SIGINT" not in runs["default"].stderr, runs["default"].stderr
    # bad input (an unknown cluster) with SIGINT ignored: the error line alone, nothing written
    bad = [*_profile_cmd(configs_file, tmp_path / "bad"), "--cluster", "nowhere:1"]
    res = subprocess.run(bad, env=ENV, capture_output=True, text=True, timeout=120,
                         preexec_fn=ignore_sigint)
    assert res.returncode == 1, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), res.stderr
    assert not (tmp_path / "bad").exists()
