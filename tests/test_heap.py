"""``carb_lib.measure.heap``: glibc's heap kept (``Protocol(cpu_keep_heap=True)``) and the minor page
faults a CPU row records per timed call (``minor_faults_per_call``)."""

from __future__ import annotations

import ctypes
import os
import platform
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import carb_lib.measure.devices as devices
import carb_lib.measure.heap as heap
from carb_lib.measure.protocol import Protocol, protocol_settings

ROOT = Path(__file__).resolve().parents[1]
GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


class FakeLibc:
    """A C library whose ``mallopt`` records its calls and answers ``answer``."""

    def __init__(self, answer: int = 1):
        self.calls: list[tuple[int, int]] = []
        self.answer = answer

    def mallopt(self, param: ctypes.c_int, value: ctypes.c_int) -> int:
        self.calls.append((param.value, value.value))
        return self.answer


@pytest.fixture
def fresh(monkeypatch):
    """A process whose heap has not been kept yet (the flag is process-wide)."""
    monkeypatch.setattr(heap, "_KEPT", False)


def test_keep_heap_turns_off_mmap_then_trimming_once(fresh):
    lib = FakeLibc()
    heap.keep_heap(lib)
    assert lib.calls == [(-4, 0), (-1, -1)]  # M_MMAP_MAX 0, M_TRIM_THRESHOLD -1
    assert heap.heap_kept()
    heap.keep_heap(lib)  # once per process
    assert len(lib.calls) == 2


def test_keep_heap_refuses_a_c_library_without_mallopt_in_one_line(fresh):
    with pytest.raises(heap.HeapSettingError, match="needs glibc's mallopt") as err:
        heap.keep_heap(object())
    assert "\n" not in str(err.value) and not heap.heap_kept()


def test_keep_heap_names_the_refused_setting(fresh):
    with pytest.raises(heap.HeapSettingError, match=r"mallopt\(M_MMAP_MAX, 0\) was refused"):
        heap.keep_heap(FakeLibc(answer=0))
    assert not heap.heap_kept()


def test_the_cpu_device_keeps_the_heap_only_when_the_protocol_asks(monkeypatch):
    calls = []
    monkeypatch.setattr(devices, "keep_heap", lambda: calls.append(1))
    dev = devices.CpuDevice()
    dev.setup(Protocol(cpu_keep_heap=False))
    assert calls == []
    dev.setup(Protocol())  # kept by default since 2026-12-03 (a measured test (docs/experiments.md))
    assert calls == [1]


def test_the_protocol_json_takes_cpu_keep_heap_as_a_bool():
    assert protocol_settings('{"cpu_keep_heap": true}') == {"cpu_keep_heap": True}
    with pytest.raises(ValueError, match="'cpu_keep_heap' must be of type bool"):
        protocol_settings('{"cpu_keep_heap": 1}')


def test_a_row_records_the_windows_faults_per_timed_call(monkeypatch):
    """Each read of the fault counter adds 1,000: every window's faults are 1,000 (the counter
    is read at its start and end), so the row holds 1,000 x used windows / timed calls."""
    from carb_lib.families.space import ResNetConfig
    from carb_lib.measure.profiling import profile_config

    count = iter(range(0, 10**9, 1000))
    monkeypatch.setattr(devices, "minor_faults", lambda: next(count))
    cfg = ResNetConfig(block="basic", depth=10, width=0.25, early_downsample=True,
                       resolution=32, batch=1, precision="fp32")
    row = profile_config(cfg, "cpu", Protocol(n_windows=2, max_windows=2, cpu_min_window_s=0.01,
                                               cpu_min_iters=3, min_cpu_share=0.0,
                                               max_other_busy=100.0, max_window_spread=10.0,
                                               threads=1))
    assert row["status"] == "ok", row["error"]
    used = row["n_windows"] - row["n_rejected"]
    assert used == 2
    assert row["minor_faults_per_call"] == pytest.approx(1000 * used / row["n_iters"])


_CHILD = """
import sys, torch
from carb_lib.measure.heap import keep_heap, minor_faults
if sys.argv[1] == "keep":
    keep_heap()
x = torch.randn(1, 64, 224, 224)
conv = torch.nn.Conv2d(64, 256, 3, padding=1)  # a 49 MiB output, past glibc's 32 MiB mmap bound
out = []
with torch.inference_mode():
    for _ in range(6):
        f0 = minor_faults()
        y = conv(x)
        del y
        out.append(minor_faults() - f0)
print(*out)
"""


def _faults_per_call(mode: str) -> list[int]:
    r = subprocess.run([sys.executable, "-c", _CHILD, mode], capture_output=True, text=True,
                       timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    return [int(v) for v in r.stdout.split()]


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt only")
def test_a_kept_heap_stops_the_page_faults_of_a_large_buffer_on_every_call():
    # glibc's default maps the output afresh on every call: 12,544 pages or more, a fault each
    default = _faults_per_call("default")
    assert min(default) >= 12_544, default
    # kept: the first call faults the heap's pages in; the second may still fault up to one more
    # output's worth while oneDNN's scratch buffers settle (seen 145-3,137 on CI and Zen 5, and
    # 12,545 once on Zen 4), then the calls reuse the pages: the last three fault (almost)
    # nothing, and the five calls after the first together fault less than TWO default calls
    # (a heap that is not kept faults five)
    kept = _faults_per_call("keep")
    assert kept[0] >= 12_544, kept
    assert max(kept[-3:]) < 256 and sum(kept[1:]) < 2 * min(default), kept


def test_a_campaign_on_a_c_library_without_mallopt_stops_before_measuring(fresh, monkeypatch,
                                                                          tmp_path):
    from carb_lib.families.space import ResNetConfig
    from carb_lib.measure.campaign import run_campaign

    monkeypatch.setattr(heap, "_libc", lambda: object())
    monkeypatch.setattr(devices, "keep_heap", heap.keep_heap.real)  # conftest's stand-in off
    cfg = ResNetConfig(block="basic", depth=10, width=0.25, early_downsample=True,
                       resolution=32, batch=1, precision="fp32")
    with pytest.raises(heap.HeapSettingError, match="needs glibc's mallopt"):
        run_campaign(pd.DataFrame([cfg.to_dict()]), tmp_path / "parts", "cpu",
                     Protocol(cpu_keep_heap=True, threads=1), progress=False)
    assert not (tmp_path / "parts").exists()


def test_a_campaign_of_the_other_heap_is_not_resumed(tmp_path):
    """Parts timed with the default heap (before 2026-12-03, or without the column at all) and
    a campaign resumed with the kept heap, the default now: refused in one line before anything
    is measured; resumed with the heap the parts record, it goes on."""
    from carb_lib.families.space import ResNetConfig
    from carb_lib.measure import campaign as cp
    from carb_lib.measure.campaign import run_campaign
    from carb_lib.measure.devices import CpuDevice

    cfg = ResNetConfig(block="basic", depth=10, width=0.25, early_downsample=True,
                       resolution=32, batch=1, precision="fp32")
    dev = CpuDevice()
    plat = dev.platform
    old = cp.skipped_row(cfg, dev, Protocol(), "stands for a row of before 2026-12-03")
    old.pop("heap_kept", None)  # no heap_kept: the default heap
    folder = tmp_path / "parts"
    cp.PartWriter(folder, cp.RESULTS_PREFIX).write([old])
    assert cp.part_heaps(folder, plat) == {False} and cp.part_heaps(folder, "other") == set()
    with pytest.raises(ValueError, match=r"holds rows timed with cpu_keep_heap \[False\]; this "
                                         r"campaign's protocol has True: resume it with "
                                         r"--protocol '\{\"cpu_keep_heap\": false\}'"):
        run_campaign(pd.DataFrame([cfg.to_dict()]), folder, "cpu",
                     Protocol(threads=1, cpu_warmup_iters=1, n_windows=1, cpu_min_window_s=0.01),
                     ref_every=0, progress=False)
    assert len(list(folder.glob("results-*"))) == 1
    res = run_campaign(pd.DataFrame([cfg.to_dict()]), folder, "cpu",
                       Protocol(threads=1, cpu_keep_heap=False), ref_every=0, progress=False)
    assert (res.n_already_done, res.n_planned) == (1, 0)  # the recorded heap: resumed
    cp.PartWriter(folder, cp.RESULTS_PREFIX).write([{**old, "heap_kept": True}])
    assert cp.part_heaps(folder, plat) == {False, True}
