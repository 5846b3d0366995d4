"""Session 34's judgements on fresh configs off the grid: pre-registration AI
(``scripts/off_grid_score.py``) and AJ, the steadiest ResNet source
(``scripts/source_sitting_score.py``, ``scripts/source_sitting_grid.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from script_loader import load_script, verdicts

FAMILIES = ("efficientnet", "mobilenetv2", "vgg")


def _reference(path: Path, runs: list[float]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"status": ["ok"] * len(runs), "latency_ms": runs}).to_parquet(path)


# --------------------------------------------------------------------------- AI
def _cell(latency: dict[str, float], memory: float, rho: float) -> pd.DataFrame:
    rows = []
    for seed in range(3):
        for f in FAMILIES:
            for variant in ("default", "law alone"):
                m = latency[f] + (seed - 1) * 0.5 + (variant == "law alone")
                rows += [{"seed": seed, "family": f, "target": "latency_ms", "model": "offset",
                          "k": 10, "variant": variant, "mape_pct": m, "spearman": rho},
                         {"seed": seed, "family": f, "target": "peak_mem_mib",
                          "model": "zero_shot", "k": 0, "variant": variant, "mape_pct": memory,
                          "spearman": 1.0}]
    return pd.DataFrame(rows)


def _predictions(step: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seed 0's zero-shot efficientnet fp32 predictions: log residual -0.1 at 56 px and
    -0.1 + ``step`` at 40 px (an fp16 row at 40 px with residual +1 must not count)."""
    cfg = pd.DataFrame({"config_id": ["a", "b", "c", "d"], "precision": ["fp32"] * 3 + ["fp16"],
                        "resolution": [40, 56, 56, 40]})
    r = np.array([-0.1 + step, -0.1, -0.1, 1.0])
    pred = pd.DataFrame({"family": "efficientnet", "target": "latency_ms", "model": "zero_shot",
                         "k": 0, "config_id": cfg["config_id"], "batch": 1,
                         "measured": np.exp(r), "predicted": 1.0})
    return pred, cfg


def _judge_ai(scores, pred, rows) -> dict[str, str]:
    mod, kept = load_script("off_grid_score"), load_script("kept_heap_sitting_score")
    lines: list[str] = []
    mod.judge_cell(scores, pred, rows, kept.Judge(lines))
    return verdicts("\n".join(lines), "AI")


def test_ai_holds_on_exact_memory_good_ranking_and_no_step_at_40_px():
    pred, rows = _predictions(step=0.05)
    got = _judge_ai(_cell({"efficientnet": 9.5, "mobilenetv2": 8.0, "vgg": 5.0}, 0.01, 0.99),
                    pred, rows)
    assert got == {"AI1": "HELD", "AI2": "HELD", "AI3": "HELD", "AI4": "HELD", "AI5": "HELD"}


def test_ai_misses_each_bound_and_reads_the_default_source_only():
    pred, rows = _predictions(step=0.2)
    # the law alone is 1 point worse: the default's 10.4 % is what AI3 reads
    got = _judge_ai(_cell({"efficientnet": 10.4, "mobilenetv2": 10.2, "vgg": 5.0}, 0.2, 0.94),
                    pred, rows)
    assert got == {"AI1": "MISSED", "AI2": "MISSED", "AI3": "MISSED", "AI4": "MISSED",
                   "AI5": "MISSED"}
    got = _judge_ai(_cell({"efficientnet": 9.6, "mobilenetv2": 9.6, "vgg": 9.6}, 0.05, 0.96),
                    pred, rows)
    assert got["AI3"] == got["AI4"] == got["AI1"] == got["AI2"] == "HELD"


# --------------------------------------------------------------------------- AJ
def test_the_steadiest_source_is_the_lowest_reference_cv(tmp_path, monkeypatch):
    grid = load_script("source_sitting_grid")
    monkeypatch.chdir(tmp_path)
    for tag, runs in {"a": [8.0, 9.0, 7.0], "b": [8.0, 8.1, 7.9], "c": [8.0, 8.4, 7.6]}.items():
        _reference(Path(f"results/measurement/P_{tag}/reference.parquet"), runs)
    assert grid.steadiest("P", ("a", "b", "c")) == "b"
    assert grid.steadiest("P", ("a", "c")) == "c"


def _grid(eff: list[float], *, others: float = 5.0) -> pd.DataFrame:
    sources = load_script("source_sitting_grid").SOURCES
    cv = np.linspace(0.016, 0.137, len(sources))
    return pd.DataFrame({"source": sources, "source_ref_cv": cv, "source_ref_ms": 8.0,
                         "targets": "t", "efficientnet_mape_pct": eff,
                         "mobilenetv2_mape_pct": others, "vgg_mape_pct": others,
                         **{f"{f}_sd": 0.4 for f in FAMILIES},
                         **{f"{f}_spearman": 0.99 for f in FAMILIES},
                         **{f"{f}_memory_pct": 0.01 for f in FAMILIES}})


def _score_aj(tmp_path, monkeypatch, g: pd.DataFrame, chosen: str) -> str:
    mod = load_script("source_sitting_score")
    monkeypatch.chdir(tmp_path)
    _reference(Path("results/measurement/P_t/reference.parquet"), [8.0, 8.1, 7.9, 8.0])
    for s in mod.SOURCES:
        _reference(Path(f"results/measurement/P_{s}/reference.parquet"), [8.0, 8.2])
    Path("data/other_cpus/new_families").mkdir(parents=True)
    Path("data/other_cpus/new_families/P_t.parquet").write_text("")
    seen = []
    monkeypatch.setattr(mod, "grid", lambda p, tags, seeds: seen.append((p, tags, seeds)) or g)
    monkeypatch.setattr(mod, "steadiest", lambda p: chosen)
    assert mod.main(["P", "--tag", "t", "--seeds", "2"]) == 0
    assert seen == [("P", ["t"], 2)]
    return (tmp_path / "results" / "measurement" / "P_t" / "score.txt").read_text()


def test_aj_holds_when_the_cell_follows_the_source_noise(tmp_path, monkeypatch):
    # SOURCES order: 29 kept, 30 kept, 30 default, 31 steady, 32 traffic, 34 both
    text = _score_aj(tmp_path, monkeypatch, _grid([5.0, 8.0, 9.0, 10.0, 11.0, 12.0]),
                     "session29_kept")
    assert verdicts(text, "AJ") == {f"AJ{i}": "HELD" for i in range(7)}
    assert "session30_kept 8.00 %, session29_kept 5.00 %, gain +3.00 points" in text


def test_aj_misses_a_small_gain_and_an_unordered_grid(tmp_path, monkeypatch):
    text = _score_aj(tmp_path, monkeypatch, _grid([9.0, 10.5, 8.0, 11.0, 7.0, 12.0],
                                                  others=10.5), "session29_kept")
    got = verdicts(text, "AJ")
    assert got["AJ3"] == "HELD" and got["AJ4"] == "MISSED"
    assert got["AJ5"] == "MISSED" and got["AJ6"] == "MISSED"  # 10.5 - 9.0 = 1.5 < 2
