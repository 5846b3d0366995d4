"""Pre-registration O's scripts: the source grammar, the rows each source holds, the judgement
(turning with the numbers, and regenerated from the committed blind outputs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from script_loader import load_script

ROOT = Path(__file__).resolve().parents[1]
BLIND = ROOT / "results" / "cross_family" / "source_subset" / "blind"


def _resnet() -> pd.DataFrame:
    return pd.DataFrame({"config_id": [f"c{i}" for i in range(10)],
                         "width": [0.5, 1.0, 2.0, 0.25, 1.5, 0.5, 1.0, 4.0, 0.75, 0.1],
                         "early_downsample": [True, False, True, True, True, False, True,
                                              True, True, True],
                         "kernel_ms": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]})


@pytest.mark.parametrize("name, want", [
    ("all", ("all", None, 1, "default")),
    ("random_400", ("random", 400, 1, "default")),
    ("random_400_d3:quick", ("random", 400, 3, "quick")),
    ("kernel_range", ("kernel_range", None, 1, "default")),
    ("where(width <= 1.0):test", ("where:width <= 1.0", None, 1, "test")),
])
def test_parse_source_reads_rows_draw_and_preset(name, want):
    assert load_script("source_subset_check").parse_source(name) == want


@pytest.mark.parametrize("name, message", [
    ("random", "rows must be all, random_N"), ("all:huge", "unknown preset 'huge'"),
    ("random_0", "N must be at least 1"), ("where(x > 1):nope", "unknown preset 'nope'"),
])
def test_parse_source_refuses_with_one_line(name, message):
    with pytest.raises(SystemExit, match=message):
        load_script("source_subset_check").parse_source(name)


def test_source_rows_select_what_each_name_says():
    check = load_script("source_subset_check")
    resnet, fam = _resnet(), pd.DataFrame({"kernel_ms": [2.5, 6.5]})
    rule = check.source_rows("where(width <= 1.0 and early_downsample == True)", resnet,
                             resnet, fam)
    assert list(rule["config_id"]) == ["c0", "c3", "c6", "c8", "c9"]
    assert list(check.source_rows("kernel_range", resnet, resnet, fam)["config_id"]) == \
        ["c2", "c3", "c4", "c5"]
    r4 = check.source_rows("random_4_d2", resnet, resnet, fam)
    assert len(r4) == 4 and r4.equals(check.source_rows("random_4_d2", resnet, resnet, fam))
    assert not r4.equals(check.source_rows("random_4_d3", resnet, resnet, fam))
    assert check.source_rows("all", resnet, resnet, fam) is resnet
    with pytest.raises(SystemExit, match="selects no row"):
        check.source_rows("where(width > 9)", resnet, resnet, fam)
    with pytest.raises(SystemExit, match="only 10 rows"):
        check.source_rows("random_11", resnet, resnet, fam)
    with pytest.raises(SystemExit, match="source 'where\\(nope > 1\\)'"):
        check.source_rows("where(nope > 1)", resnet, resnet, fam)


def test_parse_target_needs_label_path_and_a_fraction():
    check = load_script("source_subset_check")
    assert check.parse_target("z3=data/x.parquet:0.3") == ("z3", Path("data/x.parquet"), 0.3)
    for bad, msg in [("data/x.parquet", "want LABEL=PATH:FRACTION"), ("a=b:1.5", "not in")]:
        with pytest.raises(SystemExit, match=msg):
            check.parse_target(bad)


def _blind(gain: dict[tuple[str, str], float], mape: float = 15.0, rho: float = 0.0
           ) -> tuple[pd.DataFrame, pd.DataFrame]:
    score = load_script("source_subset_score")
    rows, grows = [], []
    for d in ("a", "b", "c", "d"):
        for f in ("efficientnet", "mobilenetv2", "vgg"):
            for s, m, r in [("all", 15.0, 0.95), (score.RULE, mape, 0.95 + rho)]:
                rows.append({"dataset": d, "family": f, "source": s, "model": "offset", "k": 10,
                             "mape_pct_mean": m, "spearman_mean": r})
            grows.append({"dataset": d, "family": f, "source": score.RULE,
                          "gain_pts_mean": gain.get((d, f), 0.0)})
    return pd.DataFrame(rows), pd.DataFrame(grows)


def test_judge_turns_with_the_numbers():
    score = load_script("source_subset_score")
    good = {(d, f): v for d in "abcd" for f, v in
            (("mobilenetv2", 1.6), ("efficientnet", 0.6), ("vgg", -0.1))}
    held = {i: ok for i, _, ok in score.judge(*_blind(good))}
    assert all(held.values())
    held = {i: ok for i, _, ok in score.judge(*_blind({**good, ("d", "mobilenetv2"): -0.1},
                                                      mape=9.9, rho=-0.02))}
    assert held == {"O1": False, "O2": True, "O3": True, "O4": False, "O5": False}
    # one efficientnet loss of four is allowed; two are not
    two = {**good, ("a", "efficientnet"): -1.0, ("b", "efficientnet"): 5.0}
    assert {i: ok for i, _, ok in score.judge(*_blind(two))}["O2"]
    two[("c", "efficientnet")] = -0.1
    assert not {i: ok for i, _, ok in score.judge(*_blind(two))}["O2"]


def test_score_regenerates_the_committed_blind_judgement(tmp_path):
    for d in BLIND.iterdir():
        if d.is_dir():
            (tmp_path / d.name).mkdir()
            for name in ("summary.csv", "gains.csv"):
                (tmp_path / d.name / name).write_bytes((d / name).read_bytes())
    cmd = [sys.executable, str(ROOT / "scripts" / "source_subset_score.py"), str(tmp_path)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    want = (BLIND / "scores.txt").read_text().split("\n", 1)[1]
    got = (tmp_path / "scores.txt").read_text().split("\n", 1)[1]
    assert got == want and want.rstrip().endswith("2 of 5 held")
    r = subprocess.run(cmd[:-1] + [str(tmp_path / "cpu_xeon_emr_2c")], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert r.returncode != 0 and "no data-set folder" in r.stderr
