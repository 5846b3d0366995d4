"""carb_lib.evaluation.platforms: CARB on every CPU platform, the default latency law beside the
roofline ablation and the platform's re-measurement noise (a sample of two platforms' rows)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from carb_lib.ensemble import PRESETS
from carb_lib.evaluation import platforms as plat
from carb_lib.transfer.cpus import CPU_FILES, cpu_remeasurement_noise

TWO = ("cpu_epyc_zen4_2c", "cpu_xeon_gnr_2c")


@pytest.fixture(scope="module")
def report(repo_root):
    files = {p: tuple(str(repo_root / s) for s in CPU_FILES[p]) for p in TWO}
    return plat.platform_report(files, seeds=2, params=PRESETS["test"], max_rows=160,
                                splits=("random", "batch_small")), files


def test_runs_and_summary_shape(report):
    rep, _ = report
    runs, summary = rep.runs, rep.summary
    # platform x split x law x target x seed, every run scored
    assert len(runs) == 2 * 2 * 2 * 2 * 2
    assert list(runs.columns[:6]) == ["platform", "split", "law", "latency_law", "target", "seed"]
    assert set(runs["law"]) == {"roofline", "auto"} and set(runs["split"]) == {"random",
                                                                               "batch_small"}
    assert runs[["r2", "mape_pct", "within_10pct", "spearman"]].notna().all().all()
    small = runs[runs["split"] == "batch_small"]
    assert small["n_test"].gt(0).all() and (small["n_train"] + small["n_test"] == 160).all()
    assert len(summary) == 2 * 2 * 2 * 2
    assert (summary["n_seeds"] == 2).all()
    for m in ("r2", "mape_pct", "within_10pct", "spearman"):
        assert {f"{m}_mean", f"{m}_sd"} <= set(summary.columns)
    one = runs[(runs.platform == TWO[0]) & (runs.split == "random") & (runs.law == "auto")
               & (runs.target == "latency_ms")]
    row = summary[(summary.platform == TWO[0]) & (summary.split == "random")
                  & (summary.law == "auto") & (summary.target == "latency_ms")]
    assert row["mape_pct_mean"].iloc[0] == pytest.approx(one["mape_pct"].mean())
    assert row["mape_pct_sd"].iloc[0] == pytest.approx(one["mape_pct"].std(ddof=1))


def test_auto_is_the_kernel_law_where_a_benchmark_exists(report):
    rep, _ = report
    assert set(rep.choices["auto_law"]) == {"kernel"}
    runs = rep.runs
    assert set(runs.loc[runs.law == "auto", "latency_law"]) == {"kernel"}
    assert set(runs.loc[runs.law == "roofline", "latency_law"]) == {"roofline"}
    # the two laws predict latency differently on the same rows
    lat = runs[runs.target == "latency_ms"].pivot_table(
        index=["platform", "split", "seed"], columns="law", values="mape_pct")
    assert not np.allclose(lat["auto"], lat["roofline"])


def test_ratio_is_mape_over_the_remeasurement_noise(report):
    rep, files = report
    s, noise = rep.summary, cpu_remeasurement_noise(files).set_index("platform")
    lat = s[s.target == "latency_ms"]
    assert lat["noise_median_ape_pct"].gt(0).all()
    for p in TWO:
        got = lat[lat.platform == p]
        assert np.allclose(got["noise_median_ape_pct"], noise.loc[p, "median_ape_pct"])
        assert np.allclose(got["noise_within_10pct"], noise.loc[p, "within_10pct"])
        assert np.allclose(got["noise_mape_pct"], noise.loc[p, "mape_pct"])
    assert np.allclose(lat["mape_over_noise"], lat["mape_pct_mean"] / lat["noise_mape_pct"])
    assert np.allclose(lat["median_ape_over_noise"],
                       lat["median_ape_pct_mean"] / lat["noise_median_ape_pct"])
    # the noise is of latency: memory rows do not carry it
    assert s.loc[s.target == "peak_mem_mib", "mape_over_noise"].isna().all()


def test_table_names_units_and_shows_percent(report):
    rep, _ = report
    t = plat.platform_table(rep.summary)
    assert len(t) == 2 * 2 * 2 and {"MAPE (%)", "within ±10 % (%)", "R²"} <= set(t.columns)
    lat = rep.summary[rep.summary.target == "latency_ms"]
    assert t["within ±10 % (%)"].tolist() == pytest.approx(
        (100 * lat["within_10pct_mean"]).round(3).tolist())


def test_no_benchmark_is_the_roofline_law(repo_root, tmp_path):
    files = {TWO[0]: tuple(str(repo_root / s) for s in CPU_FILES[TWO[0]])}
    rep = plat.platform_report(files, seeds=1, params=PRESETS["test"], max_rows=80,
                               splits=("random",), data_dir=tmp_path)
    assert rep.choices["auto_law"].tolist() == ["roofline"]
    assert set(rep.runs["latency_law"]) == {"roofline"}


def test_benchmark_of_another_cpu_is_refused(repo_root, tmp_path):
    other = pd.read_parquet(repo_root / CPU_FILES["cpu_xeon_gnr_2c"][1])
    (tmp_path / "kernels").mkdir()
    other.assign(platform=TWO[0]).to_parquet(tmp_path / "kernels" / f"{TWO[0]}.parquet")
    files = {TWO[0]: tuple(str(repo_root / s) for s in CPU_FILES[TWO[0]])}
    with pytest.raises(ValueError, match="cpu_id") as err:
        plat.platform_report(files, seeds=1, params=PRESETS["test"], max_rows=80,
                             data_dir=tmp_path)
    assert "GenuineIntel" in str(err.value) and "AuthenticAMD" in str(err.value)


@pytest.mark.parametrize("kw, word", [({"splits": ("width",)}, "splits"),
                                      ({"laws": ("kernel",)}, "laws"), ({"seeds": 0}, "seeds")])
def test_bad_arguments_are_refused(kw, word):
    with pytest.raises(ValueError, match=word):
        plat.platform_report({}, **kw)


def test_every_split_holds_out_what_it_names():
    rows = pd.DataFrame({
        "depth": np.repeat([18, 34, 50, 101], 6), "block": "basic",
        "width": np.tile([0.5, 1.0, 2.0], 8), "early_downsample": True,
        "resolution": np.tile([32, 64, 96, 128], 6), "batch": np.tile([1, 4, 16, 64, 128, 256], 4),
        "precision": "fp32"})
    seen = set()
    for split in plat.PLATFORM_SPLITS:
        train, test = plat._split_masks(rows, split, seed=0)
        assert test.any() and train.any() and not (train & test).any(), split
        seen.add(split)
        if split == "batch_small":
            assert set(rows.batch[test]) == {1, 4}
        elif split == "batch_large":
            assert set(rows.batch[test]) == {64, 128, 256}
        elif split == "width_out":
            assert set(rows.width[test]) == {2.0} and 2.0 not in set(rows.width[train])
        elif split == "resolution_out":
            assert set(rows.resolution[test]) == {128}
    assert seen == {"random", "grouped", "batch_small", "batch_large", "width_out",
                    "resolution_out"}
    # grouped: no architecture on both sides
    train, test = plat._split_masks(rows, "grouped", seed=1)
    arch = rows[["depth", "block", "width", "early_downsample"]].astype(str).agg("/".join, axis=1)
    assert not set(arch[train]) & set(arch[test])
