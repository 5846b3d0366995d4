"""The run's claims tables: rebuilt from every notebook's rows (no stale rows), and the
"paper claim vs ours" table with one verdict per row (carb_lib.core.claims)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from carb_lib.core import claims as C

REPO = Path(__file__).resolve().parents[1]


def _row(cid, platform, ours, paper=1.0, testable=True, **extra):
    return {"claim_id": cid, "claim": f"claim {cid}", "paper_value": paper, "our_value": ours,
            "platform": platform, "n": 100, "testable": testable, "reason": "r", **extra}


def test_a_notebook_replaces_all_its_rows_and_the_table_is_rebuilt(tmp_path):
    C.write_claims(tmp_path, "01_a", [_row("x", "p1", 1.0), _row("x", "p2", 2.0)])
    C.write_claims(tmp_path, "02_b", [_row("y", "p1", 3.0)])
    table = C.write_claims(tmp_path, "01_a", [_row("x", "p1", 5.0)])  # p2 gone from 01_a
    back = pd.read_csv(tmp_path / "claims.csv")
    assert sorted(zip(back["claim_id"], back["platform"], back["our_value"], strict=True)) == [
        ("x", "p1", 5.0), ("y", "p1", 3.0)]
    assert set(table["source"]) == {"01_a", "02_b"}
    review = pd.read_csv(tmp_path / "claims_vs_paper.csv")
    assert list(review.columns) == C.REVIEW_COLUMNS and len(review) == 2
    assert (tmp_path / "claims_vs_paper.md").read_text().startswith("# The paper's claims")
    # SYNTHETIC rows never reach claims.csv, and their table says SYNTHETIC
    C.write_claims(tmp_path, "01_a", [_row("x", "s", 1.0)], synthetic=True)
    assert "s" not in set(pd.read_csv(tmp_path / "claims.csv")["platform"])
    assert "SYNTHETIC" in (tmp_path / "claims_vs_paper_synthetic.md").read_text()


@pytest.mark.parametrize("cid, ours, paper, ci, expected", [
    ("carb_r2_latency_ms", 0.975, 0.992, None, "supported"),  # within 0.02
    ("carb_r2_latency_ms", 0.959, 0.992, None, "not supported"),
    ("b1_flops_r2_latency_ms", 0.03, 0.233, None, "supported"),  # FLOPs alone stays poor
    ("b1_flops_r2_latency_ms", 0.6, 0.233, None, "not supported"),
    ("divergence_latency_growth", 12.1, 11.2, (10.0, 14.8), "supported"),  # CI holds 11.2
    ("divergence_latency_growth", 14.6, 11.2, (12.7, 17.9), "not supported"),
    ("transfer_slope_latency", 2.3, 2.09, None, "supported"),  # no CI: within 25 %
    ("screening_time_s", 0.4, None, None, "not testable"),  # the paper gives no number
    ("unknown_claim", 1.0, 1.0, None, "not testable"),  # no rule
])
def test_verdicts_follow_the_stated_rule(cid, ours, paper, ci, expected):
    row = _row(cid, "p", ours, paper=paper)
    if ci:
        row.update(our_ci_low=ci[0], our_ci_high=ci[1])
    assert C.verdict(row) == expected
    table = C.reviewer_table(pd.DataFrame([row]))
    why = table["why"].iloc[0]
    assert ("supported if" in why) == (expected != "not testable")
    if paper is None:
        assert "reports no number" in why


def test_an_untestable_claim_shows_no_value_of_ours_and_says_why():
    row = _row("carb_r2_energy_j", "cpu", None, paper=0.993, testable=False,
               reason="energy_j not measured on this platform")
    t = C.reviewer_table(pd.DataFrame([row]))
    assert t.loc[0, "verdict"] == "not testable" and t.loc[0, "ours"] == ""
    assert t.loc[0, "why"] == "energy_j not measured on this platform"
    assert t.loc[0, "paper (reported)"] == "0.993"


def test_n_counts_one_thing_per_row():
    t = C.reviewer_table(pd.DataFrame([_row("carb_r2_latency_ms", "p", 0.9),
                                       _row("help_fewshot_spearman_k10_mean", "h", 0.9),
                                       _row("screening_eliminated_fraction", "p", 0.99)]))
    assert dict(zip(t["claim_id"], t["n counts"], strict=True)) == {
        "carb_r2_latency_ms": "measured rows", "help_fewshot_spearman_k10_mean": "HELP devices",
        "screening_eliminated_fraction": "candidates"}


def test_the_shipped_tables_are_rebuilt_from_the_notebooks_rows():
    """results/claims.csv is exactly every notebook's current rows (results/claims/*.csv):
    no row left from an older notebook, and the reviewer table is derived from it."""
    results = REPO / "results"
    shipped = pd.read_csv(results / "claims.csv")
    parts = pd.concat([pd.read_csv(f) for f in sorted((results / "claims").glob("*.csv"))],
                      ignore_index=True)
    assert len(shipped) == len(parts)
    assert not shipped.duplicated(["claim_id", "platform"]).any()
    assert set(shipped["source"]) == {p.stem for p in (results / "claims").glob("*.csv")}
    key = ["claim_id", "platform"]
    pd.testing.assert_frame_equal(
        shipped.sort_values(key).reset_index(drop=True)[key + ["our_value", "source"]],
        parts.sort_values(key).reset_index(drop=True)[key + ["our_value", "source"]])
    review = pd.read_csv(results / "claims_vs_paper.csv", keep_default_na=False)
    expected = C.reviewer_table(shipped).astype(str)
    assert review.astype(str).equals(expected)
    assert set(review["verdict"]) <= {"supported", "not supported", "not testable"}
    # notebooks 03 and 04 run on the full profile's dataset only
    from carb_lib.app.reproduce import load_runs

    for run in load_runs("full"):
        if run.name in ("03_carb", "04_screening"):
            rows = shipped[shipped["source"] == run.name]
            assert set(rows["platform"]) == {Path(run.parameters["dataset"]).stem}, run.name
