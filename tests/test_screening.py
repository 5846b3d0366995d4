"""Tests of carb_lib.screening: Pareto algorithms, hypervolume, budgets, the two-stage screen,
validation. Predictions come from a SYNTHETIC stand-in predictor (tests/_screening_standin.py)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from _screening_standin import StandInPredictor

from carb_lib import screening as scr
from carb_lib.screening import Budget, DeploymentSpec


# ----------------------------------------------------------------------------- helpers
def brute_front(F: np.ndarray) -> np.ndarray:
    F = np.asarray(F, dtype=float)
    out = np.ones(len(F), dtype=bool)
    for i in range(len(F)):
        le = np.all(F <= F[i], axis=1)
        lt = np.any(F < F[i], axis=1)
        out[i] = not np.any(le & lt)
    return out


def brute_hv(F: np.ndarray, ref: np.ndarray) -> float:
    """Union volume of the boxes [f, ref] by coordinate compression (exact, small sets)."""
    F = F[np.all(F < ref, axis=1)]
    if len(F) == 0:
        return 0.0
    m = F.shape[1]
    grids = [np.unique(np.append(F[:, j], ref[j])) for j in range(m)]
    total = 0.0
    for cell in itertools.product(*[range(len(g) - 1) for g in grids]):
        lo = np.array([grids[j][c] for j, c in enumerate(cell)])
        if np.any(np.all(F <= lo, axis=1)):
            total += float(np.prod([grids[j][c + 1] - grids[j][c] for j, c in enumerate(cell)]))
    return total


@pytest.fixture(scope="module")
def grid() -> pd.DataFrame:
    from carb_lib.families import space

    g = space.paper_grid()
    return scr.prepare_candidates(g.iloc[np.random.default_rng(0).choice(len(g), 3000, False)])


@pytest.fixture(scope="module")
def model() -> StandInPredictor:
    return StandInPredictor(platform="synthetic_gpu")


# ----------------------------------------------------------------------------- Pareto
def test_front_2d_hand_checked_with_ties_and_duplicates():
    F = np.array([[1, 5], [2, 3], [3, 4], [2, 3], [4, 1], [5, 1], [1, 6], [2, 4]], float)
    # (3,4) by (2,3); (5,1) by (4,1); (1,6) by (1,5); (2,4) by (2,3); duplicates (2,3) both kept
    expected = [True, True, False, True, True, False, False, False]
    assert scr.pareto_front(F).tolist() == expected


def test_front_3d_hand_checked_with_ties_and_duplicates():
    F = np.array([
        [1, 1, 9],   # front
        [1, 1, 9],   # duplicate of the above: also on the front
        [1, 2, 9],   # dominated by (1,1,9) (tie in two, worse in one)
        [9, 8, 1],   # front
        [5, 5, 5],   # front
        [5, 5, 6],   # dominated by (5,5,5)
        [6, 4, 5],   # front (better f2 than (5,5,5))
        [2, 2, 9],   # dominated by (1,1,9)
        [1, 9, 1],   # front; it would dominate (9, 9, 1)
    ], float)
    expected = [True, True, False, True, True, False, True, False, True]
    assert scr.pareto_front(F).tolist() == expected


def test_front_senses_max_and_one_objective():
    F = np.array([[1.0, 10], [2.0, 30], [3.0, 20], [2.0, 30]])
    # minimise column 0, maximise column 1: (1,10), (2,30) twice; (3,20) dominated by (2,30)
    assert scr.pareto_front(F, ["min", "max"]).tolist() == [True, True, False, True]
    assert scr.pareto_front(np.array([[3.0], [1.0], [1.0], [2.0]])).tolist() == [
        False, True, True, False]
    assert scr.pareto_front(np.empty((0, 3))).shape == (0,)


@pytest.mark.parametrize("m", [2, 3, 4])
@pytest.mark.parametrize("seed", range(4))
def test_front_matches_brute_force(m, seed):
    rng = np.random.default_rng(seed)
    for n in (1, 2, 7, 60, 400):
        ints = rng.integers(0, 6, size=(n, m)).astype(float)  # many ties and duplicates
        assert np.array_equal(scr.pareto_front(ints), brute_front(ints)), (m, n, "ints")
        cont = rng.random((n, m))
        assert np.array_equal(scr.pareto_front(cont), brute_front(cont)), (m, n, "cont")


@pytest.mark.parametrize("m", [2, 3, 4])
def test_front_large_uses_prefilter_and_matches_brute_force(m):
    rng = np.random.default_rng(7)
    n = 5000  # > 4096: the prefilter runs
    X = rng.random((n, m))
    X[:, 1] = 1 - X[:, 0] + 0.2 * X[:, 1]  # anti-correlated: a large front
    X = np.round(X, 2)  # ties
    got = scr.pareto_front(X)
    # brute force in chunks (vectorised O(n^2))
    exp = np.ones(n, bool)
    for s in range(0, n, 500):
        B = X[s:s + 500]
        le = np.all(X[None, :, :] <= B[:, None, :], axis=2)
        lt = np.any(X[None, :, :] < B[:, None, :], axis=2)
        exp[s:s + 500] = ~(le & lt).any(axis=1)
    assert np.array_equal(got, exp)


def test_front_rejects_non_finite():
    with pytest.raises(ValueError, match="finite"):
        scr.pareto_front(np.array([[1.0, np.nan]]))


def test_pareto_ranks_peel_fronts():
    F = np.array([[1, 3], [2, 2], [3, 1], [2, 3], [3, 3], [4, 4]], float)
    assert scr.pareto_ranks(F).tolist() == [0, 0, 0, 1, 2, 3]
    assert scr.pareto_ranks(F, max_rank=1).tolist() == [0, 0, 0, -1, -1, -1]


def test_crowding_extremes_infinite_and_interior_order():
    F = np.array([[0, 10], [1, 6], [2, 5], [10, 0]], float)
    d = scr.crowding_distance(F)
    assert np.isinf(d[0]) and np.isinf(d[3])
    # (1,6): (2-0)/10 + (10-5)/10 = 0.7; (2,5): (10-1)/10 + (6-0)/10 = 1.5
    assert d[1] == pytest.approx(0.7) and d[2] == pytest.approx(1.5)


# ----------------------------------------------------------------------------- hypervolume
def test_hypervolume_hand_values():
    assert scr.hypervolume(np.array([[0.0, 0.0]]), [1, 1]) == pytest.approx(1.0)
    assert scr.hypervolume(np.array([[0, 0.5], [0.5, 0]]), [1, 1]) == pytest.approx(0.75)
    F3 = np.array([[0, 0.5, 0.5], [0.5, 0, 0]])
    assert scr.hypervolume(F3, [1, 1, 1]) == pytest.approx(0.625)
    # a point outside the reference box adds nothing; dominated points add nothing
    assert scr.hypervolume(np.array([[0, 0.5], [0.5, 0], [2, 0], [0.6, 0.6]]), [1, 1]) == \
        pytest.approx(0.75)
    # maximised objective: ref below every point
    assert scr.hypervolume(np.array([[0.0, 1.0]]), [1, 0], senses=["min", "max"]) == \
        pytest.approx(1.0)


@pytest.mark.parametrize("m", [2, 3])
def test_hypervolume_matches_box_union(m):
    rng = np.random.default_rng(m)
    for _ in range(5):
        F = np.round(rng.random((12, m)), 1)
        ref = np.full(m, 1.05)
        assert scr.hypervolume(F, ref) == pytest.approx(brute_hv(F, ref))


# ----------------------------------------------------------------------------- budgets
@pytest.mark.parametrize("text, metric, limit", [
    ("energy_j<=75", "energy_j", 75.0),
    ("latency_ms <= 10", "latency_ms", 10.0),
    ("peak_mem_mib<=512", "peak_mem_mib", 512.0),
    ("energy_j_per_sample<=0.5", "energy_j_per_sample", 0.5),
    ("latency_ms_per_sample<=1e-1", "latency_ms_per_sample", 0.1),
    ("latency<=0.01s", "latency_ms", 10.0),
    ("peak_mem<=0.5GiB", "peak_mem_mib", 512.0),
    ("energy<=750mJ", "energy_j", 0.75),
    ("latency_ms<=10ms", "latency_ms", 10.0),
])
def test_budget_parse(text, metric, limit):
    b = Budget.parse(text)
    assert b.metric == metric and b.limit == pytest.approx(limit) and not b.strict


@pytest.mark.parametrize("text, match", [
    ("latency<=10", "no unit"),
    ("energy<=75", "no unit"),
    ("throughput_ips<=5", "unknown metric"),
    ("energy_j<=-1", ">= 0"),
    ("latency<=10J", "measures energy"),
    ("latency<=10furlongs", "unknown unit"),
    ("energy_j>=5", "upper limits"),
    ("peak_mem_mib_per_sample<=5", "per-sample"),
    ("energy_j", "cannot parse"),
    ("", "cannot parse"),
])
def test_budget_parse_errors(text, match):
    with pytest.raises(ValueError, match=match):
        Budget.parse(text)


def test_spec_validation_and_quality_proxy():
    spec = DeploymentSpec(budgets="energy_j<=75", objectives=["energy_j", "peak_mem_mib"])
    assert [o.label for o in spec.objectives][-1] == "max:params (capacity proxy)"
    assert spec.describe()["quality_is_proxy"] is True
    spec2 = DeploymentSpec(objectives=["latency_ms", "max:accuracy"])
    assert spec2.quality == "accuracy" and not spec2.describe()["quality_is_proxy"]
    assert len(DeploymentSpec(objectives=["latency_ms"], use_quality=False).objectives) == 1
    for bad in (dict(coverage=1.0), dict(k=0), dict(shortlist_method="hv"),
                dict(objectives=["max:latency_ms"]), dict(objectives=["latency_ms", "latency_ms"]),
                dict(objectives=[], use_quality=False)):
        with pytest.raises(ValueError):
            DeploymentSpec(**bad)


# ----------------------------------------------------------------------------- screening
def _spec(**kw):
    base = dict(budgets=["energy_j<=0.05", "peak_mem_mib<=512", "latency_ms_per_sample<=0.5"],
                objectives=["energy_j", "peak_mem_mib"], k=8)
    base.update(kw)
    return DeploymentSpec(**base)


def test_screen_funnel_counts_and_bounds(grid, model):
    res = scr.screen(model, grid, _spec())
    tab = res.table
    c = res.counts
    assert c["candidates"] == len(grid)
    assert c["eliminated_stage1"] + c["survivors"] == len(grid)
    assert c["shortlist"] == 8 and c["front"] >= 1
    # conservative: the upper bound is never below the point prediction
    for t in ("energy_j", "latency_ms", "peak_mem_mib"):
        assert (tab[f"{t}_hi"] >= tab[t]).all()
    # stage 1 compares the upper bound, per budget; counts add up
    for b in res.spec.budgets:
        fail = ~b.holds(tab[f"{b.metric}_hi"])
        assert res.budget_report.loc[b.label, "n_fail"] == fail.sum()
    assert res.budget_report["n_first_fail"].sum() == c["eliminated_stage1"]
    assert (res.budget_report["n_only_fail"] <= res.budget_report["n_fail"]).all()
    assert (tab.loc[~tab["within_budget"], "first_failing_budget"] != "").all()
    # survivors meet every budget on the upper bound; the front is non-dominated among them
    surv = tab[tab["within_budget"]]
    assert (surv["energy_j_hi"] <= 0.05).all() and (surv["peak_mem_mib_hi"] <= 512).all()
    F = surv[["energy_j", "peak_mem_mib", "params"]].to_numpy(float) * [1, 1, -1]
    assert np.array_equal(surv["on_front"].to_numpy(), brute_front(F))
    # the shortlist is on the front, ranked 0..k-1, and the proxy is said out loud
    sl = res.shortlist
    assert sl["on_front"].all() and sl["shortlist_rank"].tolist() == list(range(8))
    assert any("capacity proxy" in n for n in res.notes)
    assert "stage1_budgets" in res.timings_s and "stage2_pareto" in res.timings_s


def test_higher_coverage_fewer_survivors(grid, model):
    surv = [scr.screen(model, grid, _spec(coverage=cov)).counts["survivors"]
            for cov in (0.5, 0.8, 0.9, 0.99)]
    assert surv == sorted(surv, reverse=True)
    assert surv[0] > surv[-1]


def test_empty_shortlist_names_tightest_budget(grid, model):
    res = scr.screen(model, grid, _spec(budgets=["latency_ms<=0.0001", "peak_mem_mib<=100000"]))
    assert res.counts["survivors"] == 0 and len(res.shortlist) == 0
    assert res.tightest_budget == "latency_ms<=0.0001"
    assert any("tightest budget is latency_ms<=0.0001" in n for n in res.notes)
    assert "shortlist" in res.summary_text()


def test_small_front_filled_from_next_fronts(grid, model):
    res = scr.screen(model, grid, _spec(objectives=["energy_j"], use_quality=False, k=5))
    assert res.counts["front"] < 5 and res.counts["shortlist"] == 5
    assert res.shortlist["energy_j"].is_monotonic_increasing


def test_knee_method_and_upper_rank(grid, model):
    a = scr.screen(model, grid, _spec(shortlist_method="knee", rank_on="upper"))
    assert len(a.shortlist) == 8 and a.shortlist["on_front"].all()
    # the front is taken on the upper bounds of the predicted costs (params is not predicted)
    surv = a.table[a.table["within_budget"]]
    F = surv[["energy_j_hi", "peak_mem_mib_hi", "params"]].to_numpy(float) * [1, 1, -1]
    assert np.array_equal(surv["on_front"].to_numpy(), brute_front(F))
    # the shortlist: the 8 front members nearest the ideal point (normalised on the front)
    front = F[surv["on_front"].to_numpy()]
    lo, hi = front.min(axis=0), front.max(axis=0)
    d = np.sqrt((((front - lo) / (hi - lo)) ** 2).sum(axis=1))
    ids = surv.loc[surv["on_front"], "config_id"].to_numpy()
    assert a.shortlist["config_id"].tolist() == ids[np.argsort(d, kind="stable")[:8]].tolist()


def test_quality_column_maximised(grid, model):
    g = grid.assign(accuracy=np.log(grid["params"].to_numpy(float)))  # SYNTHETIC quality
    res = scr.screen(model, g, _spec(quality="accuracy"))
    assert not any("capacity proxy" in n for n in res.notes)
    assert res.spec.objectives[-1].column == "accuracy"


def test_cross_platform_variant(grid, model):
    model_a = StandInPredictor(platform="synthetic_other", rel=0.3)
    res = scr.screen(model, grid, _spec(), model_a=model_a, top_n=100)
    assert res.counts["after_cross_platform"] == 100
    assert res.platform_a == "synthetic_other" and res.platform == "synthetic_gpu"
    # the kept 100 are the A-model's lowest predicted energies
    pa = model_a.predict(grid)["energy_j"]
    assert set(res.table["config_id"]) == set(grid.loc[pa.nsmallest(100).index, "config_id"])
    res_p = scr.screen(model, grid, _spec(), model_a=model_a, top_n=50, rank_by="pareto")
    assert res_p.counts["after_cross_platform"] == 50
    with pytest.raises(ValueError, match="top_n"):
        scr.screen(model, grid, _spec(), model_a=model_a)


# ----------------------------------------------------------------------------- errors
def test_error_cases(grid, model):
    with pytest.raises(ValueError, match="empty"):
        scr.screen(model, grid.iloc[:0], _spec())
    with pytest.raises(ValueError, match="names no column"):
        scr.screen(model, grid, _spec(quality="accuracy"))
    with pytest.raises(ValueError, match="names no column"):
        scr.screen(model, grid, _spec(objectives=["min:no_such_column"]))
    with pytest.raises(ValueError, match="platform 'synthetic_gpu'.*'h200'"):
        scr.screen(model, grid, _spec(platform="h200"))
    with pytest.raises(ValueError, match="telemetry"):
        scr.screen(StandInPredictor(feature_set="static+telemetry"), grid, _spec())
    with pytest.raises(ValueError, match="feature set"):
        scr.screen(model, grid, _spec(feature_set="other"))
    cpu = StandInPredictor(platform="synthetic_cpu", targets=("peak_mem_mib", "latency_ms"))
    with pytest.raises(ValueError, match="does not predict"):
        scr.screen(cpu, grid, _spec())
    with pytest.raises(ValueError, match="predict_interval"):
        scr.screen(object(), grid, _spec())


# ----------------------------------------------------------------------------- validation
def _measured(grid, model, noise=0.0, seed=0):
    """SYNTHETIC 'measurements': the stand-in's predictions times log-normal noise."""
    p = model.predict(grid)
    rng = np.random.default_rng(seed)
    out = grid.copy()
    for t in p.columns:
        out[t] = p[t].to_numpy() * np.exp(rng.normal(0, noise, len(p)))
    out["status"] = "ok"
    return out


def _within_all(spec, values, batch):
    """Per row: do ``values`` ({target: array}) meet every budget of ``spec``."""
    ok = np.ones(len(batch), dtype=bool)
    for b in spec.budgets:
        v = np.asarray(values[b.target], dtype=float)
        ok &= (v / batch if b.per_sample else v) <= b.limit
    return ok


def test_validate_oracle_model_scores_exactly_one(grid):
    """Zero-width intervals on exact predictions: every score is exactly perfect."""
    oracle = StandInPredictor(platform="synthetic_gpu", rel=0.0)
    v = scr.validate_against_measured(oracle, _measured(grid, oracle), _spec())
    assert isinstance(v, scr.ScreeningValidation) and v.n == len(grid)
    for c in v.classification.values():
        assert (c.accuracy, c.false_accept_rate, c.false_reject_rate) == (1.0, 0.0, 0.0)
        assert c.n_pred_accept == c.n_meas_accept
    assert v.overall is v.classification["all"] and v.overall.n_pred_accept > 8
    assert v.measured_front_size == v.predicted_front_size > 8
    assert v.front_recall == 1.0 and v.front_recall_screened == 1.0
    assert v.shortlist_in_measured_front == 1.0
    assert v.hypervolume_ratio == pytest.approx(1.0, abs=1e-9)
    for e in v.shortlist_error.values():
        assert (e.mae, e.mape_pct, e.interval_coverage, e.n) == (0.0, 0.0, 1.0, 8)
    # the table marks the same rows on both fronts
    assert v.table["pred_front"].equals(v.table["meas_front"])


def test_validate_conservative_bounds_reject_but_never_accept_wrongly(grid, model):
    """Measurements equal to the point predictions; stage 1 tests the upper bounds (15 % wider):
    no false accept, and the false rejects are exactly the rows whose point is within every
    budget but whose upper bound is not."""
    spec = _spec()
    v = scr.validate_against_measured(model, _measured(grid, model), spec)
    iv = model.predict_interval(grid, coverage=spec.coverage)
    batch = grid["batch"].to_numpy(float)
    meas_ok = _within_all(spec, {t: iv[t] for t in model.targets_}, batch)
    pred_ok = _within_all(spec, {t: iv[f"{t}_hi"] for t in model.targets_}, batch)
    assert not (pred_ok & ~meas_ok).any() and (meas_ok & ~pred_ok).sum() > 0  # the case at hand
    allc = v.overall
    assert allc.false_accept_rate == 0.0
    assert allc.n_pred_accept == pred_ok.sum() and allc.n_meas_accept == meas_ok.sum()
    assert allc.false_reject_rate == pytest.approx((meas_ok & ~pred_ok).mean(), abs=1e-12)
    assert allc.accuracy == pytest.approx(1.0 - allc.false_reject_rate, abs=1e-12)
    for e in v.shortlist_error.values():
        assert e.mae == pytest.approx(0.0, abs=1e-12) and e.interval_coverage == 1.0
    assert set(v.shortlist_table.columns) >= {"energy_j_pred", "energy_j_meas"}


class _TableModel:
    """SYNTHETIC predictor: fixed costs per ``config_id``, zero-width intervals."""

    platform_ = "synthetic_table"
    feature_set = "static"
    targets_ = ("energy_j", "peak_mem_mib")

    def __init__(self, costs: dict[str, tuple[float, float]]) -> None:
        self.costs = costs

    def predict_interval(self, df: pd.DataFrame, coverage: float = 0.9) -> pd.DataFrame:
        out = {}
        for j, t in enumerate(self.targets_):
            out[t] = out[f"{t}_lo"] = out[f"{t}_hi"] = np.array(
                [self.costs[c][j] for c in df["config_id"]], dtype=float)
        return pd.DataFrame(out, index=df.index)


# measured (energy J, memory MiB) of six configs; the measured front is c0, c1, c2
_SIX = {"c0": (1.0, 5.0), "c1": (2.0, 3.0), "c2": (4.0, 1.0), "c3": (3.0, 4.0),
        "c4": (5.0, 5.0), "c5": (2.5, 3.5)}


def _six_rows() -> pd.DataFrame:
    rows = pd.DataFrame({"config_id": list(_SIX), "batch": 1, "flops": 1.0, "params": 1.0,
                         "activation_bytes": 1.0, "peak_act_bytes": 1.0, "status": "ok"})
    rows["energy_j"] = [e for e, _ in _SIX.values()]
    rows["peak_mem_mib"] = [m for _, m in _SIX.values()]
    return rows


def _swapped() -> _TableModel:
    """Predicts c1's costs for c4 and c4's for c1, everything else exactly."""
    return _TableModel({**_SIX, "c1": _SIX["c4"], "c4": _SIX["c1"]})


def test_validate_swapped_pair_hand_computed():
    """The swap puts c4 on the predicted front instead of c1: recall 2/3. Min-max normalised
    measured values (ranges [1, 5] both), reference 1.1: the measured front c0 (0, 1),
    c1 (.25, .5), c2 (.75, 0) has hypervolume .025 + .3 + .385 = .71; the predicted front's
    measured points c0, c4 (1, 1, dominated), c2 have .075 + .385 = .46."""
    spec = DeploymentSpec(objectives=["energy_j", "peak_mem_mib"], use_quality=False, k=3)
    v = scr.validate_against_measured(_swapped(), _six_rows(), spec)
    assert v.classification == {} and v.overall is None
    assert (v.measured_front_size, v.predicted_front_size) == (3, 3)
    assert set(v.table.loc[v.table["pred_front"], "config_id"]) == {"c0", "c2", "c4"}
    assert v.front_recall == pytest.approx(2 / 3, abs=1e-12)
    assert v.front_recall_screened == pytest.approx(2 / 3, abs=1e-12)
    assert v.shortlist_in_measured_front == pytest.approx(2 / 3, abs=1e-12)
    assert v.hypervolume_ratio == pytest.approx(46 / 71, abs=1e-9)
    assert v.shortlist_hypervolume_ratio == pytest.approx(46 / 71, abs=1e-9)
    # shortlist = the predicted front; c4 is off by 3 J (of 5) and 2 MiB (of 5)
    e, m = v.shortlist_error["energy_j"], v.shortlist_error["peak_mem_mib"]
    assert e.as_dict() == pytest.approx({"mae": 1.0, "mape_pct": 20.0,
                                         "interval_coverage": 2 / 3, "n": 3})
    assert m.as_dict() == pytest.approx({"mae": 2 / 3, "mape_pct": 40 / 3,
                                         "interval_coverage": 2 / 3, "n": 3})
    # the unswapped model is an oracle
    exact = scr.validate_against_measured(_TableModel(_SIX), _six_rows(), spec)
    assert exact.front_recall == 1.0 and exact.hypervolume_ratio == pytest.approx(1.0, abs=1e-9)


def test_validate_swapped_pair_with_budget_hand_computed():
    """Budget energy <= 4.5 J: c4 (5 J) fails when measured, c1 (predicted 5 J) when predicted.
    Accuracy 4/6, one false accept (c4) and one false reject (c1). Normalisation on the
    measured-feasible rows (energy [1, 4], memory [1, 5]): measured front c0 (0, 1),
    c1 (1/3, .5), c2 (1, 0): hypervolume 1.63/3; the predicted front's feasible rows c0, c2:
    .21; ratio 63/163. Among rows passing both (c0, c2, c3, c5) the front is c0, c5, c2."""
    spec = DeploymentSpec(budgets=["energy_j<=4.5"], objectives=["energy_j", "peak_mem_mib"],
                          use_quality=False, k=3)
    v = scr.validate_against_measured(_swapped(), _six_rows(), spec)
    expected = {"n": 6, "accuracy": 4 / 6, "false_accept_rate": 1 / 6,
                "false_accept_of_accepted": 1 / 5, "false_reject_rate": 1 / 6,
                "n_pred_accept": 5, "n_meas_accept": 5}
    assert list(v.classification) == ["energy_j<=4.5", "all"]
    for c in v.classification.values():
        assert c.as_dict() == pytest.approx(expected)
    t = v.table.set_index("config_id")
    assert t.index[~t["pred_within_budget"]].tolist() == ["c1"]
    assert t.index[~t["meas_within_budget"]].tolist() == ["c4"]
    assert v.front_recall == pytest.approx(2 / 3, abs=1e-12)
    assert v.front_recall_screened == pytest.approx(2 / 3, abs=1e-12)
    assert v.hypervolume_ratio == pytest.approx(63 / 163, abs=1e-9)


def test_validate_overpredicted_front_member_screened_recall():
    """A model that predicts c1 at 5 J / 5 MiB (c4's costs) and everything else exactly, budget
    energy <= 4.5 J: stage 1 wrongly rejects c1 (accuracy 5/6, no false accept). The measured
    front c0, c1, c2 is recalled 2/3; among rows passing both budgets (c0, c2, c3, c5) the
    measured front is c0, c5, c2, all predicted: recall 1. Hypervolume of c0 (0, 1),
    c5 (.5, .625), c2 (1, 0) is .3975, over 1.63/3: ratio 477/652."""
    spec = DeploymentSpec(budgets=["energy_j<=4.5"], objectives=["energy_j", "peak_mem_mib"],
                          use_quality=False, k=3)
    v = scr.validate_against_measured(_TableModel({**_SIX, "c1": _SIX["c4"]}), _six_rows(), spec)
    assert v.overall.as_dict() == pytest.approx(
        {"n": 6, "accuracy": 5 / 6, "false_accept_rate": 0.0, "false_accept_of_accepted": 0.0,
         "false_reject_rate": 1 / 6, "n_pred_accept": 4, "n_meas_accept": 5})
    assert set(v.table.loc[v.table["pred_front"], "config_id"]) == {"c0", "c2", "c5"}
    assert v.front_recall == pytest.approx(2 / 3, abs=1e-12)
    assert v.front_recall_screened == 1.0
    assert v.hypervolume_ratio == pytest.approx(477 / 652, abs=1e-9)


def test_validate_noisy_matches_independent_computation(grid, model):
    """Log-normal noise (sigma 0.3) beyond the 15 % intervals: the false accepts and the front
    recall equal what the measured values and a brute-force front give."""
    spec = _spec()
    meas = _measured(grid, model, noise=0.3)
    v = scr.validate_against_measured(model, meas, spec)
    batch = grid["batch"].to_numpy(float)
    iv = model.predict_interval(grid, coverage=spec.coverage)
    meas_ok = _within_all(spec, {t: meas[t].to_numpy() for t in model.targets_}, batch)
    pred_ok = _within_all(spec, {t: iv[f"{t}_hi"] for t in model.targets_}, batch)
    allc = v.overall
    assert allc.false_accept_rate == pytest.approx((pred_ok & ~meas_ok).mean(), abs=1e-12)
    assert allc.false_accept_rate > 0  # noise beyond the interval gives some false accepts
    assert allc.accuracy == pytest.approx((pred_ok == meas_ok).mean(), abs=1e-12)
    # measured front (brute force) among the measured-feasible rows
    F = np.column_stack([meas["energy_j"], meas["peak_mem_mib"], -grid["params"]])
    meas_front = np.zeros(len(grid), dtype=bool)
    meas_front[np.flatnonzero(meas_ok)[brute_front(F[meas_ok])]] = True
    t = v.table.set_index("config_id").loc[grid["config_id"]]
    assert np.array_equal(t["meas_front"].to_numpy(), meas_front)
    pred_front = t["pred_front"].to_numpy()
    assert v.front_recall == pytest.approx((pred_front & meas_front).sum() / meas_front.sum(),
                                           abs=1e-12)
    assert 0.0 < v.front_recall < 1.0
    assert "accuracy" in scr.format_validation(v)


def test_validation_result_keeps_mapping_access(grid, model):
    """Former dict reads (the CLI's) still work on the dataclasses."""
    v = scr.validate_against_measured(model, _measured(grid, model, 0.1), _spec())
    assert v["front_recall"] == v.front_recall and v.get("no_such_key", "d") == "d"
    assert v["classification"]["all"]["accuracy"] == v.overall.accuracy
    assert v.get("classification", {}).get("all") is v.overall
    assert {**v.overall}["false_accept_rate"] == v.overall.false_accept_rate
    assert list(v.keys())[:3] == ["result", "n", "classification"] and "table" in v
    with pytest.raises(KeyError):
        v["accuracy"]


def test_validate_on_hardware_with_fake_profiler(grid, model):
    spec = _spec(k=4)
    res = scr.screen(model, grid, spec)
    calls = []

    def fake_profile(config, device, protocol):
        calls.append((config, device))
        p = model.predict(pd.DataFrame([config]).pipe(scr.prepare_candidates))
        row = {t: float(p[t].iloc[0]) * 1.01 for t in p.columns}
        row["status"] = "ok"
        if len(calls) == 2:
            raise RuntimeError("boom")
        return row

    table, summ = scr.validate_on_hardware(res, "cpu", profile_fn=fake_profile)
    assert len(table) == 4 and len(calls) == 4
    assert calls[0][1] == "cpu" and "depth" in calls[0][0] and "config_id" not in calls[0][0]
    assert table["status"].tolist() == ["ok", "error", "ok", "ok"]
    assert table.loc[1, "error"] == "RuntimeError: boom"
    ok = table[table["status"] == "ok"]
    sl = res.shortlist.loc[ok.index]
    for t in ("energy_j", "latency_ms", "peak_mem_mib"):
        assert np.allclose(ok[f"{t}_abs_err"], 0.01 * sl[t], rtol=1e-9)
        assert ok[f"{t}_in_interval"].all()  # 1 % off, intervals +-15 %
        assert summ.mae[t] == pytest.approx(float((0.01 * sl[t]).mean()), rel=1e-9)
    # budgets held: the measured (1.01 x predicted) values against each budget; the failed
    # config's measurement is no check at all (never a miss)
    expected_held = sum(int(b.holds(np.array([(1.01 * r[b.target]) / (r["batch"] if b.per_sample
                                                                        else 1.0)]))[0])
                        for _, r in sl.iterrows() for b in spec.budgets)
    assert (summ.n, summ.budget_checks, summ.budgets_held) == (4, 9, expected_held)
    assert summ.not_measured == 3 and summ.held_share == pytest.approx(expected_held / 9)
    assert table.loc[1, [f"held_{b.label}" for b in spec.budgets]].isna().all()
    assert "NOT MEASURED (RuntimeError: boom)" in scr.format_hardware(table, summ)
    assert "BUDGET MISSED" not in scr.format_hardware(table, summ).splitlines()[2]
    # mapping access with the former keys (the CLI and the claims read them)
    assert list(summ.keys()) == ["n", "energy_j_mae", "latency_ms_mae", "peak_mem_mib_mae",
                                 "budget_checks", "budgets_held"]
    assert summ["energy_j_mae"] == summ.mae["energy_j"] and summ.get("energy_j_mae") is not None
    assert summ.get("no_such_mae") is None
    assert f"{expected_held}/9 budget checks held (3 not checked" in scr.format_hardware(table, summ)


# ----------------------------------------------------------------------------- scenarios
def test_default_scenarios_budgets_and_candidate_selection():
    from carb_lib.core.vocab import SMALL_BATCH_MAX

    batches = [1, 2, 3, 4, 8, 16, 32, 64]
    train = pd.DataFrame({"batch": batches, "energy_j": np.arange(1.0, 9.0),
                          "latency_ms": [10.0 * b for b in batches],
                          "peak_mem_mib": np.linspace(100.0, 800.0, 8)})
    sc = {s.name: s for s in scr.default_scenarios(train, "p", has_energy=True, k=5)}
    assert list(sc) == ["paper_style", "edge_memory", "batch1_latency"]
    # 25 % quantile of energy 1..8 is 2.75 -> 2 significant digits 2.8
    assert [b.label for b in sc["paper_style"].spec.budgets] == ["energy_j<=2.8"]
    assert sc["paper_style"].cross_platform and sc["paper_style"].spec.k == 5
    # edge: rows with batch <= 8 (batches 1, 2, 3, 4, 8): memory 100..500, q25 = 200;
    # per-sample latency is 10 ms for each, median 10
    assert [b.label for b in sc["edge_memory"].spec.budgets] == [
        "peak_mem_mib<=200", "latency_ms_per_sample<=10"]
    assert sc["edge_memory"].candidates(train)["batch"].tolist() == [
        b for b in batches if b <= SMALL_BATCH_MAX]
    assert sc["edge_memory"].describe_candidates() == f"batch <= {SMALL_BATCH_MAX}"
    assert sc["batch1_latency"].candidates(train)["batch"].tolist() == [1]
    assert [b.label for b in sc["batch1_latency"].spec.budgets] == ["latency_ms<=10"]
    # no energy measured: the paper-style budget is on latency
    cpu = scr.default_scenarios(train.drop(columns="energy_j"), "cpu", has_energy=False)
    assert cpu[0].spec.budgets[0].metric == "latency_ms"
    with pytest.raises(ValueError, match="lack"):
        sc["edge_memory"].candidates(train.drop(columns="batch"))


def test_screening_claim_rows_values(grid, model):
    spec = _spec()
    res = scr.screen(model, grid, spec)
    v = scr.validate_against_measured(model, _measured(grid, model, 0.3), spec)
    hw = scr.HardwareSummary(n=3, mae={"energy_j": 0.5}, budget_checks=9, budgets_held=6)
    rows = scr.screening_claim_rows(res, v, "synthetic_gpu", hardware=hw).set_index("claim_id")
    assert rows.at["screening_eliminated_fraction", "our_value"] == pytest.approx(
        1 - res.counts["front"] / len(grid))
    assert rows.at["screening_budget_accuracy", "our_value"] == v.overall.accuracy
    assert rows.at["screening_false_accept_rate", "our_value"] == v.overall.false_accept_rate
    assert rows.at["screening_budget_accuracy", "n"] == len(grid)
    assert rows.at["screening_hw_energy_error_j", "our_value"] == 0.5
    assert rows.at["screening_hw_budget_checks", "our_value"] == pytest.approx(6 / 9)
    assert rows["testable"].all()
    syn = scr.screening_claim_rows(res, v, "synthetic_gpu", synthetic=True)
    assert not syn["testable"].any() and syn["our_value"].isna().all()
    none = scr.screening_claim_rows(res, None, "p").set_index("claim_id")
    assert not none.at["screening_budget_accuracy", "testable"]
    assert none.at["screening_budget_accuracy", "reason"] == "no held-out measured rows"


# ----------------------------------------------------------------------------- outputs
def test_write_and_plots(grid, model, tmp_path):
    from carb_lib import plots

    res = scr.screen(model, grid, _spec())
    paths = res.write(tmp_path / "sl.csv", full_table=True)
    assert all(p.exists() for p in paths)
    summ = json.loads((tmp_path / "sl_summary.json").read_text())
    assert summ["counts"]["shortlist"] == 8 and summ["spec"]["quality_is_proxy"]
    assert len(pd.read_csv(tmp_path / "sl.csv")) == 8
    res.write(tmp_path / "sl.parquet")
    with pytest.raises(ValueError, match=".csv or .parquet"):
        res.write(tmp_path / "sl.txt")
    for fig, name in ((plots.plot_screening_front(res), "front"),
                      (plots.plot_screening_funnel(res), "funnel")):
        assert all(p.exists() for p in plots.save_figure(fig, f"synthetic_{name}", tmp_path))
    v = scr.validate_against_measured(model, _measured(grid, model, 0.1), _spec())
    fig = plots.plot_screening_validation(v.shortlist_table, res.spec.budgets)
    plots.save_figure(fig, "synthetic_validation", tmp_path)
    empty = scr.screen(model, grid, _spec(budgets=["latency_ms<=0.0001"]))
    plots.save_figure(plots.plot_screening_front(empty), "synthetic_empty", tmp_path)
    plots.save_figure(plots.plot_screening_funnel(empty), "synthetic_empty_funnel", tmp_path)


def test_cli_screen(tmp_path):
    """End to end through `carb screen` with a tiny CARBRegressor on SYNTHETIC data."""
    from typer.testing import CliRunner

    from carb_lib.app.cli import app
    from carb_lib.dataset.synthetic import make_synthetic_dataset
    from carb_lib.ensemble import PRESETS, CARBRegressor, save_model

    df = make_synthetic_dataset(n=360, seed=0, with_telemetry=False)
    df = df[df["status"] == "ok"]
    m = CARBRegressor(**PRESETS["quick"])  # the test-sized preset
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(df)
    path = save_model(m, tmp_path / "m.joblib")
    cand = tmp_path / "cands.parquet"
    # the synthetic generator's stand-in ids are not the configs' ids: the files carry none
    df = df.drop(columns=["config_id"])
    df.drop(columns=["energy_j", "latency_ms", "peak_mem_mib"]).to_parquet(cand)
    out = tmp_path / "sl.csv"
    runner = CliRunner()
    r = runner.invoke(app, ["screen", "--model", str(path), "--candidates", str(cand),
                            "--budget", "latency_ms<=50", "--budget", "peak_mem_mib<=4096",
                            "--objective", "latency_ms", "--objective", "energy_j",
                            "--k", "5", "--out", str(out), "--fig-dir", str(tmp_path / "fig")])
    assert r.exit_code == 0, r.output
    assert "Pareto front" in r.output and "capacity proxy" in r.output
    assert len(pd.read_csv(out)) == 5
    assert (tmp_path / "fig" / "screening_front.png").exists()
    df.to_parquet(tmp_path / "meas.parquet")
    r = runner.invoke(app, ["screen", "--model", str(path), "--candidates", str(cand),
                            "--budget", "latency_ms<=50", "--out", str(out),
                            "--measured", str(tmp_path / "meas.parquet")])
    assert r.exit_code == 0, r.output
    assert "held-out validation" in r.output
    r = runner.invoke(app, ["screen", "--model", str(path), "--budget", "latency<=10",
                            "--out", str(out)])
    assert r.exit_code == 1 and "no unit" in r.output
