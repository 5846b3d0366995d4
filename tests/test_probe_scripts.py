"""Pre-registration L's scripts: the host's speed factor, the paired gains, the judgement of
the predictions (on the committed outputs) and the campaign's refusal to overwrite."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest
from script_loader import load_script, refused, rescore

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "cross_family" / "probe" / "cpu_epyc_zen5_2c"


def test_speed_factor_is_the_median_ratio_over_shared_ok_configs():
    test = load_script("probe_source_test")
    quiet = pd.DataFrame({"config_id": list("abcd"), "status": ["ok"] * 4,
                          "latency_ms": [10.0, 20.0, 30.0, 40.0]})
    again = pd.DataFrame({"config_id": list("abcz"), "status": ["ok", "ok", "error", "ok"],
                          "latency_ms": [11.0, 26.0, 99.0, 1.0]})
    factor, n = test.speed_factor(again, quiet)
    assert n == 2 and factor == pytest.approx((1.1 + 1.3) / 2)
    with pytest.raises(SystemExit, match="no re-measured config"):
        test.speed_factor(again.assign(config_id=list("wxyz")), quiet)


def test_gains_pair_each_source_with_resnet_only_offset_by_seed():
    test = load_script("probe_source_test")
    rows = []
    for seed, base, probe in [(0, 20.0, 15.0), (1, 10.0, 9.0)]:
        for source, model, k, mape in [("resnet", "offset", 10, base),
                                       ("resnet", "zero_shot", 0, base + 5),
                                       ("resnet+probe", "offset", 10, probe),
                                       ("resnet+probe", "zero_shot", 0, 1.0)]:
            rows.append({"dataset": "d", "family": "f", "seed": seed, "source": source,
                         "model": model, "k": k, "mape_pct": mape, "within_10pct": 0.5,
                         "spearman": 0.9})
    summ, gains = test.summarise(pd.DataFrame(rows))
    g = gains.set_index("source").loc["resnet+probe"]
    assert g["gain_pts_mean"] == pytest.approx(3.0) and g["gain_pts_sd"] == pytest.approx(2.8284271)
    assert list(gains["source"]) == ["resnet+probe"]  # zero-shot rows are not paired gains
    s = summ.set_index(["source", "model"])
    assert s.loc[("resnet+probe", "offset"), "mape_pct_mean"] == pytest.approx(12.0)


def test_the_campaign_refuses_a_platform_with_probe_rows_and_writes_nothing():
    r, unchanged = refused("probe_campaign.sh", "cpu_epyc_zen5_2c",
                           watch=ROOT / "results" / "cross_family" / "probe")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == ("probe_campaign: data/other_cpus/probe_nets/cpu_epyc_zen5_2c.parquet"
                                " exists")
    assert unchanged


def test_score_regenerates_the_committed_judgement(tmp_path):
    _, r, got, want = rescore("probe_source_score", RESULTS, tmp_path,
                              files=("summary.csv", "gains.csv", "speed.txt"))
    assert r.returncode == 0, r.stderr
    assert got == want and want.rstrip().endswith("2 of 8 held")


def test_judge_turns_with_the_numbers():
    score = load_script("probe_source_score")
    summary = pd.read_csv(RESULTS / "summary.csv")
    gains = pd.read_csv(RESULTS / "gains.csv")
    held = {i: ok for i, _, ok in score.judge(summary, gains, 1.2)}
    assert held["L7"] and not held["L3"]
    cell = ((summary["dataset"] == "s12") & (summary["family"] == "mobilenetv2")
            & (summary["source"] == "resnet+probe") & (summary["model"] == "offset"))
    held = {i: ok for i, _, ok in score.judge(summary.assign(
        mape_pct_mean=summary["mape_pct_mean"].mask(cell, 9.9)), gains, 1.5)}
    assert held["L3"] and not held["L7"]
    better = gains.assign(gain_pts_mean=gains["gain_pts_mean"].abs() + 2)
    held = {i: ok for i, _, ok in score.judge(summary, better, 1.2)}
    assert held["L1"] and held["L2"]


def test_reuse_takes_the_lowest_network_seeds_of_an_earlier_dataset():
    lst = load_script("probe_list")
    earlier = pd.DataFrame({
        "config_id": ["c", "a", "b"], "family": "module", "module": "m:f",
        "module_kwargs": ['{"seed": 7, "version": 1}', '{"seed": 2, "version": 1}',
                          '{"seed": 30, "version": 1}'],
        "input_shape": "3,32,32", "batch": [1, 2, 4], "precision": "fp32",
        "resolution": 32, "num_classes": 10, "latency_ms": 1.0})
    got = lst.reused(earlier, 2)
    assert list(got["config_id"]) == ["a", "c"] and "latency_ms" not in got.columns
    with pytest.raises(SystemExit, match="holds 3 networks, need 5"):
        lst.reused(earlier, 5)


def test_sitting_score_regenerates_the_committed_judgement(tmp_path):
    names = ("summary.csv", "gains.csv", "agreement.txt")
    cmd, r, got, want = rescore("probe_sitting_score", RESULTS / "sitting2", tmp_path, files=names)
    assert r.returncode == 0, r.stderr
    assert got == want and want.rstrip().endswith("2 of 5 held")
    (tmp_path / "agreement.txt").write_text("halves: none\n")
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode != 0 and "no halves check" in r.stderr


@pytest.mark.parametrize("platform, message", [
    ("cpu_epyc_zen5_2c", "probe_sitting_campaign: results/cross_family/probe/cpu_epyc_zen5_2c/"
                         "sitting2/probe_rows.parquet exists"),
    ("cpu_never_measured", "probe_sitting_campaign: no earlier probe rows "
                           "data/other_cpus/probe_nets/cpu_never_measured.parquet"),
])
def test_the_sitting_campaign_refuses_and_writes_nothing(platform, message):
    r, unchanged = refused("probe_sitting_campaign.sh", platform,
                           watch=ROOT / "results" / "cross_family" / "probe")
    assert r.returncode == 2 and r.stdout == "" and r.stderr.strip() == message
    assert unchanged
