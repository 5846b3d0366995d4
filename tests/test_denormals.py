"""An in-place ``silu`` timed again and again passes through denormals:
``bench_kernels(flush_denormal=True)``, the ``denormals_flushed`` provenance and ``--append``'s
refusal."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from carb_lib.kernels import law as kernels

needs_ftz = pytest.mark.skipif(not torch.set_flush_denormal(False),
                               reason="this CPU cannot flush denormals (no SSE3)")


def _flushing_now() -> bool:
    """Whether this thread flushes denormals: a denormal times one reads as zero."""
    return bool((torch.tensor([1e-39], dtype=torch.float32) * 1.0).item() == 0.0)


def _op(kind: str = "silu", *, cin: int = 8, h: int = 4, batch: int = 2,
        precision: str = "fp32") -> dict:
    return {"kind": kind, "cin": cin, "cout": cin, "k": 1, "stride": 1, "pad": 0,
            "groups": 1, "h_in": h, "h_out": h, "batch": batch, "precision": precision}


# --------------------------------------------------------------------------- the harness
@needs_ftz
def test_an_in_place_silu_called_again_and_again_reaches_denormals_unless_flushed():
    """The premise, on the harness's own operator: halving values pass through the denormal
    range (~120-160 calls on in float32) unless denormals are flushed."""
    def denormals_seen(flush: bool) -> int:
        torch.set_flush_denormal(flush)
        try:
            call = kernels._module(_op(cin=16, h=8), torch.float32)
            seen = 0
            with torch.inference_mode():
                for _ in range(200):
                    y = call()
                    tiny = (y != 0) & (y.abs() < torch.finfo(torch.float32).tiny)
                    seen = max(seen, int(tiny.sum()))
            return seen
        finally:
            torch.set_flush_denormal(False)

    assert denormals_seen(False) > 0
    assert denormals_seen(True) == 0


@needs_ftz
def test_bench_kernels_times_with_denormals_flushed_and_restores_the_thread(monkeypatch):
    seen: list[bool] = []

    def fake_time(call, window_s, n_windows):
        seen.append(_flushing_now())
        return 1e-3, 0.0, 1

    monkeypatch.setattr(kernels, "_time_call", fake_time)
    ops = pd.DataFrame([_op(), _op("relu")])
    rows = kernels.bench_kernels(ops, progress=False, platform="test_cpu")
    assert seen == [True, True] and not _flushing_now()
    assert rows["denormals_flushed"].tolist() == [True, True]
    seen.clear()
    rows = kernels.bench_kernels(ops, progress=False, platform="test_cpu", flush_denormal=False)
    assert seen == [False, False] and rows["denormals_flushed"].tolist() == [False, False]

    def boom(call, window_s, n_windows):
        raise RuntimeError("interrupted")

    monkeypatch.setattr(kernels, "_time_call", boom)
    with pytest.raises(RuntimeError, match="interrupted"):
        kernels.bench_kernels(ops, progress=False, platform="test_cpu")
    assert not _flushing_now()  # restored on the way out, too


def test_append_refuses_to_mix_flushed_and_unflushed_operators():
    old = pd.DataFrame({"platform": ["p"] * 2, "threads": [1, 1], "torch_version": ["t"] * 2,
                        "sample_seed": [0, 0]})
    kw = dict(platform="p", threads=1, seed=1, torch_version="t")
    with pytest.raises(ValueError, match=r"holds denormals_flushed \[False\]; this run's is "
                                         r"True: measure into a new file"):
        kernels.check_append(old, denormals_flushed=True, **kw)  # no column: not flushed
    kernels.check_append(old, denormals_flushed=False, **kw)
    kernels.check_append(old.assign(denormals_flushed=True), denormals_flushed=True, **kw)
    with pytest.raises(ValueError, match=r"holds denormals_flushed \[True\]; this run's is False"):
        kernels.check_append(old.assign(denormals_flushed=True), denormals_flushed=False, **kw)
    kernels.check_append(old, denormals_flushed=None, **kw)  # a CPU that cannot flush: no check


@needs_ftz
def test_cli_kernels_append_to_an_unflushed_benchmark_is_one_line_and_writes_nothing(
        monkeypatch, tmp_path):
    from carb_lib.app.cli import app

    small = pd.DataFrame([_op(), _op("relu")])
    monkeypatch.setattr(kernels, "sample_kernels", lambda n, **kw: small.iloc[:n])
    base = ["kernels", "--n", "2", "--no-progress", "--platform", "test_cpu", "--no-anchors",
            "--no-cache-probe", "--default-heap", "--out", str(tmp_path / "a.parquet")]
    r = CliRunner().invoke(app, base)
    assert r.exit_code == 0, r.output
    bench = kernels.read_bench(tmp_path / "a.parquet")
    assert bench["denormals_flushed"].all()
    bench.drop(columns="denormals_flushed").to_parquet(tmp_path / "a.parquet")  # as before 31
    r = CliRunner().invoke(app, [*base, "--append", "--seed", "1"])
    out = r.output.strip()
    assert r.exit_code == 1 and len(out.splitlines()) == 1 and out.startswith("error:"), out
    assert "the benchmark holds denormals_flushed [False]; this run's is True" in out
    assert len(kernels.read_bench(tmp_path / "a.parquet")) == 2
