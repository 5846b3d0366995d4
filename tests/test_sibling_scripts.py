"""The sibling-source check's scripts (pre-registration I): the paired gains and the scoring of
the predictions, on the committed summaries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "cross_family" / "siblings"


def test_gains_are_paired_by_seed_against_resnet_only_offset():
    check = load_script("sibling_source_check")
    rows = []
    for seed, base, sib in [(0, 20.0, 15.0), (1, 10.0, 9.0)]:
        for source, model, k, mape in [("resnet", "offset", 10, base),
                                       ("resnet", "zero_shot", 0, base + 1),
                                       ("resnet+x", "offset", 10, sib)]:
            rows.append({"seed": seed, "family": "f", "source": source, "model": model, "k": k,
                         "n_test": 30, "mape_pct": mape, "within_10pct": 0.5, "spearman": 0.9})
    t = check.summarise(pd.DataFrame(rows)).set_index(["source", "model"])
    assert t.loc[("resnet", "offset"), "gain_pts_mean"] == 0
    assert t.loc[("resnet", "zero_shot"), "gain_pts_mean"] == pytest.approx(-1.0)
    assert t.loc[("resnet+x", "offset"), "gain_pts_mean"] == pytest.approx(3.0)  # (5 + 1) / 2
    assert t.loc[("resnet+x", "offset"), "gain_pts_sd"] == pytest.approx(2 ** 0.5 * 2)
    assert t.loc[("resnet+x", "offset"), "mape_pct_mean"] == pytest.approx(12.0)


def test_score_reads_the_committed_summaries_and_rewrites_scores_txt(tmp_path):
    score = load_script("sibling_source_score")
    for d in score.DATA_SETS:
        (tmp_path / d).mkdir()
        (tmp_path / d / "summary.csv").write_bytes((RESULTS / d / "summary.csv").read_bytes())
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "sibling_source_score.py"),
                        str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    want = (RESULTS / "scores.txt").read_text().split("\n", 1)[1]
    assert (tmp_path / "scores.txt").read_text().split("\n", 1)[1] == want
    zen3 = score.per_data_set(pd.read_csv(RESULTS / "cpu_epyc_zen3_2c" / "summary.csv"))
    assert zen3["eff_gain"] > 0 and zen3["eff_mbv2_minus_vgg"] < 0  # the development numbers


def test_score_refuses_a_missing_cell(tmp_path):
    score = load_script("sibling_source_score")
    s = pd.read_csv(RESULTS / "cpu_epyc_zen3_2c" / "summary.csv")
    with pytest.raises(ValueError, match="resnet\\+vgg / offset: 0 rows"):
        score.per_data_set(s[s["source"] != "resnet+vgg"])


def test_fresh_depthwise_list_is_fresh_fp32_large_batch_and_under_the_cap():
    lst_mod = load_script("fresh_depthwise_list")
    from carb_lib.features import static_features

    measured = ROOT / "data" / "other_cpus" / "new_families" / "cpu_epyc_zen5_2c.parquet"
    lst = lst_mod.fresh_list([measured], per_family=20, min_batch=16, cap_gflop=4.0, seed=7)
    assert lst["config_id"].is_unique and len(lst) == 40
    assert lst["family"].value_counts().to_dict() == {"efficientnet": 20, "mobilenetv2": 20}
    assert (lst["batch"] >= 16).all() and set(lst["precision"]) == {"fp32"}
    assert not lst["config_id"].isin(pd.read_parquet(measured, columns=["config_id"])["config_id"]).any()
    assert (static_features(lst)["flops"] <= 4e9).all()
    again = lst_mod.fresh_list([measured], per_family=20, min_batch=16, cap_gflop=4.0, seed=7)
    pd.testing.assert_frame_equal(lst, again)  # a function of its arguments
    with pytest.raises(SystemExit, match="fresh configs; lower --per-family"):
        lst_mod.fresh_list([measured], per_family=100_000, min_batch=16, cap_gflop=4.0, seed=7)


def test_fresh_score_regenerates_the_committed_judgement(tmp_path):
    fresh = RESULTS / "fresh_cpu_epyc_zen5_2c"
    for name in ("summary.csv", "pass_rows.parquet"):
        (tmp_path / name).write_bytes((fresh / name).read_bytes())
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "fresh_sibling_score.py"),
                        str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    for name in ("scores.txt", "halves.txt"):
        assert (tmp_path / name).read_text() == (fresh / name).read_text()
    assert sum(" HELD: " in ln for ln in (tmp_path / "scores.txt").read_text().splitlines()) == 7
