"""--timeout-s is a real wall-clock cap: a user module whose build or forward never returns
is a timeout, not a hang, and the campaign folder's lock is released (carb_lib.measure.watchdog)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from carb_lib.app.cli import app
from carb_lib.measure.lock import LOCK_NAME
from carb_lib.measure.protocol import ConfigTimeoutError
from carb_lib.measure.watchdog import HARD_EXIT_CODE, wall_clock_cap

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()

HANGING = textwrap.dedent('''
    import time

    import torch
    from torch import nn


    class Stuck(nn.Module):
        """A conv whose forward never returns when timed (in inference mode; CARB's one
        forward on the meta device that measures it returns)."""

        def __init__(self, always=False):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)
            self.always = always

        def forward(self, x):
            while self.always or torch.is_inference_mode_enabled():
                time.sleep(0.01)
            return self.conv(x)


    def always():
        return Stuck(always=True)


    def on_real_tensors():
        return Stuck()


    def build_never_returns():
        while True:
            time.sleep(0.01)
''')


@pytest.fixture
def stuck(tmp_path) -> Path:
    path = tmp_path / "stuck.py"
    path.write_text(HANGING)
    return path


def test_predict_with_a_module_that_never_returns_is_one_line(tmp_path, stuck):
    t0 = time.monotonic()
    res = runner.invoke(app, ["predict", "--model", str(tmp_path / "unused.joblib"),
                              "--module", f"{stuck}:always", "--input-shape", "3,8,8",
                              "--out", str(tmp_path / "p.csv"), "--timeout-s", "1"])
    assert res.exit_code == 1, res.output
    assert "--timeout-s 1 s" in res.output and len(res.output.strip().splitlines()) == 1
    assert time.monotonic() - t0 < 30


def test_profile_caps_a_forward_that_never_returns_and_releases_the_lock(tmp_path, stuck):
    out = tmp_path / "camp"
    t0 = time.monotonic()
    res = runner.invoke(app, ["profile", "--out", str(out), "--module",
                              f"{stuck}:on_real_tensors", "--input-shape", "3,8,8",
                              "--timeout-s", "5", "--ref-every", "0", "--no-progress",
                              "--threads", "1"])  # fmt: skip  (5 s: a cold first build)
    assert res.exit_code == 0, res.output
    assert time.monotonic() - t0 < 60
    rows = pd.concat([pd.read_parquet(p) for p in out.glob("results-*.parquet")])
    assert rows["status"].tolist() == ["error"]
    assert rows["error"].iloc[0].startswith("timeout") and "cap 5.0 s" in rows["error"].iloc[0]
    assert not (out / LOCK_NAME).exists()


def test_profile_module_build_that_never_returns_is_one_line(tmp_path, stuck):
    res = runner.invoke(app, ["profile", "--out", str(tmp_path / "camp"), "--module",
                              f"{stuck}:build_never_returns", "--input-shape", "3,8,8",
                              "--timeout-s", "1", "--no-progress"])  # fmt: skip
    assert res.exit_code == 1 and "--timeout-s 1 s" in res.output, res.output


def test_the_cap_raises_in_python_code_and_restores_an_enclosing_timer():
    seen = []
    old = signal.signal(signal.SIGALRM, lambda *a: seen.append("outer"))
    try:
        signal.setitimer(signal.ITIMER_REAL, 100.0)
        with pytest.raises(ConfigTimeoutError, match="during a loop"):
            with wall_clock_cap(0.2, "a loop"):
                while True:
                    time.sleep(0.01)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 90 < left <= 100 and not seen  # the outer timer runs on, untouched
        with wall_clock_cap(5.0, "a quick block"):
            pass
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 90
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_code_stuck_past_the_cap_ends_the_process_and_releases_the_lock(tmp_path):
    script = textwrap.dedent(f'''
        import signal, time
        from carb_lib.measure.lock import FolderLock
        from carb_lib.measure.watchdog import wall_clock_cap

        with FolderLock({str(tmp_path)!r}):
            with wall_clock_cap(0.3, "a native call", grace_s=0.5):
                signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGALRM}})  # as C code would
                time.sleep(60)
    ''')
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=ROOT, timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin"})
    assert res.returncode == HARD_EXIT_CODE, res.stderr
    assert "a native call did not return" in res.stderr and "lock is released" in res.stderr
    assert not (tmp_path / LOCK_NAME).exists()
    assert time.monotonic() - t0 < 30


def test_a_config_stuck_past_the_cap_is_recorded_so_that_a_resumed_campaign_goes_on(tmp_path):
    script = textwrap.dedent(f'''
        import signal, time
        from carb_lib.measure import campaign
        from carb_lib.measure.profiling import Protocol
        from carb_lib.families.space import paper_grid
        from carb_lib.measure.watchdog import wall_clock_cap

        def stuck(config, dev, protocol, idle_power_w=None):
            with wall_clock_cap(0.3, "timing the config", grace_s=0.5):
                signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGALRM}})  # as C code would
                time.sleep(60)

        campaign.profile_config = stuck
        campaign.run_campaign(paper_grid().head(1), {str(tmp_path / "camp")!r}, "cpu",
                              Protocol(threads=1, timeout_s=0.3), platform="synthetic_cpu",
                              ref_every=0, progress=False)
    ''')
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin"})
    assert res.returncode == HARD_EXIT_CODE, res.stderr
    camp = tmp_path / "camp"
    assert not (camp / LOCK_NAME).exists()
    rows = pd.concat([pd.read_parquet(p) for p in camp.glob("results-*.parquet")])
    assert rows["status"].tolist() == ["error"] and "stuck in native code" in rows["error"].iloc[0]
    from carb_lib.measure.campaign import done_ids

    assert done_ids(camp, "synthetic_cpu") == set(rows["config_id"])  # a resume goes past it
