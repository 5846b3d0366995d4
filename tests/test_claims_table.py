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


#: The tolerance band of every claim (prefix, kind, tolerance), pinned: a change to RULES must
#: change this too.
PINNED_RULES = """
carb_r2_ at_least 0.02 | static_r2_ at_least 0.02 | lobto_r2_ at_least 0.02
b2_latency_proxy at_least 0.02 | b1_flops_r2_ at_most 0.1
help_fewshot_spearman at_least 0.02 | help_flops_spearman about 0.1
screening_budget_accuracy at_least 0.02 | screening_eliminated_fraction at_least 0.005
screening_false_accept_rate at_most 0.02 | screening_hw_budget_checks at_least 0
screening_hw_energy_error_j about 0.25 | screening_time_s below 60
transfer_energy_rank_rho at_least 0.02 | transfer_latency_needs_platform_model above 1
distinct_scaling above 0 | divergence_ about 0.25 | fp16_ about 0.25 | small_batch_ about 0.25
transfer_slope_ about 0.25 | cpu_transfer_zero_shot_ape_over_noise at_most 0
cpu_transfer_few_shot_k10_ape_over_noise at_most 0 | cpu_transfer_zero_shot_spearman at_least 0
platform_latency_mape_over_noise at_most 0 | platform_small_batch_r2 at_least 0
host_calibration_ape_change_pp at_most 0
"""


def test_every_claim_has_its_pinned_tolerance_band():
    pinned = {}
    for item in PINNED_RULES.replace("\n", " | ").split("|"):
        if item.strip():
            prefix, kind, tol = item.split()
            pinned[prefix] = (kind, float(tol))
    assert C.RULES == pinned
    shipped = pd.read_csv(REPO / "results" / "claims.csv")
    for row in shipped.to_dict("records"):
        if C.reference(row) is not None or str(row["testable"]) == "True":
            assert C.band(row) is not None, row["claim_id"]


@pytest.mark.parametrize("cid, ours, paper, ci, n, expected", [
    ("carb_r2_latency_ms", 0.98, 0.992, (0.975, 0.985), 477, "supported"),  # CI inside >= 0.972
    ("carb_r2_latency_ms", 0.959, 0.992, (0.9415, 0.977), 477, "inconclusive"),  # straddles
    ("carb_r2_latency_ms", 0.90, 0.992, (0.88, 0.92), 477, "contradicted"),  # wholly below
    ("carb_r2_latency_ms", 0.99, 0.992, None, 477, "inconclusive (no interval)"),
    ("b1_flops_r2_latency_ms", 0.03, 0.233, (-0.01, 0.07), 477, "supported"),
    ("b1_flops_r2_latency_ms", 0.6, 0.233, (0.5, 0.7), 477, "contradicted"),
    ("divergence_latency_growth", 12.1, 11.2, (10.0, 13.0), 711, "supported"),  # in [8.4, 14]
    ("divergence_latency_growth", 14.6, 11.2, (12.7, 17.9), 637, "inconclusive"),
    ("divergence_latency_growth", 6.18, 11.2, (0.49, 11.7), 10, "inconclusive (n = 5+5)"),
    ("divergence_latency_growth", 30.0, 11.2, (25.0, 35.0), 10, "inconclusive (n = 5+5)"),
    ("fp16_energy_ratio", 1.15, 1.1, (0.867, 1.39), 10, "inconclusive"),  # band [0.825, 1.375]
    ("small_batch_j_per_gflop", 69.8, 5.9, (24.8, 173.0), 10, "contradicted"),
    ("screening_eliminated_fraction", 0.9958, 0.998, None, 17280, "supported"),  # exact count
    ("screening_eliminated_fraction", 0.95, 0.998, None, 17280, "contradicted"),
    ("screening_time_s", 0.4, None, None, 17280, "inconclusive (no interval)"),  # ours only
    ("unknown_claim", 1.0, 1.0, (0.9, 1.1), 100, "not testable"),  # no rule
])
def test_verdicts_judge_the_interval_against_the_band(cid, ours, paper, ci, n, expected):
    row = _row(cid, "p", ours, paper=paper)
    row["n"] = n
    if ci:
        row.update(our_ci_low=ci[0], our_ci_high=ci[1])
    assert C.verdict(row) == expected
    table = C.reviewer_table(pd.DataFrame([row]))
    assert table["verdict"].iloc[0] == expected
    why = table["why"].iloc[0]
    assert why.startswith("band: ") == (expected != "not testable")
    if expected == "not testable":
        assert why.startswith("no rule to judge it")
    method = table["interval method"].iloc[0]
    if cid == "screening_eliminated_fraction":
        assert method == "count (exact)"
    elif ci is None:
        assert method == "none"
    else:
        assert method not in ("none", "count (exact)")


def test_a_target_row_is_judged_against_its_target_and_says_whether_it_was_missed():
    row = _row("cpu_transfer_zero_shot_ape_over_noise_cpu_x", "cpu_x", 7.23, paper=None,
               target_value=2.0, target_source="project target")
    t = C.reviewer_table(pd.DataFrame([row, {**row, "claim_id": row["claim_id"] + "y",
                                             "our_value": 1.2}]))
    assert list(t["paper (reported)"]) == ["", ""] and list(t["target"]) == ["2", "2"]
    assert t.loc[t["ours"] == "7.23", "why"].iloc[0].startswith("target missed: ours 7.23")
    assert t.loc[t["ours"] == "1.2", "why"].iloc[0].startswith("target met: ours 1.2")
    assert set(t["verdict"]) == {"inconclusive (no interval)"}


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
    assert (results / "claims_vs_paper.md").read_text() == C.claims_markdown(shipped)
    # notebooks 03 and 04 run on the full profile's dataset only
    from carb_lib.app.reproduce import load_runs

    for run in load_runs("full"):
        if run.name in ("03_carb", "04_screening"):
            rows = shipped[shipped["source"] == run.name]
            assert set(rows["platform"]) == {Path(run.parameters["dataset"]).stem}, run.name


def test_every_shipped_claim_with_a_value_has_a_verdict_and_no_support_leaves_its_band():
    shipped = pd.read_csv(REPO / "results" / "claims.csv")
    review = C.reviewer_table(shipped)
    assert not review["why"].str.contains("no rule to judge it").any()
    for row, judged in zip(shipped.to_dict("records"), map(C.verdict, shipped.to_dict("records")),
                           strict=True):
        has_value = pd.notna(row["our_value"]) and str(row["testable"]) == "True"
        assert (judged.split(" (")[0] in C.JUDGED) == has_value, (row["claim_id"], judged)
        if judged == "supported" and C.interval_method(row) != "count (exact)":
            lo, hi = C.band(row)
            assert lo <= row["our_ci_low"] <= row["our_ci_high"] <= hi, row["claim_id"]


def test_our_targets_are_in_their_own_columns_and_section_never_as_paper_values():
    shipped = pd.read_csv(REPO / "results" / "claims.csv")
    targets = shipped[shipped["claim_id"].str.startswith(("cpu_transfer_", "platform_",
                                                          "host_calibration_"))]
    assert len(targets) and targets["paper_value"].isna().all()
    assert targets["target_value"].notna().all() and targets["target_source"].notna().all()
    assert shipped.loc[shipped["target_value"].notna(), "claim_id"].isin(
        targets["claim_id"]).all()
    md = (REPO / "results" / "claims_vs_paper.md").read_text()
    ours = md[md.index("## Our targets"):]
    assert all(cid in ours for cid in targets["claim_id"])


def test_the_summary_is_one_page_with_every_claim():
    shipped = pd.read_csv(REPO / "results" / "claims.csv")
    summary = C.summary_table(shipped)
    assert list(summary.columns) == C.SUMMARY_COLUMNS
    assert len(summary) <= 30
    assert summary.map(lambda v: len(str(v))).max().max() <= C.SUMMARY_CELL_MAX
    assert summary["why"].map(lambda v: len(v.split())).max() <= 15
    keys = list(summary["claim ids"])
    for cid in shipped["claim_id"]:
        hits = [k for k in keys if k == cid or (k.endswith("*") and cid.startswith(k[:-1]))]
        assert len(hits) == 1, cid
    md = (REPO / "results" / "claims_vs_paper.md").read_text()
    assert md.index("## Summary") < md.index("## The paper's claims") < md.index("## Our targets")
    assert all(f"| {k} |" in md for k in keys)


def test_a_grouped_summary_row_counts_its_verdicts():
    rows = [_row("divergence_latency_growth", "a", 12.1, paper=11.2, our_ci_low=10.0,
                 our_ci_high=13.0),
            _row("divergence_latency_growth", "b", 6.0, paper=11.2, our_ci_low=0.5,
                 our_ci_high=11.7, n=10),
            _row("divergence_latency_growth", "c", None, paper=11.2, testable=False)]
    s = C.summary_table(pd.DataFrame(rows))
    assert len(s) == 1
    assert s.loc[0, "verdict"] == "1 inconclusive (n = 5+5), 1 supported, 1 not testable"
    assert s.loc[0, "ours (95% CI)"] == "a 12.1 [10, 13]; b 6 [0.5, 11.7]"


def test_untestable_gpu_claims_count_the_gpus_measured():
    shipped = pd.read_csv(REPO / "results" / "claims.csv")
    gpus = {p for p in shipped["platform"].dropna() if str(p).startswith("gpu_")}
    reasons = shipped["reason"].dropna().astype(str)
    assert not reasons.str.contains("no GPU has been measured").any() or not gpus
    counted = reasons[reasons.str.contains("GPU measured")]
    assert len(counted) and counted.str.contains(f"({len(gpus)} GPU measured)", regex=False).all()


def test_the_shipped_target_rows_are_what_their_tables_give():
    """Our targets in results/claims.csv follow from the shipped tables they are computed from:
    the CPU-transfer summary, the platforms report and the re-measurement noise of data/audit."""
    from carb_lib.evaluation import platforms as plat
    from carb_lib.transfer import cpus as TC

    results = REPO / "results"
    shipped = pd.read_csv(results / "claims.csv").set_index("claim_id")
    summary = pd.read_csv(results / "transfer/cpu_loco_summary.csv")
    rows = pd.concat([TC.transfer_claims(summary),
                      plat.target_claims(pd.read_csv(results / "carb/platforms.csv"))])
    for r in rows.itertuples():
        assert shipped.loc[r.claim_id, "our_value"] == pytest.approx(r.our_value, rel=1e-12)
        assert shipped.loc[r.claim_id, "target_value"] == r.target_value
    files = {p: tuple(str(REPO / f) for f in spec) for p, spec in TC.CPU_FILES.items()}
    noise = TC.cpu_remeasurement_noise(files).drop(columns="audit")
    stored = pd.read_csv(results / "transfer/cpu_noise.csv")
    pd.testing.assert_frame_equal(noise, stored.drop(columns="audit"), check_dtype=False,
                                  rtol=1e-12)
    got = summary.set_index(["target", "method", "k"])
    assert got["noise_median_ape_pct"].groupby("target").first().to_dict() == pytest.approx(
        stored.set_index("platform")["median_ape_pct"].to_dict(), rel=1e-12)
