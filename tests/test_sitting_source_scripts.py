"""Pre-registration N's scripts: the list's target configs, the sitting-to-sitting ratios, the
judgement (turning with the numbers, and regenerated from the committed outputs) and the
campaign's refusals."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd
import pytest
from script_loader import load_script, refused, rescore

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "cross_family" / "sitting_source"
SOURCES = ("resnet_now", "resnet_s12", "resnet_s12_400", "resnet_m", "resnet_other")


def _summary(mape: dict[tuple[str, str, str], float], default: float = 15.0) -> pd.DataFrame:
    """An ``offset`` k = 10 summary: every data set x family x source at ``default`` but ``mape``."""
    rows = [{"dataset": d, "family": f, "source": s, "model": "offset", "k": 10,
             "mape_pct_mean": mape.get((d, f, s), default), "spearman_mean": 0.9}
            for d in ("now", "other", "passes", "s12")
            for f in ("efficientnet", "mobilenetv2", "vgg") for s in SOURCES]
    rows.append({"dataset": "now", "family": "mobilenetv2", "source": "resnet_now",
                 "model": "zero_shot", "k": 0, "mape_pct_mean": 1.0, "spearman_mean": 0.9})
    return pd.DataFrame(rows)


def test_target_configs_keep_ok_rows_and_each_familys_own_columns():
    lst = load_script("sitting_source_list")
    rows = pd.DataFrame({
        "config_id": ["v1", "m1", "m2"], "family": ["vgg", "mobilenetv2", "mobilenetv2"],
        "status": ["ok", "ok", "error"], "latency_ms": [1.0, 2.0, 3.0],
        "depth": [11, None, None], "batch_norm": [True, None, None], "note": "x",
        "expansion": [None, 6, 6], "batch": [1, 2, 4], "precision": "fp32",
        "resolution": 224, "num_classes": 1000})
    got = lst.target_configs(rows)
    assert list(got["config_id"]) == ["m1", "v1"] and "latency_ms" not in got.columns
    assert {"expansion", "depth", "batch_norm"} <= set(got.columns)
    assert not {"status", "note"} & set(got.columns)
    assert got.set_index("config_id").loc["v1", "depth"] == 11
    with pytest.raises(SystemExit, match="no ok row"):
        lst.target_configs(rows.assign(status="error"))


def test_ratio_line_divides_out_the_median_over_shared_ok_configs():
    test = load_script("probe_source_test")
    now = pd.DataFrame({"config_id": list("abcd"), "status": ["ok"] * 4,
                        "latency_ms": [12.0, 24.0, 36.0, 60.0]})
    other = pd.DataFrame({"config_id": list("abcz"), "status": ["ok"] * 4,
                          "latency_ms": [10.0, 20.0, 20.0, 1.0]})
    line = test.ratio_line("x", now, other)
    # ratios 1.2, 1.2, 1.8: median 1.2, raw within ±10 % none, divided out 2 of 3
    assert line.startswith("x, 3 configs: median ratio 1.2000; within ±10 % raw 0.000, "
                           "with the median divided out 0.667; median |log| after it 0.0000")
    assert test.ratio_line("y", now, other.assign(config_id=list("wxyz"))) == "y: no config in common"


def test_summarise_pairs_gains_against_the_named_baseline():
    test = load_script("probe_source_test")
    rows = [{"dataset": "now", "family": "f", "seed": seed, "source": s, "model": "offset",
             "k": 10, "mape_pct": v, "within_10pct": 0.5, "spearman": 0.9}
            for seed, vals in enumerate([(20.0, 14.0, 30.0), (10.0, 9.0, 10.0)])
            for s, v in zip(("resnet_s12", "resnet_now", "resnet"), vals, strict=True)]
    _, gains = test.summarise(pd.DataFrame(rows), base="resnet_s12")
    g = gains.set_index("source")["gain_pts_mean"]
    assert sorted(g.index) == ["resnet", "resnet_now"]
    assert g["resnet_now"] == pytest.approx(3.5) and g["resnet"] == pytest.approx(-5.0)


def test_judge_turns_with_the_numbers():
    score = load_script("sitting_source_score")
    held = {i: ok for i, _, ok in score.judge(_summary({}), 8.0)}
    assert held == {"N1": False, "N2": False, "N3": False, "N4": False, "N5": False,
                    "N6": False, "N7": True, "N8": True}
    good = {("now", f, "resnet_now"): 9.0 for f in ("efficientnet", "mobilenetv2")}
    good[("now", "vgg", "resnet_now")] = 16.0
    held = {i: ok for i, _, ok in score.judge(_summary(good), 8.1)}
    assert held == {"N1": True, "N2": True, "N3": True, "N4": True, "N5": True,
                    "N6": True, "N7": True, "N8": False}
    # the same gain on `passes` as on `now` is no match; 10.5 % is not issue 15's cell
    worse = {**good, **{("passes", f, "resnet_now"): 9.0 for f in ("efficientnet", "mobilenetv2")},
             ("now", "mobilenetv2", "resnet_now"): 10.5, ("now", "vgg", "resnet_now"): 16.1}
    held = {i: ok for i, _, ok in score.judge(_summary(worse), 8.0)}
    assert not held["N4"] and not held["N6"] and not held["N7"] and held["N1"]


def test_replication_judge_turns_with_the_numbers():
    score = load_script("sitting_source_score")
    held = {i: ok for i, _, ok in score.judge_replication(_summary({}), 8.0)}
    assert held == {"P1": False, "P2": False, "P3": False, "P4": True, "P5": True, "P6": False}
    dw = ("efficientnet", "mobilenetv2")
    # each sitting's source 1 point better on its own sitting's rows: a match of 2 points
    match = {**{("now", f, "resnet_now"): 13.0 for f in dw},
             **{("now", f, "resnet_other"): 14.0 for f in dw},
             **{("other", f, "resnet_now"): 14.0 for f in dw},
             **{("other", f, "resnet_other"): 13.0 for f in dw},
             ("now", "vgg", "resnet_now"): 16.0}
    held = {i: ok for i, _, ok in score.judge_replication(_summary(match), 8.1)}
    assert held == {"P1": True, "P2": True, "P3": True, "P4": False, "P5": True, "P6": True}
    held = {i: ok for i, _, ok in score.judge_replication(_summary(
        {**match, ("other", "efficientnet", "resnet_now"): 13.9,
         ("now", "mobilenetv2", "resnet_now"): 10.0}), 8.0)}
    assert not held["P3"] and not held["P5"] and held["P1"]


@pytest.mark.parametrize("folder, flags, ending", [
    ("cpu_epyc_zen5_2c", [], "5 of 8 held"),
    ("cpu_epyc_zen5_2c/sitting2", ["--replication"], "5 of 6 held"),
])
def test_score_regenerates_the_committed_judgement(tmp_path, folder, flags, ending):
    src = RESULTS / folder
    if not (src / "scores.txt").exists():
        pytest.skip("not measured in this checkout")
    cmd, r, got, want = rescore("sitting_source_score", src, tmp_path, *flags)
    assert r.returncode == 0, r.stderr
    assert got == want
    assert want.rstrip().endswith(ending)
    (tmp_path / "agreement.txt").write_text("halves: none\n")
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode != 0 and "no halves check" in r.stderr
    (tmp_path / "summary.csv").unlink()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode != 0 and r.stderr.strip() == f"sitting_source_score: no summary.csv in {tmp_path}"


@pytest.mark.parametrize("args, message", [
    (["cpu_epyc_zen5_2c"], "sitting_source_campaign: results/cross_family/sitting_source/"
                           "cpu_epyc_zen5_2c/target_rows.parquet exists"),
    (["cpu_never_measured"], "sitting_source_campaign: no target rows "
                             "data/other_cpus/new_families/cpu_never_measured_passes.parquet"),
    (["cpu_never_measured", "4", "2100", "sitting2"],
     "sitting_source_campaign: no first sitting results/cross_family/sitting_source/"
     "cpu_never_measured/target_rows.parquet"),
])
def test_the_campaign_refuses_and_writes_nothing(args, message):
    if args[0] == "cpu_epyc_zen5_2c" and not (RESULTS / args[0] / "target_rows.parquet").exists():
        pytest.skip("pre-registration N not measured in this checkout")
    r, unchanged = refused("sitting_source_campaign.sh", *args, watch=RESULTS)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.strip() == message
    assert unchanged
