"""Anchor operators: a fixed set re-timed in every campaign (``carb kernels``, ``--anchors-only``)
and the campaigns' relative host speed (:mod:`carb_lib.kernels.anchors`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from carb_lib.kernels import anchors
from carb_lib.kernels import law as kernels
from carb_lib.kernels.anchors import anchor_operators, anchor_speeds, anchors_path
from carb_lib.kernels.operators import OP_COLUMNS
from carb_lib.measure import devices


def test_anchor_set_is_fixed_small_and_covers_every_kind():
    a = anchor_operators()
    assert len(a) == 24 and a["anchor_id"].tolist() == list(range(24))
    pd.testing.assert_frame_equal(a, anchor_operators(1))  # the same set on every call
    counts = a.groupby(["kind", "precision"]).size().to_dict()
    assert counts == anchors._V1_STRATA
    t = kernels._roofline_ms(a)
    assert (t >= 0.02).all() and (t <= 1.0).all()
    assert set(a.columns) == {*OP_COLUMNS, "batch", "precision", "anchor_id"}
    with pytest.raises(ValueError, match=r"anchor version 2 is unknown; valid: \[1\]"):
        anchor_operators(2)


def test_anchors_path_sits_beside_the_benchmark(tmp_path):
    assert anchors_path(tmp_path / "cpu_x.parquet") == tmp_path / "cpu_x.anchors.parquet"


def _campaigns(factors: dict[str, float], *, noisy: int | None = None) -> pd.DataFrame:
    """SYNTHETIC anchor rows: campaign s times anchor i at ``(i + 1) * factor_s`` ms; anchor
    ``noisy`` is 3x slow in every campaign but the first."""
    rows = []
    for j, (when, f) in enumerate(factors.items()):
        for i in range(9):
            t = (i + 1) * f * (3.0 if (noisy == i and j > 0) else 1.0)
            rows.append({"campaign": pd.Timestamp(when, tz="UTC"), "anchor_id": i,
                         "time_ms": t, "anchor_version": 1, "phase": "check",
                         "sample_seed": -1})
    return pd.DataFrame(rows)


def test_anchor_speeds_are_the_median_ratio_to_the_reference_campaign():
    rows = _campaigns({"2026-12-01 10:00": 1.0, "2026-12-02 09:00": 1.3,
                      "2026-12-02 11:00": 0.8}, noisy=4)
    sp = anchor_speeds(rows.sample(frac=1.0, random_state=0))  # row order does not matter
    assert sp["campaign"].is_monotonic_increasing and len(sp) == 3
    assert sp["relative_time"].tolist() == pytest.approx([1.0, 1.3, 0.8])  # one outlier ignored
    assert sp["n_anchors"].tolist() == [9, 9, 9]
    assert sp.loc[1, "ratio_q25"] == pytest.approx(1.3) and sp.loc[1, "ratio_q75"] == pytest.approx(1.3)
    rel = anchor_speeds(rows, reference=pd.Timestamp("2026-12-02 09:00", tz="UTC"))
    assert rel["relative_time"].tolist() == pytest.approx([1 / 1.3, 1.0, 0.8 / 1.3])
    naive = anchor_speeds(rows, reference="2026-12-02 09:00")  # read as UTC
    assert naive["relative_time"].tolist() == pytest.approx([1 / 1.3, 1.0, 0.8 / 1.3])


def test_anchor_speeds_refuse_bad_input():
    rows = _campaigns({"2026-12-01": 1.0, "2026-12-02": 1.1})
    with pytest.raises(ValueError, match="no anchor rows"):
        anchor_speeds(rows.iloc[:0])
    mixed = rows.assign(anchor_version=np.where(rows.index < 9, 1, 2))
    with pytest.raises(ValueError, match=r"anchor versions \[1, 2\]"):
        anchor_speeds(mixed)
    with pytest.raises(ValueError, match="reference campaign 2020-01-01 is not in the rows"):
        anchor_speeds(rows, reference="2020-01-01")


def test_time_anchors_times_the_set_once_with_the_benchmark_harness():
    rows = anchors.time_anchors(phase="check", platform="test_cpu", n_windows=1)
    assert rows["anchor_id"].tolist() == list(range(24))
    assert (rows["time_ms"] > 0).all() and set(rows["phase"]) == {"check"}
    assert set(rows["sample_seed"]) == {-1} and rows["campaign"].nunique() == 1
    assert set(rows["cpu_id"]) == {devices.cpu_identity()} and set(rows["anchor_version"]) == {1}
    with pytest.raises(ValueError, match=r"phase='while' is unknown"):
        anchors.time_anchors(phase="while")


def test_cli_kernels_brackets_each_draw_with_anchors_and_checks_alone(tmp_path):
    from carb_lib.app.cli import app

    runner = CliRunner()
    out = tmp_path / "b.parquet"
    side = anchors_path(out)
    base = ["kernels", "--out", str(out), "--no-progress", "--platform", "test_cpu", "--n", "2",
            "--no-cache-probe"]
    r = runner.invoke(app, ["kernels", "--out", str(out), "--anchors-only"])
    assert r.exit_code == 1 and "--anchors-only: " in r.output and "does not exist" in r.output
    assert not side.exists()
    r = runner.invoke(app, base)
    assert r.exit_code == 0, r.output
    a = pd.read_parquet(side)
    assert a.groupby("campaign")["phase"].first().tolist() == ["before", "after"]
    assert set(a["sample_seed"]) == {0} and len(a) == 48
    assert "anchors: 2 campaigns" in r.output
    r = runner.invoke(app, [*base, "--seed", "1", "--append", "--no-anchors"])
    assert r.exit_code == 0 and len(pd.read_parquet(side)) == 48  # no campaign added
    r = runner.invoke(app, [*base, "--seed", "2", "--append", "--anchor-every", "-1"])
    assert r.exit_code == 1 and "--anchor-every >= 0, got 2, 1 and -1" in r.output
    assert len(pd.read_parquet(side)) == 48 and len(kernels.read_bench(out)) == 4
    r = runner.invoke(app, ["kernels", "--out", str(out), "--anchors-only", "--campaigns", "0"])
    assert r.exit_code == 1 and "--campaigns must be >= 1, got 0" in r.output
    r = runner.invoke(app, ["kernels", "--out", str(out), "--anchors-only", "--campaigns", "1"])
    assert r.exit_code == 0, r.output
    a = pd.read_parquet(side)
    assert a.groupby("campaign")["phase"].first().tolist() == ["before", "after", "check"]
    assert "relative_time" in r.output and len(kernels.read_bench(out)) == 4  # bench untouched
    assert "this session (1 campaigns): median relative_time" in r.output
    # --campaigns is the one name of the option
    r = runner.invoke(app, ["kernels", "--out", str(out), "--anchors-only", "--sitt" "ings", "0"])
    assert r.exit_code == 1 and "No such option: --sitt" "ings" in r.output
    # anchors of another CPU beside the benchmark: refused, nothing written
    a.assign(cpu_id="GenuineIntel family 6 model 207 | AVX512 | L3 1K").to_parquet(side)
    before = side.read_bytes()
    r = runner.invoke(app, ["kernels", "--out", str(out), "--anchors-only"])
    assert r.exit_code == 1 and "anchors.parquet were measured on another CPU" in r.output
    assert side.read_bytes() == before


def test_cli_kernels_times_anchors_through_the_draw(tmp_path, monkeypatch):
    """``--anchor-every 2`` on 5 operators: campaigns before, after operators 2 and 4, and after
    the draw, in time order between the operators they bracket. The campaigns are stubbed (one
    anchor, no timing) to keep the test fast; the real timing is tested above."""
    from carb_lib.app.cli import app

    def one_anchor(*, phase, sample_seed=None, **kw):
        now = pd.Timestamp.now(tz="UTC")
        return pd.DataFrame([{**{c: 1 for c in OP_COLUMNS}, "kind": "relu", "batch": 1,
                              "precision": "fp32", "time_ms": 0.01, "cv": 0.0, "n_iter": 1,
                              "measured_at": now, "platform": "test_cpu",
                              "cpu_id": devices.cpu_identity(), "anchor_id": 0,
                              "anchor_version": 1, "phase": phase, "sample_seed": sample_seed,
                              "campaign": now}])

    monkeypatch.setattr(anchors, "time_anchors", one_anchor)
    out = tmp_path / "b.parquet"
    r = CliRunner().invoke(app, ["kernels", "--out", str(out), "--no-progress", "--platform",
                                 "test_cpu", "--n", "5", "--anchor-every", "2",
                                 "--no-cache-probe"])
    assert r.exit_code == 0, r.output
    a = pd.read_parquet(anchors_path(out))
    assert a["phase"].tolist() == ["before", "during", "during", "after"]
    b = kernels.read_bench(out)
    assert len(b) == 5 and b["sample_seed"].tolist() == [0] * 5
    t = b["measured_at"].to_numpy()
    s = a["campaign"].to_numpy()
    assert s[0] < t[0] and t[1] < s[1] < t[2] and t[3] < s[2] < t[4] and t[4] < s[3]
    assert "anchors: 4 campaigns" in r.output


def test_anchor_file_reports_the_median_of_the_last_campaigns(tmp_path):
    rows = _campaigns({"2026-12-01 10:00": 1.0, "2026-12-02 09:00": 1.3,
                      "2026-12-02 09:01": 0.9, "2026-12-02 09:02": 1.2}).assign(
        cpu_id=devices.cpu_identity())
    bench = tmp_path / "b.parquet"
    for c in kernels.BENCH_COLUMNS:
        if c not in rows:
            rows[c] = {"kind": "relu", "batch": 1, "precision": "fp32"}.get(c, 1)
    rows.to_parquet(anchors_path(bench))
    text = anchors.AnchorFile(bench).report(last=3)
    assert "4 campaigns" in text
    assert text.endswith("this session (3 campaigns): median relative_time 1.200 (range "
                         "0.900-1.300)")
