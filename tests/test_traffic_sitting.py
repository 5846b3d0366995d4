"""Pre-registration AG (session 32): weights read from memory added to an operator's time alone
(``KernelModel(traffic="sum")``). The sittings' table (``scripts/traffic_check.py``) and the
judgement (``scripts/traffic_sitting_score.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
from script_loader import load_script, replication_summary, verdicts

from carb_lib.cache_probe import CacheKnee

ROOT = Path(__file__).resolve().parents[1]


def test_the_check_fits_one_kernel_model_per_variant_with_the_knee(monkeypatch):
    mod = load_script("traffic_check")
    seen = []

    class Comp:
        def __init__(self, km):
            self.scores = pd.DataFrame({"law": ["kernel", "roofline"], "r2": [0.9, 0.8],
                                        "split": ["batch_small"] * 2})

    def fake(rows, bench, *, splits, seeds, kernel_model):
        seen.append((splits, seeds, kernel_model.cache, kernel_model.traffic))
        return Comp(kernel_model)

    monkeypatch.setattr(mod, "kernel_law_comparison", fake)
    knee = CacheKnee(cache_gb_per_s=28.0, memory_gb_per_s=13.6, cache_mib=74.0)
    out = mod.check(pd.DataFrame(), pd.DataFrame(), knee, 3)
    assert [s[3] for s in seen[1:]] == ["max", "sum"]  # none has no cache to read
    assert seen[0][2] is None and seen[1][2] is knee and seen[2][2] is knee
    assert all(s[:2] == (["batch_small"], 3) for s in seen)
    # the kernel law's rows only, one per variant
    assert out["traffic"].tolist() == ["none", "max", "sum"] and set(out["law"]) == {"kernel"}


def _replication(folder: Path, small: tuple[float, float], within: float,
                 large_r2: float) -> None:
    replication_summary(folder, r2=(0.99, small[0], large_r2), within=(within, 0.7, 0.8),
                        mape=(3.0, small[1], 5.0))


def _sitting(tmp: Path, none: dict, summ: dict, cv_runs: list[float]) -> None:
    res = tmp / "results" / "measurement" / "P_t"
    res.mkdir(parents=True)
    pd.DataFrame({"status": ["ok"] * len(cv_runs) + ["error"],
                  "latency_ms": [*cv_runs, 99.0]}).to_parquet(res / "reference.parquet")
    _replication(tmp / "results" / "carb" / "replication_P_t", **none)
    _replication(tmp / "results" / "carb" / "replication_P_t_sum", **summ)


def _score(tmp: Path, script: str = "traffic_sitting_score") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / f"{script}.py"),
                           "P", "--tag", "t"], capture_output=True, text=True, cwd=tmp,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_the_scorer_judges_the_two_replications(tmp_path):
    _sitting(tmp_path, {"small": (0.90, 9.0), "within": 0.97, "large_r2": 0.990},
             {"small": (0.96, 9.4), "within": 0.96, "large_r2": 0.986}, [8.0, 8.1, 7.9, 8.0])
    r = _score(tmp_path)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "results" / "measurement" / "P_t" / "score.txt").read_text()
    assert verdicts(text, "AG") == {"AG0": "HELD", "AG1": "HELD", "AG2": "HELD", "AG3": "HELD",
                                    "AG4": "HELD", "AG5": "HELD"}
    assert "sum - none: +0.060" in text and "(none 0.900)" in text  # the error row is not read


def test_the_scorer_misses_a_small_gain_a_worse_mape_and_a_noisy_host(tmp_path):
    _sitting(tmp_path, {"small": (0.94, 9.0), "within": 0.97, "large_r2": 0.990},
             {"small": (0.955, 9.6), "within": 0.94, "large_r2": 0.980}, [8.0, 9.0, 7.0, 8.0])
    assert _score(tmp_path).returncode == 0
    text = (tmp_path / "results" / "measurement" / "P_t" / "score.txt").read_text()
    assert verdicts(text, "AG") == {"AG0": "MISSED", "AG1": "HELD", "AG2": "MISSED",
                                    "AG3": "MISSED", "AG4": "MISSED", "AG5": "MISSED"}


def test_the_scorer_names_a_missing_replication_and_stops(tmp_path):
    r = _score(tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == ("traffic_sitting_score: no reference file "
                                "results/measurement/P_t/reference.parquet")


def test_weights_read_from_memory_add_to_the_time_alone_by_default():
    from carb_lib import kernels

    assert kernels.KernelModel().traffic == "sum"  # pre-registration AG's reading
    assert kernels.KernelModel(traffic="max").get_params()["traffic"] == "max"


def _score_both(tmp: Path) -> subprocess.CompletedProcess:
    return _score(tmp, "both_targets_score")


def test_pre_registration_ah_needs_both_targets_and_a_steady_host(tmp_path):
    """AH (session 34): the same replications as AG, judged on issue 14's two targets at once."""
    _sitting(tmp_path, {"small": (0.90, 9.0), "within": 0.97, "large_r2": 0.990},
             {"small": (0.96, 9.4), "within": 0.96, "large_r2": 0.986}, [8.0, 8.1, 7.9, 8.0])
    r = _score_both(tmp_path)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "results" / "measurement" / "P_t" / "score.txt").read_text()
    assert verdicts(text, "AH") == {f"AH{i}": "HELD" for i in range(6)}
    assert "targets in this sitting (AH0, AH1 and AH2): met together" in text
    assert "MAPE 3.00 %" in text and "R² 0.960" in text


def test_pre_registration_ah_is_not_read_on_a_noisy_host(tmp_path):
    # the term carries nothing here (AH5), the random split misses, and the host swings (CV 10 %)
    _sitting(tmp_path, {"small": (0.955, 9.0), "within": 0.97, "large_r2": 0.990},
             {"small": (0.96, 9.4), "within": 0.94, "large_r2": 0.975}, [8.0, 9.0, 7.0, 8.0])
    assert _score_both(tmp_path).returncode == 0
    text = (tmp_path / "results" / "measurement" / "P_t" / "score.txt").read_text()
    assert verdicts(text, "AH") == {"AH0": "MISSED", "AH1": "HELD", "AH2": "MISSED",
                                    "AH3": "HELD", "AH4": "MISSED", "AH5": "MISSED"}
    assert "not both met, or the host was not steady" in text
    r = _score_both(tmp_path / "results")  # no sitting there
    assert r.returncode == 2 and r.stderr.strip().startswith("both_targets_score: no reference")
