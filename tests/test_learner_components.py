"""Learners as components: ``CARBRegressor(learners=[(name, estimator), ...])`` with nested
parameters, while names keep building the same learners (same predictions as before) and
model files of 0.1.0 keep loading.

``tests/fixtures/model_v0_1_0/`` was written by carb_lib 0.1.0 (before learners could be
components) on SYNTHETIC rows (``make_carb_synthetic(120, seed=3, telemetry=False)``): a model
file with XGBoost, LightGBM and ExtraTrees, its predictions, and the predictions of two
name-based fits (``expected_refit.csv``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from carb_synthetic import make_carb_synthetic
from sklearn.base import clone
from sklearn.ensemble import ExtraTreesRegressor, HistGradientBoostingRegressor
from sklearn.utils._param_validation import InvalidParameterError

from carb_lib.ensemble import PRESETS, CARBRegressor, feature_importances, load_model, save_model

FIXTURE = Path(__file__).parent / "fixtures" / "model_v0_1_0"
REFITS = {
    "test": PRESETS["test"],
    "fast3": {**PRESETS["fast"], "n_estimators_xgb": 5, "n_estimators_lgbm": 5,
              "n_estimators_et": 3, "n_estimators_regime": 5, "cv": 3, "n_jobs": 1},
}


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    return make_carb_synthetic(120, seed=3, telemetry=False)  # SYNTHETIC


def _fit(rows, **params) -> CARBRegressor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return CARBRegressor(**{"conformal": "oof", **params}).fit(rows)


@pytest.mark.parametrize("name", sorted(REFITS))
def test_named_learners_predict_what_they_did_before_components(rows, name):
    pred = _fit(rows, **REFITS[name]).predict(rows.head(12))
    want = pd.read_csv(FIXTURE / "expected_refit.csv")
    for t in pred:
        np.testing.assert_allclose(pred[t].to_numpy(), want[f"{name}:{t}"].to_numpy(),
                                   rtol=1e-12, atol=0)


def test_a_model_file_of_0_1_0_loads_and_predicts_as_it_did():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # library versions may differ from the saving ones
        model = load_model(FIXTURE / "carb_model.skops")
    assert tuple(model.learners) == ("xgb", "lgbm", "et")
    got = model.predict_interval(pd.read_csv(FIXTURE / "rows.csv"), coverage=0.8)
    want = pd.read_csv(FIXTURE / "expected_interval.csv")
    assert list(got.columns) == list(want.columns)
    num = [c for c in want.columns if c != "extrapolated"]
    np.testing.assert_allclose(got[num].to_numpy(), want[num].to_numpy(), rtol=1e-12, atol=0)
    assert (got["extrapolated"].to_numpy() == want["extrapolated"].to_numpy()).all()


def test_an_extratrees_component_equals_the_named_learner(rows):
    named = _fit(rows, **PRESETS["test"])
    et = ExtraTreesRegressor(n_estimators=20, min_samples_leaf=2, max_features=1.0, max_depth=14)
    comp = _fit(rows, **{**PRESETS["test"], "learners": [("et", et)]})
    assert et.random_state is None  # the given estimator is not changed: a clone is fitted
    assert comp.models_["latency_ms"]["et"].random_state == 0  # None: the estimator's seed
    pd.testing.assert_frame_equal(named.predict(rows), comp.predict(rows))


def test_a_learner_carb_lib_does_not_name_fits_and_predicts(rows, tmp_path):
    model = CARBRegressor(
        learners=[("et", ExtraTreesRegressor(n_estimators=10)),
                  ("hgb", HistGradientBoostingRegressor(max_iter=20))],
        cv=3, n_jobs=1, conformal="oof")
    params = model.get_params()
    assert params["hgb__max_iter"] == 20 and params["et__n_estimators"] == 10
    assert isinstance(params["hgb"], HistGradientBoostingRegressor)
    model.set_params(hgb__max_iter=15, cv=3)
    assert model.learners[1][1].max_iter == 15
    fitted = _fit(rows, **clone(model).get_params(deep=False))
    assert set(fitted.models_["latency_ms"]) == {"et", "hgb"}
    assert fitted.models_["latency_ms"]["hgb"].max_iter == 15
    pred = fitted.predict(rows.head(5))
    assert pred.shape == (5, 3) and np.isfinite(pred.to_numpy()).all() and (pred > 0).all().all()
    assert {"rmse_et", "rmse_hgb"} <= set(fitted.oof_metrics_.columns)
    imp = feature_importances(fitted)  # HGB has no feature_importances_: no rows of its own
    assert set(imp["learner"]) == {"et", "blend"}
    # saved and loaded: the metadata names the component and its parameters
    path = save_model(fitted, tmp_path / "m.skops")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = load_model(path)
    pd.testing.assert_frame_equal(back.predict(rows.head(5)), pred)
    import json

    meta = json.loads(Path(f"{path}.json").read_text())
    hgb = meta["params"]["learners"][1]
    assert hgb["name"] == "hgb" and hgb["class"].endswith("HistGradientBoostingRegressor")
    assert hgb["params"]["max_iter"] == 15


def test_names_and_components_mix_and_replace():
    model = CARBRegressor(learners=("xgb", ("hgb", HistGradientBoostingRegressor())))
    other = HistGradientBoostingRegressor(max_iter=7)
    model.set_params(hgb=other)
    assert model.learners == ("xgb", ("hgb", other))  # a tuple stays a tuple
    assert model.get_params()["hgb__max_iter"] == 7
    assert "xgb__n_estimators" not in model.get_params()  # a named learner: flat parameters
    assert clone(model).get_params()["hgb__max_iter"] == 7
    model.set_params(learners=["et"])
    assert "hgb" not in model.get_params()


@pytest.mark.parametrize("learners", [
    [("a", HistGradientBoostingRegressor()), ("a", HistGradientBoostingRegressor())],
    [("a__b", HistGradientBoostingRegressor())],
    [("a", "not an estimator")],
    ["rf"],
    [("et", HistGradientBoostingRegressor()), "et"],
])
def test_bad_learner_lists_are_refused(rows, learners):
    with pytest.raises(InvalidParameterError, match="learners"):
        CARBRegressor(learners=learners).fit(rows)


def test_a_learner_named_as_a_parameter_is_refused(rows):
    with pytest.raises(ValueError, match="are parameters of CARBRegressor"):
        CARBRegressor(learners=[("cv", HistGradientBoostingRegressor())]).fit(rows)
