"""Cross-family prediction: the ``shared`` feature set, the few-shot recalibration, the
cross-family evaluation and one Pareto front across families.

Uses small seeded subsamples of the shipped measurements (ResNet and the new families on the
same CPU) and the ``test`` model preset.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from carb_lib.characterize.scaling import load_measured
from carb_lib.core.vocab import EXTRA_STATIC_FEATURES
from carb_lib.ensemble import CARBRegressor, model_matrix, model_matrix_columns, preset
from carb_lib.evaluation import (
    cross_family_evaluation,
    family_candidates,
    issue_targets,
    prepare_dataset,
)
from carb_lib.evaluation.cross_family import CrossFamilyResult, on_reference_scale, prepare_rows
from carb_lib.families import FAMILIES, family_names
from carb_lib.transfer.pairwise import recalibrate

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "rows.parquet"
TARGET = ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "rows_new_families.parquet"
NEW = ("efficientnet", "mobilenetv2", "vgg")
TARGETS = ("peak_mem_mib", "latency_ms")


@pytest.fixture(scope="module")
def rows() -> tuple[pd.DataFrame, pd.DataFrame]:
    """400 ResNet rows and 160 rows of each new family (seeded subsamples)."""
    src = prepare_dataset(load_measured([SOURCE])).sample(n=400, random_state=1)
    tgt = prepare_dataset(load_measured([TARGET]))
    tgt = pd.concat([g.sample(n=160, random_state=1) for _, g in tgt.groupby("family")])
    return src.reset_index(drop=True), tgt.reset_index(drop=True)


@pytest.fixture(scope="module")
def shared_model(rows) -> CARBRegressor:
    src, _ = rows
    return CARBRegressor(**preset("test", targets=TARGETS), feature_set="shared").fit(
        prepare_rows(src, TARGETS))


def test_shared_feature_set_has_no_family_column_and_the_extras():
    cols = model_matrix_columns("shared")
    family_cols = {c for name in family_names() for c in FAMILIES[name].matrix_columns}
    family_cols |= {FAMILIES[n].indicator_column for n in family_names() if n != "resnet"}
    assert not family_cols & set(cols)
    assert {"n_dwconv", "n_se", "dw_flops_share", "log1p_se_flops",
            "log1p_memory_bound_bytes", "log1p_flops", "batch", "precision_fp16"} <= set(cols)
    # the static set keeps its layout (models fitted before the shared set load unchanged)
    static = model_matrix_columns("static")
    assert static[:5] == ["family_nb201", "block_bottleneck", "depth", "width",
                          "early_downsample"]
    assert not {"n_dwconv", "log1p_se_flops"} & set(static)


def test_shared_matrix_encodes_what_the_network_computes(rows):
    _, tgt = rows
    t = prepare_rows(tgt.head(40), TARGETS)
    mm = model_matrix(t, "shared")
    assert list(mm.columns) == model_matrix_columns("shared")
    np.testing.assert_allclose(mm["log1p_se_flops"], np.log1p(t["se_flops"]), rtol=1e-6)
    np.testing.assert_allclose(mm["dw_flops_share"], t["dw_flops_share"], rtol=1e-6)
    assert (mm.loc[t["family"] == "vgg", "n_dwconv"] == 0).all()
    assert (mm.loc[t["family"] == "mobilenetv2", "n_dwconv"] > 0).all()


def test_shared_model_predicts_families_it_never_saw_and_static_model_refuses(rows, shared_model):
    src, tgt = rows
    t = prepare_rows(tgt, TARGETS)
    pred = shared_model.predict(t)
    assert list(pred.columns) == list(TARGETS) and len(pred) == len(t)
    assert np.isfinite(pred.to_numpy()).all() and (pred.to_numpy() > 0).all()
    assert shared_model.families_ == ["resnet"]
    static = CARBRegressor(**preset("test", targets=TARGETS)).fit(src)
    with pytest.raises(ValueError, match="family 'mobilenetv2' has no model-matrix columns"):
        static.predict(t[t["family"] == "mobilenetv2"])


def test_shared_model_needs_the_extra_features(rows, shared_model):
    _, tgt = rows
    t = prepare_rows(tgt.head(5), TARGETS).drop(columns=["n_se"])
    with pytest.raises(ValueError, match="feature column 'n_se' is absent"):
        shared_model.predict(t)


def test_recalibrate_undoes_a_constant_factor_and_refuses_bad_input():
    rng = np.random.default_rng(0)
    f = pd.DataFrame({"flops": rng.uniform(1e6, 1e9, 30), "params": rng.uniform(1e3, 1e6, 30),
                      "activation_bytes": 1e6, "peak_act_bytes": 1e5, "batch": 1.0})
    log_y = np.log(f["flops"].to_numpy()) * 0.9 - 3
    src = log_y + np.log(2.0)  # a source that is 2x too high everywhere
    out = recalibrate("loglinear", src[:10], f.iloc[:10], log_y[:10], src[10:], f.iloc[10:])
    # exact, except that log predictions are clipped to the samples' range +- a factor 3
    lo, hi = log_y[:10].min() - np.log(3.0), log_y[:10].max() + np.log(3.0)
    np.testing.assert_allclose(out, np.clip(log_y[10:], lo, hi), atol=1e-9)
    assert (log_y[10:] < lo).any()  # this draw exercises the clip
    with pytest.raises(ValueError, match="unknown"):
        recalibrate("magic", src[:10], f.iloc[:10], log_y[:10], src[10:], f.iloc[10:])
    with pytest.raises(ValueError, match="at least 2 samples"):
        recalibrate("blend", src[:1], f.iloc[:1], log_y[:1], src[10:], f.iloc[10:])


def test_offset_is_one_robust_factor_keeps_the_ranking_and_is_not_clipped():
    rng = np.random.default_rng(1)
    f = pd.DataFrame({"flops": rng.uniform(1e6, 1e9, 40), "params": 1e4,
                      "activation_bytes": 1e6, "peak_act_bytes": 1e5, "batch": 1.0})
    src = np.log(f["flops"].to_numpy()) * 0.8 - 4  # log source predictions
    log_y = src + np.log(1.3)  # the family runs 1.3x slower than predicted, everywhere
    y_s = log_y[:10].copy()
    y_s[3] += np.log(4.0)  # one disturbed sample, 4x slow
    q = src[10:].copy()
    q[0] = y_s.max() + np.log(50.0)  # a query row far beyond the samples' range
    out = recalibrate("offset", src[:10], f.iloc[:10], y_s, q, f.iloc[10:])
    # the median of the 10 log ratios ignores the disturbed sample: exactly 1.3x
    np.testing.assert_allclose(out, q + np.log(1.3), atol=1e-12)
    assert out[0] > y_s.max() + np.log(3.0)  # no clip (loglinear and blend clip there)
    assert np.array_equal(np.argsort(out), np.argsort(q))  # the source's ranking, unchanged
    # the mean would have been moved by the disturbed sample
    assert abs(np.mean(y_s - src[:10]) - np.log(1.3)) > 0.1
    # with several sources it takes the one whose leave-one-out error is lowest
    noisy = src[:10] + rng.normal(0, 0.3, 10)
    two = recalibrate("offset", np.c_[noisy, src[:10]], f.iloc[:10], log_y[:10],
                      np.c_[q + 5.0, q], f.iloc[10:])
    np.testing.assert_allclose(two, q + np.log(1.3), atol=1e-12)


@pytest.fixture(scope="module")
def evaluation(rows) -> CrossFamilyResult:
    src, tgt = rows
    return cross_family_evaluation(src, tgt, ks=(10,), n_seeds=2, preset="test",
                                   progress=False)


def test_cross_family_evaluation_scores_every_model_family_target_and_seed(evaluation):
    sc = evaluation.scores
    assert set(sc["family"]) == set(NEW) and set(sc["target"]) == set(TARGETS)
    assert set(sc["seed"]) == {0, 1}
    models = {"zero_shot", "blend", "ridge", "loglinear", "offset", "target_only", "flops",
              "own_model"}
    assert set(sc["model"]) == models
    per = sc.groupby(["seed", "family", "target"])["model"].agg(set)
    notes = " ".join(evaluation.params["notes"])
    for (seed, fam, _), got in per.items():  # an own model that cannot be fitted is a note
        assert got == models or (got == models - {"own_model"}
                                 and f"seed {seed}, {fam}: own model not fitted" in notes)
    zs = sc[sc["model"] == "zero_shot"]
    assert (zs["k"] == 0).all() and (zs["n_train"] == 0).all()
    few = sc[sc["model"].isin(["blend", "flops"])]
    assert (few["k"] == 10).all() and (few["n_train"] == 10).all()
    own = sc[sc["model"] == "own_model"]
    assert (own["k"] == 0).all() and (own["n_train"] > 70).all()  # ~70 % of 160, by arch
    # all models of one seed and family are scored on the same test rows
    assert (sc.groupby(["seed", "family"])["n_test"].nunique() == 1).all()
    assert (sc["n_test"] >= 20).all()
    ok = sc[["mape_pct", "spearman"]].notna().all(axis=1)
    assert ok.all(), sc[~ok]
    # the summary is the mean and sd over the two seeds
    s = evaluation.summary.set_index(["family", "target", "model", "k"])
    one = sc[(sc["family"] == "vgg") & (sc["target"] == "latency_ms") & (sc["model"] == "blend")]
    assert s.loc[("vgg", "latency_ms", "blend", 10), "mape_pct_mean"] == pytest.approx(
        one["mape_pct"].mean())
    assert s.loc[("vgg", "latency_ms", "blend", 10), "mape_pct_sd"] == pytest.approx(
        one["mape_pct"].std())
    n_seeds = evaluation.summary.set_index(["family", "model"])["n_seeds"]
    assert (n_seeds.drop(index="own_model", level="model") == 2).all()
    assert n_seeds.xs("own_model", level="model").between(1, 2).all()  # a note if 1


def test_shared_features_carry_memory_and_latency_ranks_across_families(evaluation):
    """Behaviour the study relies on, with loose bounds (tiny models, 400 ResNet rows): the
    ResNet-only model predicts memory of other families within tens of percent and ranks
    their latencies (the FLOPs-only baseline with the same k rows ranks worse)."""
    s = evaluation.summary.set_index(["family", "target", "model", "k"])
    for fam in NEW:
        assert s.loc[(fam, "peak_mem_mib", "zero_shot", 0), "mape_pct_mean"] < 30
        assert s.loc[(fam, "latency_ms", "zero_shot", 0), "spearman_mean"] > 0.8
        assert (s.loc[(fam, "latency_ms", "zero_shot", 0), "spearman_mean"]
                > s.loc[(fam, "latency_ms", "flops", 10), "spearman_mean"])


def test_predictions_are_seed_0_test_rows_of_three_models(evaluation):
    p = evaluation.predictions
    assert set(p["model"]) == {"zero_shot", "blend", "own_model"}
    sc = evaluation.scores
    n0 = sc[(sc["seed"] == 0) & (sc["model"] == "zero_shot")].set_index(["family", "target"])
    for (fam, t), g in p[p["model"] == "zero_shot"].groupby(["family", "target"]):
        assert len(g) == n0.loc[(fam, t), "n_test"] and (g["measured"] > 0).all()
        from carb_lib.core.metrics import mape_pct

        assert mape_pct(g["measured"], g["predicted"]) == pytest.approx(
            n0.loc[(fam, t), "mape_pct"])


def test_issue_targets_judges_the_mean():
    summary = pd.DataFrame([
        {"family": "f", "target": "peak_mem_mib", "model": "zero_shot", "k": 0,
         "mape_pct_mean": 4.0, "mape_pct_sd": 1.0, "spearman_mean": 0.9, "spearman_sd": 0.0},
        {"family": "f", "target": "latency_ms", "model": "blend", "k": 10,
         "mape_pct_mean": 12.0, "mape_pct_sd": 1.0, "spearman_mean": 0.96,
         "spearman_sd": 0.01},
    ])
    res = CrossFamilyResult(pd.DataFrame(), summary, pd.DataFrame(),
                            {"families": ["f"], "default_method": "blend"})
    t = issue_targets(res).set_index(["target", "metric"])
    assert t.loc[("memory", "mape_pct"), "met"]
    assert t.loc[("latency", "spearman"), "met"]
    assert not t.loc[("latency", "mape_pct"), "met"]
    assert t.loc[("latency", "mape_pct"), "goal"] == "<= 10"


@pytest.mark.parametrize("kwargs, match", [
    ({"ks": (1,)}, "every k needs >= 2"),
    ({"families": ["densenet"]}, "no target rows of family"),
    ({"methods": ("magic",)}, "unknown method"),
    ({"n_seeds": 0}, "n_seeds must be >= 1"),
    ({"ks": (500,)}, "need >= 500"),
])
def test_cross_family_evaluation_refuses_bad_arguments(rows, kwargs, match):
    src, tgt = rows
    with pytest.raises(ValueError, match=match):
        cross_family_evaluation(src.head(60), tgt, progress=False, preset="test",
                                **{"n_seeds": 1, "own_model": False, **kwargs})


def test_cross_family_evaluation_refuses_two_platforms(rows):
    src, tgt = rows
    with pytest.raises(ValueError, match="several platforms"):
        cross_family_evaluation(src.assign(platform="gpu_x"), tgt, progress=False)


def test_siblings_source_is_the_source_plus_the_other_families_rows(rows):
    """siblings=True fits each family's source on the source rows and every row of the other
    new families, and nothing of its own: exactly a siblings=False run whose source is built by
    hand, on the same split, k rows and seeds (so the two pair seed by seed)."""
    src, tgt = rows
    kw = {"ks": (10,), "n_seeds": 2, "preset": "test", "targets": ("latency_ms",),
          "methods": ("offset",), "default_method": "offset", "own_model": False,
          "progress": False}
    sib = cross_family_evaluation(src, tgt, families=["efficientnet"], siblings=True, **kw)
    assert sib.params["siblings"] is True
    by_hand = cross_family_evaluation(
        pd.concat([src, tgt[tgt["family"] != "efficientnet"]], ignore_index=True), tgt,
        families=["efficientnet"], **kw)
    key = ["seed", "model", "k"]
    a, b = sib.scores.sort_values(key), by_hand.scores.sort_values(key)
    assert len(a) == 4
    np.testing.assert_allclose(a["mape_pct"], b["mape_pct"], rtol=1e-12)
    assert (a["n_test"].to_numpy() == b["n_test"].to_numpy()).all()
    plain = cross_family_evaluation(src, tgt, families=["efficientnet"], **kw)
    assert plain.params["siblings"] is False
    c = plain.scores.sort_values(key)
    assert (c["n_test"].to_numpy() == a["n_test"].to_numpy()).all()  # the same test rows
    assert not np.allclose(c["mape_pct"], a["mape_pct"])  # another source model


def test_siblings_need_two_families(rows):
    src, tgt = rows
    with pytest.raises(ValueError, match="siblings=True needs rows of two or more families"):
        cross_family_evaluation(src, tgt[tgt["family"] == "vgg"], siblings=True,
                                progress=False, preset="test", n_seeds=1, own_model=False)


def test_family_candidates_mix_families_under_the_cap():
    c = family_candidates(["resnet", *NEW], 50, seed=3, max_gflops=1.0, precisions=["fp32"])
    counts = c["family"].value_counts()
    assert counts["resnet"] == 50 and set(counts.index) == {"resnet", *NEW}
    assert counts.between(20, 50).all(), counts  # fewer only where the cap leaves fewer
    assert c["config_id"].is_unique and (c["flops"] <= 1e9).all()
    assert set(c["precision"]) == {"fp32"} and set(EXTRA_STATIC_FEATURES) <= set(c.columns)
    again = family_candidates(["resnet", *NEW], 50, seed=3, max_gflops=1.0, precisions=["fp32"])
    pd.testing.assert_frame_equal(c, again)
    with pytest.raises(ValueError, match="family='densenet' is unknown"):
        family_candidates(["densenet"], 5)


def test_one_pareto_front_across_families(rows):
    from carb_lib import screening

    src, tgt = rows
    every = pd.concat([src, prepare_rows(tgt, TARGETS)], ignore_index=True)
    model = CARBRegressor(**preset("test", targets=TARGETS)).fit(every)
    cands = family_candidates(["resnet", *NEW], 150, seed=0, max_gflops=1.0,
                              precisions=["fp32"])
    spec = screening.DeploymentSpec("cpu_epyc_zen3_2c",
                                    ["latency_ms<=100"], ["latency_ms", "peak_mem_mib"], k=8)
    res = screening.screen(model, cands, spec)
    assert set(res.table["family"]) == {"resnet", *NEW}
    surv = res.table[res.table["within_budget"]]
    obj = np.c_[surv["latency_ms"], surv["peak_mem_mib"], -surv["params"]]
    front = set(res.front["config_id"])
    # brute force: a survivor is on the front iff no other survivor dominates it
    dominated = [bool(((obj <= o).all(axis=1) & (obj < o).any(axis=1)).any()) for o in obj]
    assert front == set(surv.loc[~np.asarray(dominated), "config_id"])
    assert len(res.shortlist) == 8 and set(res.shortlist["config_id"]) <= set(surv["config_id"])
    assert res.front["family"].nunique() >= 2  # families compete on one front


@pytest.mark.slow
def test_cli_fits_a_shared_model_that_predicts_a_new_family(tmp_path, rows):
    src, tgt = rows
    data = tmp_path / "resnet.parquet"
    src.drop(columns=["dataset"], errors="ignore").to_parquet(data)
    configs = tmp_path / "mnv2.parquet"
    cols = ["config_id", "family", "expansion", "kernel", "width", "depth_mult", "resolution",
            "batch", "precision", "num_classes"]
    tgt.loc[tgt["family"] == "mobilenetv2", cols].head(20).to_parquet(configs)
    from typer.testing import CliRunner

    from carb_lib.app.cli import app

    runner = CliRunner()
    # the shared model with carb fit's default latency law; the static one (roofline law, to
    # spare the operator benchmark's fit) sends the new family to its transfer model
    for fs, law in (("shared", []), ("static", ["--latency-law", "roofline"])):
        fit = runner.invoke(app, ["fit", "--data", str(data), "--out",
                                  str(tmp_path / f"{fs}.joblib"), "--preset", "test",
                                  "--feature-set", fs, *law])
        assert fit.exit_code == 0, fit.output
    ok = runner.invoke(app, ["predict", "--model", str(tmp_path / "shared.joblib"),
                             "--configs", str(configs), "--out", str(tmp_path / "pred.parquet")])
    assert ok.exit_code == 0, ok.output
    pred = pd.read_parquet(tmp_path / "pred.parquet")
    assert len(pred) == 20 and (pred["latency_ms_pred"] > 0).all()
    assert (pred["latency_ms_pred_lo"] <= pred["latency_ms_pred"]).all()
    routed = runner.invoke(app, ["predict", "--model", str(tmp_path / "static.joblib"),
                                 "--configs", str(configs), "--out", str(tmp_path / "p2.parquet")])
    assert routed.exit_code == 0, routed.output
    assert "0 row(s) by the fitted model (families ['resnet']), 20 by its transfer model" \
        in routed.output
    p2 = pd.read_parquet(tmp_path / "p2.parquet")
    assert (p2["predicted_by"] == "transfer model").all() and (p2["latency_ms_pred"] > 0).all()


def test_on_reference_scale_puts_two_campaigns_on_one_scale():
    ref = pd.DataFrame({"platform": "p", "config_id": "r", "status": "ok", "quality": "clean",
                        "measured_at": ["2026-01-01T00:00:00+00:00", "2026-01-01T01:00:00+00:00"],
                        "latency_ms": [20.0, 30.0], "peak_mem_mib": 1.0, "energy_j": np.nan,
                        "idle_power_w": np.nan})
    rows = pd.DataFrame({"latency_ms": [60.0, 90.0], "latency_norm_ms": [60.0, 60.0]})
    out = on_reference_scale(rows, ref, scale_ms=10.0)
    # in units of the reference's latency at the row's time (3x), on a 10 ms reference scale
    np.testing.assert_allclose(out["latency_ms"], [30.0, 30.0])
    np.testing.assert_allclose(out["latency_raw_ms"], [60.0, 90.0])
    assert out.attrs["reference_r0_ms"] == 20.0 and out.attrs["reference_config_id"] == "r"
    # by default, the campaign's own scale: latency_norm_ms itself
    np.testing.assert_allclose(on_reference_scale(rows, ref)["latency_ms"], [60.0, 60.0])
    with pytest.raises(ValueError, match="no 'latency_norm_ms' column"):
        on_reference_scale(rows.drop(columns="latency_norm_ms"), ref, 10.0)
    with pytest.raises(ValueError, match="expected one reference config"):
        on_reference_scale(rows, ref.assign(config_id=["a", "b"]), 10.0)


@pytest.fixture(scope="module")
def kernel_rows(rows):
    """The rows with the kernel characterization's ``kernel_ms`` (the shipped benchmark)."""
    from carb_lib.kernels import law as kernels

    bench = kernels.read_bench(ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "kernels.parquet")
    km = kernels.KernelModel(n_estimators=200).fit(bench)
    src, tgt = rows
    return kernels.with_kernel_column(src, km), kernels.with_kernel_column(tgt, km)


def test_kernel_latency_law_is_fitted_and_needs_its_column(kernel_rows):
    src, tgt = kernel_rows
    params = {**preset("test", targets=TARGETS), "feature_set": "shared", "latency_law": "kernel"}
    m = CARBRegressor(**params).fit(prepare_rows(src, TARGETS))
    assert m.base_laws_["latency_ms"].kind == "kernel"
    assert m.base_laws_["peak_mem_mib"].kind == "memory"  # the memory law is untouched
    terms = m.base_laws_["latency_ms"].constants()
    assert (terms.loc[terms["term"] == "kernel_ms", "coef"] > 0).all()
    pred = m.predict(prepare_rows(tgt, TARGETS))
    assert np.isfinite(pred["latency_ms"]).all() and (pred["latency_ms"] > 0).all()
    with pytest.raises(ValueError, match="the kernel law needs column 'kernel_ms'"):
        m.predict(prepare_rows(tgt, TARGETS).drop(columns=["kernel_ms"]))
    with pytest.raises(ValueError, match="latency_law"):
        CARBRegressor(latency_law="flops").fit(prepare_rows(src, TARGETS))


def test_law_comparison_puts_both_laws_side_by_side(kernel_rows):
    from carb_lib.evaluation import law_comparison

    src, tgt = kernel_rows
    res = {law: cross_family_evaluation(src, tgt, ks=(10,), n_seeds=1, preset="test",
                                        latency_law=law, own_model=False, progress=False)
           for law in ("roofline", "kernel")}
    assert res["kernel"].params["latency_law"] == "kernel"
    mem = [r.scores[r.scores["target"] == "peak_mem_mib"].reset_index(drop=True)
           for r in res.values()]
    pd.testing.assert_frame_equal(mem[0], mem[1])  # the latency law leaves memory alone
    c = law_comparison({law: r.summary for law, r in res.items()})
    assert list(c.columns[:3]) == ["family", "model", "k"]
    assert {"roofline_spearman", "kernel_spearman", "kernel_mape_pct"} <= set(c.columns)
    assert set(c["model"]) == {"zero_shot", "blend", "loglinear", "offset"}
    lat = res["kernel"].summary.query("target == 'latency_ms' and model == 'zero_shot'")
    got = c[c["model"] == "zero_shot"].set_index("family")["kernel_spearman"]
    np.testing.assert_allclose(got.loc[lat["family"]].to_numpy(), lat["spearman_mean"])
    with pytest.raises(ValueError, match="at least one law"):
        law_comparison({})


def test_source_params_override_the_preset_in_the_source_model_only(rows, monkeypatch):
    """``source_params`` reaches the source model's parameters and not the own model's; the
    zero-shot predictions change with them, the split and k rows do not."""
    from carb_lib.evaluation import cross_family as cf

    src, tgt = rows
    seen: list[dict] = []
    real = cf.fit_quiet

    def spy(params, data):
        seen.append(dict(params))
        return real(params, data)

    monkeypatch.setattr(cf, "fit_quiet", spy)
    kw = {"families": ["efficientnet"], "ks": (10,), "n_seeds": 1, "preset": "test",
          "targets": ("latency_ms",), "methods": ("offset",), "default_method": "offset",
          "progress": False}
    plain = cross_family_evaluation(src, tgt, **kw)
    assert plain.params["source_params"] == {}
    seen.clear()
    off = cross_family_evaluation(src, tgt, source_params={"regime_shrink": 0.0}, **kw)
    shared = [p for p in seen if p["feature_set"] == "shared"]
    own = [p for p in seen if p["feature_set"] == "static"]
    assert [p["regime_shrink"] for p in shared] == [0.0]
    assert own and all(p.get("regime_shrink") != 0.0 for p in own)  # the preset's
    assert off.params["source_params"] == {"regime_shrink": 0.0}
    a, b = (r.scores.set_index(["model", "k"]) for r in (plain, off))
    assert (a["n_test"] == b["n_test"]).all()
    assert a.loc[("own_model", 0), "mape_pct"] == b.loc[("own_model", 0), "mape_pct"]
    assert a.loc[("zero_shot", 0), "mape_pct"] != b.loc[("zero_shot", 0), "mape_pct"]
