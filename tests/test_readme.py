"""README result tables are written from results/ (carb_lib.readme) and cannot drift."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from carb_lib import readme


def test_readme_tables_match_results(repo_root):
    stale = readme.stale_blocks(repo_root / "README.md", repo_root / "results")
    assert stale == [], f"README blocks {stale} differ from results/: run `carb readme`"


@pytest.fixture
def copy(tmp_path, repo_root):
    shutil.copytree(repo_root / "results", tmp_path / "results",
                    ignore=shutil.ignore_patterns("*.parquet", "noise"))
    shutil.copy(repo_root / "README.md", tmp_path / "README.md")
    return tmp_path


def test_a_changed_result_makes_the_readme_stale_until_rewritten(copy):
    path = copy / "results/benchmarks/static_features.csv"
    df = pd.read_csv(path)
    big = df["n_configs"].idxmax()
    df.loc[big, "configs_per_s"] = 3.456e6
    df.loc[big, "repeats"] = 7
    df.to_csv(path, index=False)
    assert readme.stale_blocks(copy / "README.md", copy / "results") == ["static-features-bench"]
    assert readme.update_readme(copy / "README.md", copy / "results") is True
    text = (copy / "README.md").read_text()
    assert "**3.46 M configs/s**" in text and "median of 7 repeats" in text
    assert readme.stale_blocks(copy / "README.md", copy / "results") == []
    assert readme.update_readme(copy / "README.md", copy / "results") is False


def test_transfer_sentence_compares_medians_with_medians(copy):
    pw = pd.read_csv(copy / "results/transfer/pairwise.csv")
    text = readme.transfer_summary(copy / "results")
    sp = pw[pw["kind"] == "specific"]
    assert f"median MAPE {sp['mape_pct'].median():.1f} %" in text
    assert f"median Spearman {sp['spearman'].median():.2f}" in text
    assert "mean" not in text


def test_missing_block_or_file_is_an_error(copy):
    text = (copy / "README.md").read_text()
    with pytest.raises(readme.ReadmeError, match="missing \\['screening'\\]"):
        readme.render(text.replace("<!-- carb:screening -->", "").replace(
            "<!-- /carb:screening -->", ""), copy / "results")
    (copy / "results/screening/scenarios.csv").unlink()
    with pytest.raises(readme.ReadmeError, match="scenarios.csv does not exist"):
        readme.render(text, copy / "results")


def test_noise_floor_table_is_rendered_when_written(copy):
    rel = next(p for p in (copy / "results/carb").iterdir()
               if (p / "protocol_summary.csv").exists())
    (rel / "noise_floor.csv").unlink(missing_ok=True)
    assert "Against the noise floor" not in readme.carb_metrics(copy / "results")
    pd.DataFrame([{
        "platform": rel.name, "kind": "random", "model": "carb", "target": "latency_ms",
        "subset": "all", "n_audit": 200, "r2_remeasure": 0.98, "mape_pct_remeasure": 13.98,
        "within_10pct_remeasure": 0.495, "spearman_remeasure": 0.99, "r2_mean": 0.95,
        "r2_sd": 0.01, "mape_pct_mean": 14.95, "mape_pct_sd": 0.9, "within_10pct_mean": 0.426,
        "within_10pct_sd": 0.03, "spearman_mean": 0.98, "spearman_sd": 0.001, "runs": 5,
        "mape_ratio": 14.95 / 13.98}]).to_csv(rel / "noise_floor.csv", index=False)
    text = readme.carb_metrics(copy / "results")
    assert ("| latency | all | 200 | 13.98 | 14.95 ± 0.90 | 1.07 | 49.5 % | 42.6 ± 3.0 % | "
            "0.9800 | 0.9500 ± 0.0100 |") in text
    assert f"carb/{rel.name}/noise_floor.csv" in text


def test_cross_family_table_shows_the_re_measurement_when_audited(copy):
    path = copy / "results/cross_family/noise_floor.csv"
    path.unlink(missing_ok=True)
    assert "re-measured" not in readme.cross_family(copy / "results")
    pd.DataFrame([
        {"family": "vgg", "target": "latency_ms", "subset": "all", "n": 50, "mape_pct": 12.345,
         "within_10pct": 0.5, "r2": 0.9, "spearman": 0.9876},
        {"family": "vgg", "target": "latency_ms", "subset": "clean", "n": 20, "mape_pct": 5.0,
         "within_10pct": 0.8, "r2": 0.95, "spearman": 0.99},
    ]).to_csv(path, index=False)
    text = readme.cross_family(copy / "results")
    lines = {ln.split(" | ")[1]: ln for ln in text.splitlines() if ln.startswith("| vgg |")}
    assert lines["latency MAPE %"].endswith("| 12.3 (50) |")
    assert lines["latency Spearman"].endswith("| 0.988 |")
    assert lines["memory MAPE %"].endswith("| – |")  # no memory row in this audit
    assert "cross_family/noise_floor.csv" in text


def test_cross_family_laws_block_puts_the_kernel_law_beside_the_roofline(copy):
    c = pd.read_csv(copy / "results/cross_family/law_comparison.csv")
    k = pd.read_csv(copy / "results/cross_family/issue_targets_kernel_law.csv")
    text = readme.cross_family_laws(copy / "results")
    # the judged method's k = 10 cells are bold (offset), blend's beside them are not
    r = c[(c["family"] == "efficientnet") & (c["model"] == "offset") & (c["k"] == 10)].iloc[0]
    assert (f"| efficientnet | offset, k=10 | {r['roofline_mape_pct']:.1f} → "
            f"**{r['kernel_mape_pct']:.1f}** |") in text
    assert (f"{r['roofline_spearman']:.3f} → **{r['kernel_spearman']:.3f} ± "
            f"{r['kernel_spearman_sd']:.3f}**") in text
    b = c[(c["family"] == "efficientnet") & (c["model"] == "blend") & (c["k"] == 10)].iloc[0]
    assert (f"| efficientnet | blend, k=10 | {b['roofline_mape_pct']:.1f} → "
            f"{b['kernel_mape_pct']:.1f} |") in text
    assert f"kernel law: **{int(k['met'].sum())} of {len(k)}**" in text
    (copy / "results/cross_family/law_comparison.csv").unlink()
    assert "Not computed" in readme.cross_family_laws(copy / "results")


def test_cross_family_table_follows_the_judged_method_and_names_its_source(copy):
    checks_path = copy / "results/cross_family/issue_targets.csv"
    checks = pd.read_csv(checks_path)
    judged = checks.loc[checks["k"] > 0, "model"].unique()
    assert list(judged) == ["offset"]  # notebook 05's few_shot_method
    text = readme.cross_family(copy / "results")
    header = text.splitlines()[0]
    assert "| offset, k=10 | offset, k=50 | blend, k=10 |" in header  # blend beside it
    assert "few-shot method `offset`" in text
    # the Zen 5 block reads its own folder and says so
    z5 = readme.cross_family(copy / "results", sub=readme.ZEN5_CROSS_FAMILY)
    assert "`results/other_cpus/cpu_epyc_zen5_2c/cross_family/summary.csv`" in z5
    # two judged methods are refused, naming them
    checks.loc[checks["k"] > 0, "model"] = ["blend", "offset"] * int((checks["k"] > 0).sum() / 2)
    checks.to_csv(checks_path, index=False)
    with pytest.raises(readme.ReadmeError, match=r"judges 2 few-shot methods \(\['blend', 'offset'\]\)"):
        readme.cross_family(copy / "results")
