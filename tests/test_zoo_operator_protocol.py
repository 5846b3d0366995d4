"""benchmarks/zoo_operator_protocol.py: the per-operator ratios and operator-sum scores it
reports, the platform it picks by CPU kind, and what it does where it has nothing to time."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
ZEN4 = "AuthenticAMD family 25 model 17 stepping 1 | AVX512 | L3 32768K"


@pytest.fixture(scope="module")
def zop():
    spec = importlib.util.spec_from_file_location(
        "zoo_operator_protocol", ROOT / "benchmarks" / "zoo_operator_protocol.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _ops(times: list[float], kinds: list[str]) -> pd.DataFrame:
    n = len(times)
    return pd.DataFrame({"kind": kinds, "cin": range(n), "cout": 8, "k": 3, "stride": 1, "pad": 1,
                         "groups": 1, "h_in": 14, "h_out": 14, "batch": 1, "precision": "fp32",
                         "time_ms": times})


def test_ratios_join_the_same_operators_and_summarise_each_kind_and_batch(zop):
    den = _ops([1.0, 2.0, 4.0, 1.0, 3.0], ["conv", "conv", "conv", "relu", "relu"])
    den.loc[4, "batch"] = 8
    num = den.assign(time_ms=den["time_ms"] * [1.2, 1.2, 1.2, 1.0, 0.8])
    extra = _ops([9.0], ["conv"]).assign(cin=99)  # an operator the other draw lacks: left out
    twice = num.iloc[[0]].assign(time_ms=1.6)  # drawn twice: once, at its median time (1.4)
    r = zop._ratios(pd.concat([num, extra, twice]), den, "a_over_b").set_index(["by", "group"])
    assert r.loc[("all", "all"), "n_operators"] == 5
    assert r.loc[("kind", "conv"), "median_ratio"] == pytest.approx(1.2)
    assert r.loc[("kind", "relu"), "median_ratio"] == pytest.approx(0.9)
    assert r.loc[("all", "all"), "median_ratio"] == pytest.approx(1.2)
    assert r.loc[("kind", "conv"), "time_weighted_ratio"] == pytest.approx((1.4 + 2.4 + 4.8) / 7)
    assert r.loc[("batch", "8"), "n_operators"] == 1
    assert r.loc[("batch", "8"), "median_ratio"] == pytest.approx(0.8)
    assert r.loc[("kind", "conv"), "share_above_1_10"] == 1.0
    assert r.loc[("kind", "relu"), "share_below_0_90"] == 0.5
    assert set(r["comparison"]) == {"a_over_b"}


def test_scores_over_all_rows_each_setting_and_each_network(zop):
    zoo = pd.DataFrame({"network": ["a", "a", "b", "b", "a", "b"],
                        "precision": ["fp32"] * 4 + ["fp16"] * 2,
                        "batch": [1, 1, 1, 1, 4, 4],
                        "latency_ms": [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]})
    pred = np.array([10.5, 30.0, 30.0, 38.0, 50.0, 90.0])  # APE 5, 50, 0, 5, 0, 50 %
    s = pd.DataFrame(zop._scores(zoo, pred, "x")).set_index(["by", "group"])
    assert s.loc[("all", "all"), "n"] == 6
    assert s.loc[("all", "all"), "median_ape_pct"] == pytest.approx(5.0)
    assert s.loc[("all", "all"), "within_10pct"] == pytest.approx(4 / 6)
    assert s.loc[("setting", "fp32 batch 1"), "n"] == 4
    # ranks 1-4 against 1, 2.5, 2.5, 4 (a tie)
    assert s.loc[("setting", "fp32 batch 1"), "spearman_within_setting"] == pytest.approx(
        4.5 / np.sqrt(5 * 4.5))
    assert np.isnan(s.loc[("setting", "fp16 batch 4"), "spearman_within_setting"])  # 2 rows
    assert s.loc[("network", "b"), "median_pred_over_measured"] == pytest.approx(1.0)


def test_the_platform_is_the_one_whose_zoo_rows_this_cpu_kind_measured(zop):
    assert zop._platform_of(ZEN4) == "cpu_epyc_zen4_2c"
    assert zop._platform_of("GenuineIntel family 6 model 1 | AVX2 | L3 1K") is None


def test_a_cpu_kind_without_zoo_rows_times_nothing(zop, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(zop, "_this_cpu", lambda: "GenuineIntel family 6 model 1 | AVX2 | L3 1K")
    monkeypatch.setattr(zop, "_time", lambda *a: pytest.fail("timed on a CPU kind without zoo rows"))
    assert zop.main(["--data-dir", str(tmp_path / "k"), "--results-dir", str(tmp_path / "r")]) == 0
    assert "nothing to time" in capsys.readouterr().out
    assert not (tmp_path / "k").exists() and not (tmp_path / "r").exists()


def test_score_only_without_the_benchmarks_is_one_line(zop, tmp_path):
    with pytest.raises(SystemExit) as info:
        zop.main(["--platform", "cpu_epyc_zen4_2c", "--score-only",
                  "--data-dir", str(tmp_path), "--results-dir", str(tmp_path / "r")])
    assert str(info.value).startswith("error: --score-only needs ")
    assert not (tmp_path / "r").exists()
