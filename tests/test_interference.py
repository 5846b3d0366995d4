"""Interference detection: the window policy on scripted windows, the /proc/stat reader on a
fake file, the quality columns of a real CPU row, a row measured under (simulated) constant
interference, NVML interference queries on a fake pynvml, and config lists (--configs)."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
import types

import numpy as np
import pandas as pd
import pytest

from carb_lib.dataset.schema import conform, validate
from carb_lib.families.space import ResNetConfig, paper_grid
from carb_lib.measure import interference as itf
from carb_lib.measure import profiling as pf
from carb_lib.measure.campaign import ConfigListError, read_config_list

TINY = dict(block="basic", depth=8, width=0.1, early_downsample=True, resolution=32, batch=1,
            precision="fp32")


def win(median: float, share: float = 1.0, other: float = 0.0) -> itf.Window:
    return itf.Window(np.full(5, median), 0.1, share=share, other_busy=other)


def scripted(windows: list[itf.Window]):
    it = iter(windows)
    return lambda: next(it)


class Sleeps(list):
    def __call__(self, s: float) -> None:
        self.append(s)


def test_clean_when_first_windows_agree():
    sleeps = Sleeps()
    r = itf.run_windows(scripted([win(10), win(10.1), win(10.05)]), itf.WindowPolicy(),
                        sleep=sleeps)  # fmt: skip
    assert r.quality == "clean" and r.n_windows == 3 and r.n_rejected == 0
    assert sleeps == [] and r.reasons == []
    assert r.times_ms.size == 15 and r.wall_s == pytest.approx(0.3)
    c = r.columns()
    assert c["quality"] == "clean" and c["cpu_share"] == 1.0 and c["other_busy"] == 0.0
    assert c["latency_window_cv"] == pytest.approx(np.std([10, 10.1, 10.05], ddof=1) / 10.05)


def test_low_cpu_share_is_rejected_with_backoff():
    sleeps = Sleeps()
    ws = [win(30, share=0.5), win(31, share=0.6), win(10), win(10), win(10)]
    r = itf.run_windows(scripted(ws), itf.WindowPolicy(backoff_s=0.05), sleep=sleeps)
    assert r.quality == "retried" and r.n_windows == 5 and r.n_rejected == 2
    assert sleeps == [0.05, 0.1]  # doubled after each further disturbed window
    assert all("cpu share" in x for x in r.reasons)
    assert [w.median_ms for w in r.used] == [10, 10, 10]


def test_other_load_is_rejected():
    ws = [win(20, other=0.9), win(10), win(10), win(10)]
    r = itf.run_windows(scripted(ws), itf.WindowPolicy(), sleep=Sleeps())
    assert r.quality == "retried" and r.n_rejected == 1
    assert r.reasons and r.reasons[0].startswith("other load 0.90")


def test_disagreeing_windows_need_more_and_the_outlier_is_left_out():
    ws = [win(10), win(13), win(10.1), win(10.05)]
    r = itf.run_windows(scripted(ws), itf.WindowPolicy(max_window_spread=0.03), sleep=Sleeps())
    assert r.quality == "retried" and r.n_windows == 4 and r.n_rejected == 1
    assert sorted(w.median_ms for w in r.used) == [10, 10.05, 10.1]


def test_limit_reached_keeps_the_row_flagged_disturbed():
    ws = [win(10 + i, share=0.5 + 0.01 * i) for i in range(5)]
    r = itf.run_windows(scripted(ws), itf.WindowPolicy(n_windows=2, max_windows=5),
                        sleep=Sleeps())  # fmt: skip
    assert r.quality == "disturbed" and r.n_windows == 5 and r.n_rejected == 3
    # none accepted: the windows with the highest CPU share are used
    assert sorted(w.median_ms for w in r.used) == [13, 14]
    # accepted but never agreeing: the closest pair is used, the reason says why
    ws = [win(10), win(12), win(14.5), win(17.5)]
    r = itf.run_windows(scripted(ws), itf.WindowPolicy(n_windows=2, max_windows=4),
                        sleep=Sleeps())  # fmt: skip
    assert r.quality == "disturbed" and [w.median_ms for w in r.used] == [10, 12]
    assert "disagree" in r.reasons[-1]


def test_deadline_check_is_called_between_windows():
    calls = []

    def check():
        calls.append(1)
        if len(calls) == 2:
            raise TimeoutError("cap")

    with pytest.raises(TimeoutError):
        itf.run_windows(scripted([win(10), win(20), win(30)] * 3),
                        itf.WindowPolicy(max_window_spread=0.0), deadline_check=check,
                        sleep=Sleeps())  # fmt: skip


@pytest.mark.parametrize(
    "kw, msg",
    [
        (dict(n_windows=0), "n_windows"),
        (dict(n_windows=4, max_windows=3), "max_windows"),
        (dict(min_cpu_share=1.5), "min_cpu_share"),
        (dict(max_window_spread=-0.1), "max_window_spread"),
    ],
)
def test_policy_validation(kw, msg):
    with pytest.raises(ValueError, match=msg):
        itf.WindowPolicy(**kw)


def test_machine_busy_and_other_load_from_a_fake_proc_stat(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    tck = itf._CLK_TCK
    # user nice system idle iowait irq softirq steal
    stat.write_text(f"cpu  {tck} 0 {tck} 500 7 0 0 {tck}\ncpu0 1 1 1 1\n")
    assert itf.machine_busy_s(str(stat)) == pytest.approx(3.0)  # idle/iowait not counted
    assert math.isnan(itf.machine_busy_s(str(tmp_path / "missing")))
    clock = iter([100.0, 100.5])  # perf_counter: a 0.5 s window
    pclock = iter([1.0, 1.5])  # this process used 0.5 s of CPU
    monkeypatch.setattr(itf.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(itf.time, "process_time", lambda: next(pclock))
    ol = itf.OtherLoad(str(stat), cores=2)
    ol.start()
    # the machine was busy 0.9 s in that window: 0.5 s ours, 0.4 s another process's
    stat.write_text(f"cpu  {tck} 0 {tck + int(0.9 * tck)} 500 7 0 0 {tck}\n")
    assert ol.stop() == pytest.approx(0.4 / 0.5)


def test_cpu_row_carries_quality_and_provenance():
    row = pf.profile_config(ResNetConfig(**TINY), "cpu", pf.Protocol(threads=1))
    validate(conform(pd.DataFrame([row])), require_features=False)
    assert row["status"] == "ok", row["error"]
    assert row["quality"] in itf.QUALITIES
    policy = pf.Protocol(threads=1).policy()
    assert 3 <= row["n_windows"] <= policy.max_windows
    if row["quality"] in ("clean", "retried"):  # the last 3 windows taken were the ones used
        assert row["n_rejected"] == row["n_windows"] - 3
    else:  # disturbed: the window limit was reached; the row keeps its best estimate
        assert row["n_windows"] == policy.max_windows
        assert row["n_windows"] - 3 <= row["n_rejected"] <= row["n_windows"]
    assert row["n_iters"] >= 6 and np.isfinite(row["latency_window_cv"])
    # cpu_share is the lowest share among the used windows: a clean or retried row used only
    # accepted windows (share >= min_cpu_share); a disturbed one may hold less (a busy host)
    assert 0 < row["cpu_share"] < 1.1 and np.isfinite(row["load_1m"])
    if row["quality"] in ("clean", "retried"):
        assert row["cpu_share"] >= policy.min_cpu_share
    assert row["carb_version"] and row["mkldnn_enabled"] in (True, False)
    assert row["git_commit"] is None or len(row["git_commit"]) == 40
    assert row["deterministic"] is False


def test_constant_interference_gives_a_disturbed_row_not_a_lost_one(monkeypatch):
    monkeypatch.setattr(pf.OtherLoad, "stop", lambda self: 0.99)
    proto = pf.Protocol(threads=1, cpu_min_window_s=0.01, max_windows=4, backoff_s=0.001)
    row = pf.profile_config(ResNetConfig(**TINY), "cpu", proto)
    assert row["status"] == "ok" and row["quality"] == "disturbed"
    assert row["n_windows"] == 4 and row["n_rejected"] == 1
    assert row["other_busy"] == pytest.approx(0.99) and row["latency_ms"] > 0


# ---------------------------------------------------------------------------- NVML
def _fake_nvml(procs, throttle=0x4, has_throttle=True):
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from test_telemetry import make_fake_pynvml

    m = make_fake_pynvml()
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: [
        types.SimpleNamespace(pid=p, usedGpuMemory=1) for p in procs
    ]
    if has_throttle:
        m.nvmlDeviceGetCurrentClocksEventReasons = lambda h: throttle
    return m


@pytest.mark.parametrize(
    "procs, expected",
    [([1234], 0), ([1234, 99], 1), ([7, 8], 1), ([], 0), ([1234, 5, 6], 2)],
)
def test_other_compute_processes(monkeypatch, procs, expected):
    from carb_lib.measure import telemetry as tm

    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml(procs))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    dev = tm.NvmlDevice(0)
    assert dev.other_compute_processes(pid=1234) == expected
    assert dev.throttle_reasons() == 0x4


def test_throttle_reasons_missing_api_is_nan(monkeypatch):
    from carb_lib.measure import telemetry as tm

    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml([1], has_throttle=False))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert math.isnan(tm.NvmlDevice(0).throttle_reasons())


# ---------------------------------------------------------------------------- --configs
@pytest.fixture(scope="module")
def grid():
    return paper_grid()


def test_config_list_by_ids_and_by_columns(tmp_path, grid):
    ids = grid.config_id.iloc[[5, 900, 17000]]
    p = tmp_path / "ids.csv"
    ids.to_frame().to_csv(p, index=False)
    out = read_config_list(p)
    assert list(out.config_id) == list(ids) and out.depth.notna().all()
    p2 = tmp_path / "cols.parquet"
    grid.iloc[[5, 900]].to_parquet(p2)
    assert list(read_config_list(p2).config_id) == list(grid.config_id.iloc[[5, 900]])


@pytest.mark.parametrize(
    "mutate, msg",
    [
        (lambda d: d.assign(colour="red"), r"unknown column\(s\) \['colour'\]"),
        (lambda d: d.assign(depth=[18, 19]), r"row 1: .*depth"),
        (lambda d: d.assign(width=[0.5, -0.5]), r"row 1: .*width"),
        (lambda d: pd.concat([d, d.iloc[[0]]]), r"row 2: config_id .* is duplicated"),
        (lambda d: d.assign(config_id=["0" * 16, d.config_id.iloc[1]]), "row 0, column 'config_id'"),
        (lambda d: d.iloc[:0], "no rows"),
        (lambda d: d[["config_id"]].assign(config_id=["abc", "def"]), "not a config of the paper"),
    ],
)
def test_config_list_errors_name_row_and_column(tmp_path, grid, mutate, msg):
    p = tmp_path / "bad.csv"
    mutate(grid.iloc[[0, 1]].copy()).to_csv(p, index=False)
    with pytest.raises(ConfigListError, match=msg):
        read_config_list(p)


def test_config_list_wrong_suffix_and_misnamed_file(tmp_path, grid):
    p = tmp_path / "x.txt"
    p.write_text("a")
    with pytest.raises(ConfigListError, match="unsupported suffix '.txt'"):
        read_config_list(p)
    q = tmp_path / "really_parquet.csv"
    grid.iloc[[0]].to_parquet(q)
    with pytest.raises(ConfigListError, match="cannot read as csv"):
        read_config_list(q)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_code_dirty_counts_code_not_the_data_a_campaign_appends_to(tmp_path):
    """A campaign appends to tracked data files while it measures (anchor campaigns); the rows'
    ``git_dirty`` says whether the measuring *code* differed from its commit."""
    from carb_lib.measure.interference import code_dirty

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    for rel in ("carb_lib/x.py", "data/kernels/a.parquet", "results/r.csv", "figures/f.png"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("0\n")
    git("add", "-A")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c")
    assert code_dirty(tmp_path) is False
    for rel in ("data/kernels/a.parquet", "results/r.csv", "figures/f.png"):
        (tmp_path / rel).write_text("1\n")
    (tmp_path / "carb_lib" / "new.py").write_text("untracked\n")
    assert code_dirty(tmp_path) is False
    (tmp_path / "carb_lib" / "x.py").write_text("1\n")
    assert code_dirty(tmp_path) is True
    assert code_dirty(tmp_path / "not-a-repo") is None
