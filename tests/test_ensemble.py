"""CARBRegressor (carb_lib.ensemble) on SYNTHETIC data with tiny models (1 thread)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from carb_synthetic import make_carb_synthetic
from sklearn.base import clone

from carb_lib import ensemble, families
from carb_lib.core.vocab import DEFAULT_COVERAGE
from carb_lib.ensemble import (
    PAPER_BLEND_WEIGHTS,
    PRESETS,
    CARBRegressor,
    MissingTargetWarning,
    conformal_quantile,
    feature_importances,
    load_model,
    model_matrix,
    model_matrix_columns,
    save_model,
)
from carb_lib.families import ConfigColumn, Family

#: The test size with all three learners (importances, fixed blend weights of each).
TINY = {**PRESETS["test"], "learners": ("xgb", "lgbm", "et")}


@pytest.fixture(scope="module")
def data():
    df = make_carb_synthetic(700, seed=3)
    df.index = pd.Index(np.arange(len(df)) * 3 + 100)  # not a RangeIndex: alignment matters
    return df


@pytest.fixture(scope="module")
def fitted(data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return CARBRegressor(**TINY).fit(data.iloc[:500])


def test_fit_predict_round_trip(fitted, data):
    test = data.iloc[500:]
    test = test[test["status"] == "ok"]
    pred = fitted.predict(test)
    assert list(pred.columns) == fitted.targets_ == ["peak_mem_mib", "energy_j", "latency_ms"]
    assert pred.index.equals(test.index)
    assert (pred.to_numpy() > 0).all()
    for t in fitted.targets_:
        err = np.log(pred[t]) - np.log(test[t])
        assert np.sqrt(np.mean(err**2)) < 0.35, t  # log-scale RMSE, tiny models
    assert fitted.platform_ == "synthetic_gpu"
    assert fitted.feature_set == "static"
    assert "flops" in list(fitted.feature_names_in_)
    assert fitted.n_train_ == int((data.iloc[:500]["status"] == "ok").sum())
    assert set(fitted.oof_metrics_.columns) >= {"rmse_xgb", "rmse_blend_nnls", "rmse_blend_fixed"}
    for w in fitted.blend_weights_.values():
        assert min(w.values()) >= 0 and abs(sum(w.values()) - 1) < 1e-9
    imp = feature_importances(fitted)
    assert set(imp["learner"]) == {"xgb", "lgbm", "et", "blend"}
    assert "cascade_peak_mem_mib" in set(imp[imp.target == "latency_ms"]["feature"])


def test_fit_X_y_matches_fit_frame(data):
    train = data.iloc[:300]
    train = train[train["status"] == "ok"]
    y = train[["peak_mem_mib", "latency_ms"]].reset_index(drop=True)
    X = train.drop(columns=["peak_mem_mib", "energy_j", "latency_ms"])
    params = {**TINY, "targets": ("peak_mem_mib", "latency_ms")}
    a = CARBRegressor(**params).fit(X, y).predict(X)
    b = CARBRegressor(**params).fit(train).predict(X)
    pd.testing.assert_frame_equal(a, b)


def test_get_params_clone_set_params(fitted):
    params = fitted.get_params()
    assert params["targets"] == ("peak_mem_mib", "energy_j", "latency_ms")
    assert {k: params[k] for k in TINY} == TINY  # fit left the parameters alone
    c = clone(fitted)
    assert c.get_params() == params
    assert not hasattr(c, "models_")
    c.set_params(blend="fixed", regime_shrink=0.5)
    assert c.blend == "fixed" and c.regime_shrink == 0.5
    with pytest.raises(ValueError, match="blend"):
        CARBRegressor(blend="median").fit(pd.DataFrame({"batch": [1], "family": ["resnet"]}))


def test_cascade_inputs_are_out_of_fold(data):
    """Memory is pure noise: in-sample predictions memorise it, OOF predictions cannot.

    If the cascade inputs were in-sample, the stored training inputs would track the noise
    (corr ~ 1) and the latency model, whose target here *is* the memory noise, would lean on
    them; with OOF inputs neither happens.
    """
    rng = np.random.default_rng(0)
    df = data[data["status"] == "ok"].iloc[:450].copy()
    noise = np.exp(rng.normal(5.0, 1.0, len(df)))
    df["peak_mem_mib"] = noise
    df["latency_ms"] = 2.0 * noise
    # the paper's design (no base law, OOF conformal): every row is a training row
    model = CARBRegressor(**{**TINY, "targets": ("peak_mem_mib", "latency_ms"), "base": False,
                             "conformal": "oof"}).fit(df)
    y = np.log1p(noise)
    cascade_in = model.cascade_train_inputs_["peak_mem_mib"].to_numpy()
    in_sample = np.log1p(model.predict(df)["peak_mem_mib"].to_numpy())
    assert np.corrcoef(in_sample, y)[0, 1] > 0.9  # the refit models memorise the noise
    assert abs(np.corrcoef(cascade_in, y)[0, 1]) < 0.3  # ... the cascade inputs do not
    assert model.cascade_train_inputs_.index.equals(df.index)
    np.testing.assert_array_equal(cascade_in, model.oof_predictions_["peak_mem_mib"].to_numpy())
    # OOF errors of the downstream target stay at the noise level (no leak to exploit)
    assert model.oof_metrics_.loc["latency_ms", "rmse_final"] > 0.7


def test_regime_correction_only_for_small_batches(data):
    df = data[data["status"] == "ok"].iloc[:400]
    model = CARBRegressor(**{**TINY, "cascade": False, "targets": ("latency_ms",),
                             "base": False}).fit(df)
    assert model.regime_models_["latency_ms"] is not None
    X = model_matrix(df).to_numpy(np.float32)
    blend = sum(w * model.models_["latency_ms"][k].predict(X)
                for k, w in model.blend_weights_["latency_ms"].items())
    got = np.log1p(model.predict(df)["latency_ms"].to_numpy())
    small = (df["batch"] <= 8).to_numpy()
    np.testing.assert_allclose(got[~small], blend[~small], rtol=1e-6)
    corr = model.regime_models_["latency_ms"].predict(X[small])
    np.testing.assert_allclose(got[small], blend[small] + 0.9 * corr, rtol=1e-6)


def test_fixed_blend_uses_paper_weights(data):
    df = data[data["status"] == "ok"].iloc[:200]
    model = CARBRegressor(**{**TINY, "blend": "fixed"}).fit(df)
    for t, w in PAPER_BLEND_WEIGHTS.items():
        assert model.blend_weights_[t] == pytest.approx(w)


def test_interval_coverage_tracks_every_requested_level():
    """Log-normal noise (sigma 0.3) dominates the model error: empirical coverage on held-out
    rows tracks the requested level, whatever it is, from one fit."""
    df = make_carb_synthetic(2600, seed=11, noise_sigma=0.3, oom_mib=1e12)
    train, test = df.iloc[:1300], df.iloc[1300:]
    model = CARBRegressor(**{**TINY, "cv": 5}).fit(train)
    levels = (0.5, 0.7, 0.9, 0.95)
    iv = {c: model.predict_interval(test, coverage=c) for c in levels}
    assert list(iv[0.9].columns) == [f"{t}{s}" for t in model.targets_
                                     for s in ("", "_lo", "_hi")] + ["extrapolated"]
    assert model.coverage == DEFAULT_COVERAGE
    pd.testing.assert_frame_equal(model.predict_interval(test), iv[DEFAULT_COVERAGE])
    errors = []
    for t in model.targets_:
        width = {c: (f[f"{t}_hi"] / f[f"{t}_lo"]).to_numpy() for c, f in iv.items()}
        for c, frame in iv.items():
            inside = (test[t] >= frame[f"{t}_lo"]) & (test[t] <= frame[f"{t}_hi"])
            assert inside.mean() == pytest.approx(c, abs=0.06), (t, c, inside.mean())
            errors.append(abs(inside.mean() - c))
            assert (frame[f"{t}_lo"] <= frame[t]).all() and (frame[t] <= frame[f"{t}_hi"]).all()
            pd.testing.assert_series_equal(frame[t], iv[0.9][t])  # same point prediction
        for lo_c, hi_c in zip(levels, levels[1:], strict=False):
            assert (width[lo_c] < width[hi_c]).all(), (t, lo_c, hi_c)  # strictly nested
        assert model.conformal_q_[t]["all"] == pytest.approx(
            conformal_quantile(model.conformal_scores_[t]["all"], 0.9))
    assert np.mean(errors) < 0.03
    with pytest.raises(ValueError, match="coverage"):
        model.predict_interval(test, coverage=1.5)


def test_coverage_parameter_is_honoured_end_to_end(data):
    """``coverage`` changes no fitted model, only the default level of the intervals."""
    train = data[data["status"] == "ok"].iloc[:450]
    at90 = CARBRegressor(**TINY).fit(train)
    at50 = clone(at90).set_params(coverage=0.5).fit(train)
    test = data.iloc[500:]
    pd.testing.assert_frame_equal(at50.predict(test), at90.predict(test))
    pd.testing.assert_frame_equal(at50.predict_interval(test),
                                  at90.predict_interval(test, coverage=0.5))
    assert at50.conformal_q_ == at90.conformal_half_widths(0.5)
    for t in at90.targets_:
        for g, q in at90.conformal_q_[t].items():
            assert at50.conformal_q_[t][g] < q, (t, g)


def test_save_load_and_mismatch_errors(fitted, data, tmp_path, monkeypatch):
    path = save_model(fitted, tmp_path / "carb.joblib")
    meta = json.loads((tmp_path / "carb.joblib.json").read_text())
    assert meta["platform"] == "synthetic_gpu" and meta["feature_set"] == "static"
    assert meta["training_data_hash"] == fitted.training_data_hash_
    assert set(meta["versions"]) >= {"scikit-learn", "xgboost", "lightgbm", "carb_lib"}
    test = data.iloc[500:520]
    loaded = load_model(path, expected_features=fitted.feature_names_in_,
                        expected_platform="synthetic_gpu")
    pd.testing.assert_frame_equal(loaded.predict(test), fitted.predict(test))
    load_model(path, expected_features=fitted.base_features_)  # model-matrix names work too

    with pytest.raises(ValueError, match=r"only in expected: \['sm_util_pct'\]"):
        load_model(path, expected_features=list(fitted.feature_names_in_) + ["sm_util_pct"])
    with pytest.raises(ValueError, match="platform 'synthetic_gpu', expected 'h200'"):
        load_model(path, expected_platform="h200")
    monkeypatch.setattr(ensemble.matrix, "model_matrix_columns", lambda fs: ["flops", "batch"])
    with pytest.raises(ValueError, match="no longer builds"):
        load_model(path)
    monkeypatch.undo()
    meta["feature_set"] = "static+telemetry"
    (tmp_path / "carb.joblib.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="disagrees .* 'feature_set'"):
        load_model(path)
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "nope.joblib")


def test_missing_feature_names_column_and_row(fitted, data):
    test = data.iloc[500:510].copy()
    test["flops"] = test["flops"].astype(float)
    test.loc[test.index[3], "flops"] = np.nan
    with pytest.raises(ValueError, match=rf"'flops' is missing .* row {test.index[3]}.*config_id="):
        fitted.predict(test)
    with pytest.raises(ValueError, match="'params' is absent"):
        fitted.predict(data.iloc[500:510].drop(columns=["params"]))
    bad = data.iloc[:50].copy()
    bad["depth"] = bad["depth"].astype(float)
    bad.loc[bad.index[0], "depth"] = np.nan
    with pytest.raises(ValueError, match=rf"'depth' is missing .* row {bad.index[0]}"):
        CARBRegressor(**TINY).fit(bad)
    cpu = data[data["status"] == "ok"].drop(columns=["sm_util_pct"])
    with pytest.raises(ValueError, match="'sm_util_pct' is absent.*telemetry"):
        CARBRegressor(**{**TINY, "feature_set": "static+telemetry"}).fit(cpu)


def test_missing_target_is_skipped_with_warning(data):
    cpu = data[data["status"] == "ok"].iloc[:200].assign(energy_j=np.nan)
    with pytest.warns(MissingTargetWarning, match="'energy_j' is all-NaN"):
        model = CARBRegressor(**TINY).fit(cpu)
    assert model.targets_ == ["peak_mem_mib", "latency_ms"]
    assert model.skipped_targets_ == ["energy_j"]
    assert list(model.predict(cpu).columns) == ["peak_mem_mib", "latency_ms"]
    # the cascade goes on without the skipped target
    assert model.model_features_["latency_ms"][-1] == "cascade_peak_mem_mib"
    with pytest.warns(MissingTargetWarning, match="'energy_j' is absent"):
        CARBRegressor(**TINY).fit(cpu.drop(columns=["energy_j"]))
    sparse = cpu.assign(energy_j=[1.0] * 3 + [np.nan] * (len(cpu) - 3))
    with pytest.warns(MissingTargetWarning, match="'energy_j' has only 3 value"):
        CARBRegressor(**{**TINY, "targets": ("peak_mem_mib", "energy_j")}).fit(sparse)
    with pytest.raises(ValueError, match="none of the targets"), pytest.warns(MissingTargetWarning):
        CARBRegressor(**{**TINY, "targets": ("energy_j",)}).fit(cpu)


def test_non_ok_rows_dropped_with_warning(data):
    df = data[data["status"] == "ok"].iloc[:200].copy()
    df.loc[df.index[:5], "status"] = "error"
    with pytest.warns(UserWarning, match="dropping 5 of 200"):
        model = CARBRegressor(**{**TINY, "targets": ("peak_mem_mib",)}).fit(df)
    assert model.n_train_ == 195


def test_model_matrix_mixed_families():
    df = pd.DataFrame({
        "family": ["resnet", "nb201"],
        "block": ["bottleneck", None],
        "depth": [50, np.nan],
        "width": [1.0, np.nan],
        "early_downsample": [True, None],
        "arch": [None, "|nor_conv_3x3~0|+|skip_connect~0|nor_conv_3x3~1|+|none~0|avg_pool_3x3~1|nor_conv_1x1~2|"],
        "resolution": [64, 32],
        "batch": [8, 2],
        "precision": ["fp16", "fp32"],
        "num_classes": [1000, 10],
        **{c: [1e6, 2e5] for c in ensemble.STATIC_FEATURES},
    })
    mm = model_matrix(df)
    assert mm.loc[0, "block_bottleneck"] == 1 and mm.loc[0, "precision_fp16"] == 1
    assert mm.loc[1, "depth"] == -1 and mm.loc[1, "family_nb201"] == 1
    assert mm.loc[1, "nb201_n_nor_conv_3x3"] == 2 and mm.loc[1, "nb201_n_none"] == 1
    assert mm.loc[0, ["nb201_n_skip_connect", "nb201_n_avg_pool_3x3"]].tolist() == [0, 0]
    everything = model_matrix_columns("static")
    assert list(mm.columns) == [c for c in everything if c in mm.columns]
    # families without rows here and not always in the matrix bring no columns
    absent = {c for name, fam in families.FAMILIES.items() if not fam.always_in_matrix
              for c in (fam.indicator_column, *fam.matrix_columns)}
    assert set(everything) - set(mm.columns) == absent
    with pytest.raises(ValueError, match="'arch' is missing .* row 1"):
        model_matrix(df.assign(arch=[None, None]))
    with pytest.raises(ValueError, match="'precision' has unknown value 'bf16'"):
        model_matrix(df.assign(precision=["bf16", "fp32"]))


class _ToyFamily(Family):
    """A family registered after a model was fitted (one own column, ``toy_size``)."""

    name = "toy"
    config_type = dict
    own_columns = (ConfigColumn("toy_size", "int"),)
    required_columns = ("toy_size",)
    matrix_columns = ("toy_size",)
    not_applicable = -1.0
    from_row = staticmethod(dict)
    config_ids = staticmethod(lambda df: ["0" * 16] * len(df))
    build_model = staticmethod(lambda config: None)
    static_features = staticmethod(lambda df: pd.DataFrame(index=df.index))
    measured_features = staticmethod(lambda config, model=None: {})

    @staticmethod
    def encode_config(df, rows=None):
        size = pd.to_numeric(df["toy_size"]) if "toy_size" in df.columns else np.nan
        return pd.DataFrame({"toy_size": np.where(rows, size, -1.0)}, index=df.index)


def test_a_family_registered_later_only_appends_columns(fitted, data, tmp_path, monkeypatch):
    test = data.iloc[500:560]
    test = test[test["status"] == "ok"]
    path = save_model(fitted, tmp_path / "before.joblib")
    pred, mm = fitted.predict(test), model_matrix(test)
    static, tel = model_matrix_columns("static"), model_matrix_columns("static+telemetry")
    monkeypatch.setitem(families.FAMILIES, "toy", _ToyFamily())
    # the new family's indicator and encoding come after every old family column
    assert model_matrix_columns("static") == static + ["family_toy", "toy_size"]
    assert model_matrix_columns("static+telemetry") == (
        static + ["family_toy", "toy_size"] + tel[len(static):]
    )
    grown = model_matrix(test)  # no toy row: no toy column, the matrix is unchanged
    assert list(grown.columns) == list(mm.columns)
    assert grown.to_numpy().tobytes() == mm.to_numpy().tobytes()
    # a model fitted before predicts from its own columns: same numbers, also after loading
    pd.testing.assert_frame_equal(fitted.predict(test), pred)
    pd.testing.assert_frame_equal(load_model(path).predict(test), pred)
    toy = test.iloc[:2].assign(family=["resnet", "toy"], toy_size=[np.nan, 3])
    with pytest.raises(ValueError, match=r"family 'toy' has no model-matrix columns "
                                         r"\['family_toy', 'toy_size'\] in this model"):
        fitted.predict(toy)
    with_toy = model_matrix(toy)
    assert with_toy["toy_size"].tolist() == [-1.0, 3.0]
    assert with_toy["family_toy"].tolist() == [0.0, 1.0]
    assert list(with_toy.columns[-2:]) == ["family_toy", "toy_size"]


def test_clashing_family_column_names_are_refused(monkeypatch):
    class Clash(_ToyFamily):
        name = "clash"
        matrix_columns = ("depth",)

    monkeypatch.setitem(families.FAMILIES, "clash", Clash())
    with pytest.raises(ValueError, match="column 'depth' of family 'clash' is also one of "
                                         "family 'resnet'"):
        model_matrix_columns("static")


def test_array_mode_for_generic_data():
    rng = np.random.default_rng(0)
    X = rng.random((120, 4))
    y = np.exp(X @ [1.0, 2.0, 0.0, 0.5])
    model = CARBRegressor(**TINY).fit(X, y)
    pred = model.predict(X)
    assert pred.shape == (120,) and model.input_mode_ == "array"
    assert model.score(X, y) > 0.8
    Y = np.column_stack([y, 2 * y])
    assert CARBRegressor(**TINY).fit(X, Y).predict(X).shape == (120, 2)


def test_cli_fit_and_predict(tmp_path):
    from typer.testing import CliRunner

    from carb_lib.app.cli import app

    data = make_carb_synthetic(300, seed=2, energy=False, telemetry=False, platform="synthetic_cpu")
    data.to_parquet(tmp_path / "synthetic_cpu.parquet")
    configs = data[["family", "block", "depth", "width", "early_downsample", "resolution", "batch",
                    "precision", "num_classes"]].head(20)
    configs.to_csv(tmp_path / "configs.csv", index=False)  # no static features: computed
    runner = CliRunner()
    res = runner.invoke(app, ["fit", "--data", str(tmp_path / "synthetic_cpu.parquet"),
                              "--out", str(tmp_path / "m.joblib"), "--quick"])
    assert res.exit_code == 0, res.output
    assert "skipped ['energy_j']" in res.output and "platform synthetic_cpu" in res.output
    res = runner.invoke(app, ["predict", "--model", str(tmp_path / "m.joblib"), "--configs",
                              str(tmp_path / "configs.csv"), "--out", str(tmp_path / "p.csv"),
                              "--coverage", "0.8"])
    assert res.exit_code == 0, res.output
    pred = pd.read_csv(tmp_path / "p.csv")
    assert len(pred) == 20
    assert {"flops", "latency_ms_pred", "latency_ms_pred_lo", "peak_mem_mib_pred_hi"} <= set(pred)
    assert (pred["model_platform"] == "synthetic_cpu").all()
    assert "energy_j_pred" not in pred and "latency_ms" not in pred  # no measured column invented
    # measured columns of the input are kept apart from the predictions
    with_meas = data.head(20).drop(columns=[c for c in data.columns if c.startswith("n_op")],
                                   errors="ignore")
    with_meas.to_parquet(tmp_path / "measured.parquet")
    res = runner.invoke(app, ["predict", "--model", str(tmp_path / "m.joblib"), "--configs",
                              str(tmp_path / "measured.parquet"), "--out", str(tmp_path / "q.parquet")])
    assert res.exit_code == 0, res.output
    q = pd.read_parquet(tmp_path / "q.parquet")
    assert np.allclose(q["latency_ms"], with_meas["latency_ms"].to_numpy())  # untouched
    assert not np.allclose(q["latency_ms_pred"], q["latency_ms"])
    res = runner.invoke(app, ["fit", "--data", str(tmp_path / "nope.parquet"), "--out",
                              str(tmp_path / "x.joblib")])
    assert res.exit_code == 1 and "no such file" in res.output


def test_presets_in_one_place_default_is_the_constructor_default():
    presets = ensemble.PRESETS
    assert set(presets) == {"default", "paper", "fast", "quick", "screening_quick", "test"}
    defaults = CARBRegressor().get_params()
    for name, params in presets.items():
        assert set(params) <= set(defaults), name  # only constructor parameters
        model = CARBRegressor(**params)
        model._validate_params()
        model._check_params()
    assert {k: defaults[k] for k in presets["default"]} == presets["default"]
    assert set(defaults) - set(presets["default"]) == {"targets", "feature_set", "random_state",
                                                      "n_jobs"}
    fast, paper, default = presets["fast"], presets["paper"], presets["default"]
    quick, test = presets["quick"], presets["test"]
    assert paper["n_estimators_xgb"] == 800 and paper["n_estimators_et"] == 400  # paper sizes
    assert paper["max_depth_et"] is None and set(paper["learners"]) == {"xgb", "lgbm", "et"}
    for k in ("n_estimators_xgb", "n_estimators_lgbm", "n_estimators_regime"):
        assert test[k] <= quick[k] < default[k] < paper[k], k
    assert test["n_estimators_xgb"] < quick["n_estimators_xgb"]
    assert test["n_jobs"] == quick["n_jobs"] == 1 and test["cv"] == quick["cv"] == 3
    assert default["base"] is True
    assert fast["min_samples_leaf_et"] > 1 or fast["max_depth_et"] is not None
    assert ensemble.preset("test", cv=4) == {**test, "cv": 4}
    assert presets["test"]["cv"] == 3  # preset() returned a copy
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        ensemble.preset("huge")


#: One invalid value per constructor parameter (each must be refused by name).
BAD_VALUES = {
    "targets": "latency_ms", "feature_set": "telemetry", "base": "yes", "memory_law": "alloc", "memory_exact": "yes",
    "latency_law": "flops", "kernel_bench": 3, "kernel_cache_probe": 3,
    "learners": ("xgb", "rf"), "blend": "median", "cascade": "no", "n_estimators_xgb": 0,
    "max_depth_xgb": 0, "learning_rate_xgb": 0.0, "n_estimators_lgbm": 0, "num_leaves_lgbm": 1,
    "learning_rate_lgbm": -0.1, "n_estimators_et": 0, "min_samples_leaf_et": 0,
    "max_features_et": 0.0, "max_depth_et": 0, "n_estimators_regime": 0,
    "num_leaves_regime": 1, "learning_rate_regime": 0, "regime_batch_max": -1,
    "regime_shrink": 1.5, "cv": 1, "log_target": "yes", "conformal": "jackknife",
    "calibration_size": 0.9, "coverage": 1.0, "conformal_by_regime": "yes",
    "noise_weighting": None, "mixed_platforms": "yes", "random_state": -1, "n_jobs": 0,
}


def test_keyword_only_and_declarative_validation_of_every_parameter():
    with pytest.raises(TypeError):
        CARBRegressor(("latency_ms",), "static")  # everything after targets is keyword-only
    from sklearn.utils._param_validation import InvalidParameterError

    params = set(CARBRegressor().get_params())
    assert set(CARBRegressor._parameter_constraints) == params  # every parameter declared
    assert set(BAD_VALUES) == params
    frame = pd.DataFrame({"batch": [1], "family": ["resnet"]})  # refused before it is read
    for name, bad in BAD_VALUES.items():
        with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
            CARBRegressor(**{name: bad}).fit(frame)
    for name, bad in {"targets": (), "learners": ("xgb", "xgb")}.items():
        with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
            CARBRegressor(**{name: bad}).fit(frame)
    with pytest.raises(ValueError, match="empty only with base=True"):
        CARBRegressor(learners=(), base=False).fit(frame)
    est = CARBRegressor(learners=["lgbm"], targets=["latency_ms"], max_depth_et=None)
    est._validate_params()  # lists and None where allowed


def test_fast_preset_limits_extratrees(data):
    train = data[data["status"] == "ok"].iloc[:300]
    params = {**ensemble.PRESETS["fast"], "n_estimators_xgb": 10, "n_estimators_lgbm": 10,
              "n_estimators_et": 5, "n_estimators_regime": 10, "cv": 3, "n_jobs": 1,
              "targets": ("peak_mem_mib",)}
    model = CARBRegressor(**params).fit(train)
    et = model.models_["peak_mem_mib"]["et"]
    assert et.max_depth == params["max_depth_et"]
    assert et.min_samples_leaf == params["min_samples_leaf_et"]
    assert all(e.tree_.max_depth <= params["max_depth_et"] for e in et.estimators_)


def test_model_matrix_same_for_object_and_string_dtypes(data):
    ok = data[data["status"] == "ok"].iloc[:200]
    ref = model_matrix(ok)
    assert ref.dtypes.eq(np.float32).all() and ref.to_numpy().flags.c_contiguous
    as_object = ok.astype({c: object for c in ("family", "block", "precision", "early_downsample")})
    pd.testing.assert_frame_equal(model_matrix(as_object), ref)
    words = as_object.assign(early_downsample=as_object["early_downsample"].map(
        lambda v: "TRUE" if v else "0"))
    pd.testing.assert_frame_equal(model_matrix(words), ref)
    with pytest.raises(TypeError):
        model_matrix(words.assign(early_downsample="maybe"))
    # NB201 arch strings: counted once per distinct string, same counts per row
    arch = "|nor_conv_3x3~0|+|skip_connect~0|nor_conv_3x3~1|+|none~0|avg_pool_3x3~1|nor_conv_1x1~2|"
    nb = pd.DataFrame({
        "family": ["nb201"] * 3 + ["resnet"], "block": [None] * 3 + ["basic"],
        "depth": [np.nan] * 3 + [18], "width": [np.nan] * 3 + [1.0],
        "early_downsample": [None] * 3 + ["false"],
        "arch": [arch, "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|", arch, None],
        "resolution": 32, "batch": 4, "precision": "fp32", "num_classes": 10,
        **{c: 1e5 for c in ensemble.STATIC_FEATURES},
    })
    mm = model_matrix(nb)
    assert mm["nb201_n_nor_conv_3x3"].tolist() == [2, 0, 2, 0]
    assert mm["nb201_n_none"].tolist() == [1, 6, 1, 0]
    assert mm["early_downsample"].tolist() == [-1, -1, -1, 0]


def test_cli_fit_preset(tmp_path):
    from typer.testing import CliRunner

    from carb_lib.app.cli import app

    data = make_carb_synthetic(200, seed=4, energy=False, telemetry=False, platform="synthetic_cpu")
    data.to_parquet(tmp_path / "synthetic_cpu.parquet")
    runner = CliRunner()
    args = ["fit", "--data", str(tmp_path / "synthetic_cpu.parquet"), "--out",
            str(tmp_path / "m.joblib"), "--n-jobs", "1"]
    res = runner.invoke(app, args + ["--preset", "fast"])
    assert res.exit_code == 0, res.output
    assert "preset fast" in res.output
    meta = json.loads((tmp_path / "m.joblib.json").read_text())
    assert meta["params"]["n_estimators_xgb"] == ensemble.PRESETS["fast"]["n_estimators_xgb"]
    res = runner.invoke(app, args + ["--preset", "huge"])
    assert res.exit_code == 1 and f"--preset must be one of {sorted(ensemble.PRESETS)}" in res.output


def test_matrix_carries_other_families_columns_only_with_their_rows():
    from carb_lib.dataset.features import with_static_features
    from carb_lib.families import vgg

    resnet = with_static_features(pd.DataFrame({
        "family": ["resnet"], "block": ["basic"], "depth": [18], "width": [1.0],
        "early_downsample": [True], "resolution": [32], "batch": [1], "precision": ["fp32"],
        "num_classes": [1000]}))
    cols = list(model_matrix(resnet).columns)
    # the layout of models fitted before more families were registered
    assert cols[0] == "family_nb201" and "nb201_n_none" in cols
    assert not [c for c in cols if c.startswith(("family_vgg", "vgg_", "mobilenetv2",
                                                 "family_mobilenetv2", "efficientnet",
                                                 "family_efficientnet"))]
    one_vgg = with_static_features(vgg.sample_configs(1, seed=0))
    both = pd.concat([resnet, one_vgg], ignore_index=True)
    mixed = model_matrix(both)
    assert list(mixed.columns[: len(cols)]) == cols  # new family columns only append
    assert {"family_vgg", "vgg_depth", "vgg_width", "vgg_batch_norm"} <= set(mixed.columns)
    assert mixed["family_vgg"].tolist() == [0.0, 1.0]
    assert mixed["vgg_depth"].iloc[0] == families.get_family("vgg").not_applicable
    assert mixed["vgg_depth"].iloc[1] == float(one_vgg["depth"].iloc[0])
