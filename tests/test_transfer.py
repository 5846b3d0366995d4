"""Transfer analysis: few-shot prediction (shapes, sanity), pairwise, slopes, and the CLI."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from carb_lib.families.nb201 import all_archs, nb201_grid
from carb_lib.transfer import pairwise as T

SHIPPED = Path(__file__).resolve().parents[1] / "data/external/help_nb201.parquet"


def synthetic_platforms(n_archs: int = 300, seed: int = 0) -> pd.DataFrame:
    """SYNTHETIC latencies: three made-up platforms whose log latencies are affine in one shared
    per-arch cost (log FLOPs, op counts, a little noise), so B is exactly log-linear in A."""
    from carb_lib.families.nb201 import nb201_static_features

    rng = np.random.default_rng(seed)
    archs = list(rng.choice(all_archs(), size=n_archs, replace=False))
    g = nb201_grid(archs)
    f = nb201_static_features(g)
    shared = (0.1 * f["n_op_avgpool"] - 0.05 * f["n_op_skip"]).to_numpy()
    base = np.log(f["flops"].to_numpy()) / 10 + shared + rng.normal(0, 0.02, n_archs)
    rows = []
    for plat, a, b, noise in [("synthetic_a", 0.5, 1.0, 0.0), ("synthetic_b", 1.0, 1.3, 0.0),
                              ("synthetic_c", -0.2, 0.8, 0.05)]:
        d = g.copy()
        d["platform"] = plat
        d["latency_ms"] = np.exp(a + b * base + rng.normal(0, noise, n_archs) if noise
                                 else a + b * base)
        d["device_kind"] = "synthetic"
        rows.append(d)
    return pd.concat(rows, ignore_index=True)


def test_few_shot_predict_shapes_and_exact_recovery():
    df = synthetic_platforms()
    src = df[df.platform != "synthetic_b"]
    tgt = df[df.platform == "synthetic_b"].reset_index(drop=True)
    samples, query = tgt.iloc[:10], tgt.iloc[10:].drop(columns="latency_ms")
    for method in T.METHODS:
        pred = T.few_shot_predict(src, samples, query, method=method)
        assert pred.shape == (len(query),) and np.all(np.isfinite(pred)) and np.all(pred > 0)
    # b is exactly log-linear in a: the log-linear recalibration recovers it
    pred = T.few_shot_predict(src, samples, query, method="loglinear")
    np.testing.assert_allclose(pred, tgt["latency_ms"].iloc[10:], rtol=1e-6)
    m = T.metrics(tgt["latency_ms"].iloc[10:], T.few_shot_predict(src, samples, query))
    assert m["spearman"] > 0.99 and m["mape_pct"] < 3
    # the query order is kept
    rev = query.iloc[::-1]
    np.testing.assert_allclose(T.few_shot_predict(src, samples, rev, method="loglinear"),
                               pred[::-1], rtol=1e-9)


def test_few_shot_predict_uses_source_model_for_unmeasured_archs():
    df = synthetic_platforms(n_archs=300)
    tgt = df[df.platform == "synthetic_b"].reset_index(drop=True)
    # the sources never measured the query archs: their LightGBM models fill in
    query_archs = set(tgt["arch"].iloc[100:])
    src = df[(df.platform != "synthetic_b") & ~df["arch"].isin(query_archs)]
    samples, query = tgt.iloc[:20], tgt.iloc[100:]
    pred = T.few_shot_predict(src, samples, query, method="loglinear", n_estimators=60)
    # the fill-in: source synthetic_a's model predicts the query archs; b = 0.35 + 1.3 a exactly
    # (a = 0.5 + base, b = 1 + 1.3 base), so the log-linear map found on the 20 samples is that
    # one, applied to the model's predictions
    both = pd.concat([samples, query], ignore_index=True)
    S = T.source_predictions(src, both, n_estimators=60)
    s_a = S[[c for c in S.columns if c.startswith("synthetic_a@")][0]].to_numpy()
    assert np.all(np.isfinite(s_a))
    np.testing.assert_allclose(np.log(pred), 0.35 + 1.3 * s_a[20:], rtol=0, atol=1e-9)
    # so the ranking is the source model's ranking, and its error the model's error
    y = query["latency_ms"].to_numpy()
    m = T.metrics(y, pred)
    assert m["spearman"] == pytest.approx(T.metrics(y, np.exp(s_a[20:]))["spearman"], abs=1e-12)
    assert m["mape_pct"] == pytest.approx(
        100 * np.mean(np.abs(np.exp(0.35 + 1.3 * s_a[20:]) - y) / y), rel=1e-9)


def test_transfer_metrics_on_constructed_predictions():
    y, p = np.array([1.0, 2.0, 4.0, 8.0]), np.array([1.1, 1.8, 4.0, 9.0])
    m = T.metrics(y, p)
    assert m["mape_pct"] == pytest.approx((0.1 + 0.1 + 0.0 + 0.125) / 4 * 100)
    ss_res, ss_tot = 0.01 + 0.04 + 0.0 + 1.0, float(np.sum((y - y.mean()) ** 2))
    assert m["r2"] == pytest.approx(1 - ss_res / ss_tot)
    assert m["spearman"] == 1.0
    assert T.metrics(y, p[::-1])["spearman"] == -1.0
    assert np.isnan(T.metrics(y[:2], p[:2])["spearman"])  # fewer than 3 rows: no ranking


def test_few_shot_predict_errors():
    df = synthetic_platforms(n_archs=60)
    tgt = df[df.platform == "synthetic_b"]
    src = df[df.platform != "synthetic_b"]
    with pytest.raises(ValueError, match="method='magic' is unknown"):
        T.few_shot_predict(src, tgt.iloc[:5], tgt.iloc[5:], method="magic")
    with pytest.raises(ValueError, match="at least 2 usable target samples"):
        T.few_shot_predict(src, tgt.iloc[:1], tgt.iloc[5:])
    with pytest.raises(ValueError, match="span several platforms"):
        T.few_shot_predict(src, df.iloc[[0, 1, 70, 71]], tgt.iloc[5:])
    with pytest.raises(ValueError, match="no usable source rows"):
        T.few_shot_predict(src.iloc[:0], tgt.iloc[:5], tgt.iloc[5:])


def test_pairwise_slopes_and_curve_on_synthetic():
    df = synthetic_platforms(n_archs=200)
    pw = T.pairwise_transfer(df, n_estimators=40)
    assert set(pw["kind"]) == {"specific", "transfer"}
    assert len(pw) == 3 + 6
    assert (pw.loc[pw.kind == "specific", "spearman"] > 0.7).all()
    sl = T.slope_table(df).set_index(["source", "target"])
    assert len(sl) == 6
    row = sl.loc[("synthetic_a@b1", "synthetic_b@b1")]
    assert row["slope"] == pytest.approx(1.3, abs=1e-9) and row["r2"] == pytest.approx(1.0)
    assert row["slope_ci_low"] <= 1.3 <= row["slope_ci_high"]
    curve = T.few_shot_curve(df, ks=(5, 10), n_draws=2, methods=("blend", "flops"))
    assert set(curve["target"]) == {"synthetic_a@b1", "synthetic_b@b1", "synthetic_c@b1"}
    assert len(curve) == 3 * 2 * 2 * 2
    s = T.summarise_curve(curve)
    assert (s["n_draws"] == 2).all()
    again = T.few_shot_curve(df, ks=(5, 10), n_draws=2, methods=("blend", "flops"))
    pd.testing.assert_frame_equal(curve, again)  # seeded


@pytest.mark.skipif(not SHIPPED.exists(), reason="HELP parquet not converted")
def test_few_shot_on_help_devices_beats_flops():
    df = pd.read_parquet(SHIPPED)
    df = T.subsample_archs(df[df.platform.isin(["help_titanx", "help_1080ti", "help_gold_6240",
                                                "help_silver_4114"])], 600, seed=1)
    curve = T.few_shot_curve(df, targets=["help_titanx@b256", "help_silver_4114@b1"], ks=(10,),
                             n_draws=3, methods=("blend", "flops"))
    s = T.summarise_curve(curve).set_index(["target", "method"])["spearman_mean"]
    for t in ("help_titanx@b256", "help_silver_4114@b1"):
        assert s[(t, "blend")] > 0.85
    # FLOPs rank batch-256 GPU latency poorly (~0.7); the other GPUs transfer (~0.99)
    assert s[("help_titanx@b256", "blend")] > s[("help_titanx@b256", "flops")] + 0.1
    cmp = T.help_comparison(T.summarise_curve(curve), T.settings_table(df), k=10)
    assert cmp["help_source"].str.contains("reported by HELP").all()
    assert cmp.set_index("group").at["mean over devices", "help_reported"] == 0.932


def test_cli_transfer_round_trip(tmp_path):
    from typer.testing import CliRunner

    from carb_lib.app.cli import app

    df = synthetic_platforms(n_archs=120)
    df[df.platform == "synthetic_a"].to_parquet(tmp_path / "a.parquet", index=False)
    df[df.platform == "synthetic_c"].to_csv(tmp_path / "c.csv", index=False)
    tgt = df[df.platform == "synthetic_b"].reset_index(drop=True)
    tgt.iloc[:10].to_csv(tmp_path / "samples.csv", index=False)
    query = tgt.iloc[10:][["arch", "family", "resolution", "batch", "precision", "num_classes"]]
    query.to_csv(tmp_path / "query.csv", index=False)
    out = tmp_path / "pred.csv"
    res = CliRunner().invoke(app, [
        "transfer", "--source", str(tmp_path / "a.parquet"), "--source", str(tmp_path / "c.csv"),
        "--target-samples", str(tmp_path / "samples.csv"), "--query", str(tmp_path / "query.csv"),
        "--out", str(out), "--method", "loglinear",
    ])
    assert res.exit_code == 0, res.output
    pred = pd.read_csv(out)
    assert len(pred) == len(query)
    assert list(pred["config_id"]) == list(tgt["config_id"].iloc[10:])
    assert (pred["platform"] == "synthetic_b").all()
    np.testing.assert_allclose(pred["latency_ms_pred"], tgt["latency_ms"].iloc[10:], rtol=1e-6)
    # a bad input names the column and row
    bad = tgt.iloc[:10].copy()
    bad.loc[3, "latency_ms"] = -1.0
    bad.to_csv(tmp_path / "bad.csv", index=False)
    res = CliRunner().invoke(app, [
        "transfer", "--source", str(tmp_path / "a.parquet"), "--target-samples",
        str(tmp_path / "bad.csv"), "--query", str(tmp_path / "query.csv"), "--out", str(out),
    ])
    assert res.exit_code == 1 and "row 3: column 'latency_ms' value -1.0" in res.output


def test_arch_keys_with_mixed_families_have_no_missing_parts():
    """Rows of two families (NaN in the other family's columns) still get distinct keys."""
    from carb_lib.transfer.pairwise import arch_keys

    df = pd.DataFrame({
        "family": ["resnet", "nb201", "nb201"],
        "block": ["basic", None, None],
        "early_downsample": pd.array([True, pd.NA, pd.NA], dtype="boolean"),
        "width": [0.5, np.nan, np.nan],
        "arch": [None, "|a~0|", "|b~0|"],
        "resolution": [32, 32, 32],
    })
    keys = arch_keys(df)
    assert keys.notna().all() and keys.nunique() == 3


def test_ridge_drops_a_feature_missing_on_every_source_row_without_a_warning():
    """A column all NaN on the source rows has no mean: it is dropped (the same prediction as
    without it), quietly; NaN in other columns is filled with that column's mean."""
    import warnings

    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(30, 3))
    y = Xs @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=30)
    Xq = rng.normal(size=(5, 3))
    Xs_nan = np.column_stack([Xs, np.full(30, np.nan)])
    Xs_nan[3, 1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = T._ridge(Xs_nan, y, np.column_stack([Xq, rng.normal(size=5)]))
    filled = Xs.copy()
    filled[3, 1] = np.delete(Xs[:, 1], 3).mean()
    np.testing.assert_allclose(got, T._ridge(filled, y, Xq), rtol=1e-10)
