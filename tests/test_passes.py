"""Several passes, fastest kept (carb_lib.measure.passes): the combining rule on synthetic rows, the
halves check, and a real two-pass campaign on this CPU merged into a valid dataset."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from fast_protocol import FAST_SETTINGS
from typer.testing import CliRunner

from carb_lib.app.cli import app
from carb_lib.measure import campaign as cp
from carb_lib.measure.passes import (
    combine_passes,
    pass_agreement,
    pass_dirs,
    read_passes,
    run_passes,
    save_pass_rows,
)
from carb_lib.measure.profiling import Protocol

torch.set_num_threads(1)
FAST = Protocol(threads=1, **FAST_SETTINGS)


def _pass(lat: dict[str, float], mem: float = np.nan, status: dict | None = None) -> pd.DataFrame:
    status = status or {}
    return pd.DataFrame({
        "config_id": list(lat), "latency_ms": list(lat.values()),
        "status": [status.get(c, "ok") for c in lat], "peak_mem_mib": mem,
        "quality": [f"q{v:g}" for v in lat.values()],
    })  # fmt: skip


def test_fastest_pass_row_first_pass_memory_and_spread():
    p0 = _pass({"a": 10.0, "b": 20.0, "c": 5.0, "d": 1.0}, mem=7.0, status={"d": "oom"})
    p1 = _pass({"a": 13.0, "b": 16.0, "c": 6.0})
    p2 = _pass({"a": 11.0, "b": 30.0, "c": 4.0}, status={"c": "error"})
    out = combine_passes([p0, p1, p2]).set_index("config_id")
    assert list(out.index) == ["a", "b", "c", "d"]
    assert out.loc["a", "latency_ms"] == 10.0 and out.loc["a", "quality"] == "q10"
    assert out.loc["b", "latency_ms"] == 16.0 and out.loc["b", "quality"] == "q16"  # pass 1's row
    assert out.loc["c", "latency_ms"] == 5.0  # pass 2's error row is not a latency
    assert (out.loc[["a", "b", "c"], "peak_mem_mib"] == 7.0).all()  # memory of pass 0
    assert out.loc["a", "latency_passes"] == 3 and out.loc["c", "latency_passes"] == 2
    assert out.loc["a", "latency_pass_spread"] == pytest.approx(11.0 / 10.0 - 1)
    assert out.loc["b", "latency_pass_spread"] == pytest.approx(20.0 / 16.0 - 1)
    assert out.loc["c", "latency_pass_spread"] == pytest.approx(5.5 / 5.0 - 1)
    assert out.loc["d", "status"] == "oom" and out.loc["d", "latency_passes"] == 0


def test_halves_check_and_pass_speeds():
    base = {c: float(v) for c, v in zip("abcdefghij", range(1, 11), strict=True)}
    slow = {c: v * 1.3 for c, v in base.items()}
    near = {c: v * (1.08 if c in "ab" else 1.02) for c, v in base.items()}
    agree = pass_agreement([_pass(base), _pass(slow), _pass(near), _pass(slow)])
    assert agree.halves == (2, 2) and agree.n_configs == 10
    # first half's fastest = base, second half's = near: 2 of 10 beyond 5 %, none beyond 10 %
    assert agree.within_5 == pytest.approx(0.8) and agree.within_10 == 1.0
    assert agree.median_abs_log_ratio == pytest.approx(np.log(1.02))
    assert agree.pass_speed == pytest.approx((1.0, 1.3, 1.02, 1.3))
    assert "4 passes, 10 configs" in agree.summary()
    even_odd = pass_agreement([_pass(base), _pass(slow), _pass(near), _pass(slow)],
                              interleaved=True)  # fastest of 1, 3 = base; of 2, 4 = slow
    assert even_odd.median_abs_log_ratio == pytest.approx(np.log(1.3)) and even_odd.within_10 == 0
    assert "even passes against fastest of the odd" in even_odd.summary()
    assert pass_agreement([_pass(base)]) is None


def test_two_passes_measure_merge_and_refuse_a_single_pass_folder(tmp_path):
    cfg = cp.sample_configs(4, seed=3, max_gflops=0.02, sample_under_cap=True)
    out = tmp_path / "passes"
    res = run_passes(cfg, out, 2, "cpu", FAST, platform="synthetic_cpu", ref_every=2,
                     progress=False)  # fmt: skip
    assert [p.name for p in pass_dirs(out)] == ["pass0", "pass1"] and len(res) == 2
    p0, p1 = read_passes(out)
    save_pass_rows(out, tmp_path / "pass_rows.parquet")  # every pass's rows in one table, back
    for kept, read in zip(read_passes(tmp_path / "pass_rows.parquet"), (p0, p1), strict=True):
        pd.testing.assert_frame_equal(kept, read)
    assert set(p0["config_id"]) == set(p1["config_id"]) == set(cfg["config_id"])
    mem = p0.set_index("config_id")["peak_mem_mib"]  # deterministic: the same in every pass
    assert np.array_equal(mem, p1.set_index("config_id")["peak_mem_mib"].loc[mem.index])
    merged = cp.merge_parts(out, tmp_path / "d.parquet")
    assert len(merged) == 4 and (merged["latency_passes"] == 2).all()
    both = pd.concat([p0, p1]).groupby("config_id")["latency_ms"].min()
    assert np.allclose(merged.set_index("config_id")["latency_ms"], both.loc[merged["config_id"]])
    assert merged["peak_mem_mib"].notna().all() and merged["latency_norm_ms"].notna().all()
    r = CliRunner().invoke(app, ["merge", str(out), str(tmp_path / "d2.parquet")])
    assert r.exit_code == 0 and "2 passes, 4 configs; fastest of passes 1-1" in r.output
    # a rerun resumes both passes: nothing left to measure
    again = run_passes(cfg, out, 2, "cpu", FAST, platform="synthetic_cpu", ref_every=0,
                       progress=False)  # fmt: skip
    assert [r.n_planned for r in again] == [0, 0]
    single = tmp_path / "single"
    cp.run_campaign(cfg.head(1), single, "cpu", FAST, platform="synthetic_cpu", ref_every=0,
                    progress=False)  # fmt: skip
    with pytest.raises(ValueError, match="single-pass campaign"):
        run_passes(cfg, single, 2, "cpu", FAST)
    r = CliRunner().invoke(app, ["profile", "--passes", "0", "--out", str(tmp_path / "x")])
    assert r.exit_code != 0 and "--passes must be >= 1" in r.output


def test_each_pass_has_its_own_progress_bar(tmp_path, capsys):
    cfg = cp.sample_configs(1, seed=3, max_gflops=0.02, sample_under_cap=True)
    run_passes(cfg, tmp_path / "p", 2, "cpu", FAST, platform="synthetic_cpu", ref_every=0,
               progress=True)  # fmt: skip
    err = capsys.readouterr().err
    assert "pass 1/2" in err and "pass 2/2" in err
