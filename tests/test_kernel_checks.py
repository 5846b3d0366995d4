"""The additivity check (carb_lib.kernel_checks): networks timed whole and operator by operator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from kernel_synthetic import two_draws

from carb_lib import kernel_checks, kernels
from carb_lib.families import mobilenetv2, resnet
from carb_lib.vocab import KERNEL_FEATURE


def _rows() -> pd.DataFrame:
    df = pd.concat([resnet.sample_configs(2, seed=4), mobilenetv2.sample_configs(1, seed=5)],
                   ignore_index=True)
    return df.assign(resolution=32, batch=[1, 2, 1], precision=["fp32", "fp16", "fp32"],
                     latency_ms=[40.0, 50.0, 20.0])


def test_operators_are_summed_with_their_multiplicity(monkeypatch):
    # every operator call takes 1 ms alone, every network 25 ms: the sums are exact counts
    monkeypatch.setattr(kernels, "_time_call", lambda call, w, n: (1e-3, 0.0, 1))
    monkeypatch.setattr(kernel_checks, "_time_call", lambda call, w, n: (25e-3, 0.0, 1))
    rows = _rows()
    model = kernels.KernelModel(n_estimators=20).fit(
        kernels.sample_kernels(40, seed=1).assign(time_ms=2.0))
    check = kernel_checks.additivity_check(rows, model, progress=False)
    r = check.rows
    ops, arch = kernels.network_ops(rows)
    n_ops = ops.groupby("arch_id").size().reindex(arch).to_numpy()
    assert r["n_ops"].tolist() == n_ops.tolist()
    np.testing.assert_allclose(r["ops_alone_ms"], n_ops * 1.0)
    np.testing.assert_allclose(r["network_ms"], 25.0)
    np.testing.assert_allclose(r[KERNEL_FEATURE], kernels.with_kernel_column(rows, model)[KERNEL_FEATURE])
    assert list(r["family"]) == ["resnet", "resnet", "mobilenetv2"]
    assert r["latency_ms"].tolist() == [40.0, 50.0, 20.0]
    s = check.summary()
    allrow = s.loc[("all", "")]
    assert allrow["n"] == 3
    assert allrow["additivity_median"] == pytest.approx(np.median(n_ops / 25.0))
    assert allrow["repeat_mape_pct"] == pytest.approx(100 * np.mean(np.abs(25 / np.array([40, 50, 20]) - 1)))
    assert s.loc[("resnet", "fp16"), "n"] == 1


def test_really_times_a_small_network_and_refuses_bad_rows():
    rows = _rows().iloc[[0]].assign(resolution=16)
    check = kernel_checks.additivity_check(rows, None, window_s=0.002, n_windows=2,
                                           progress=False)
    r = check.rows.iloc[0]
    assert r["network_ms"] > 0 and r["ops_alone_ms"] > 0 and np.isnan(r[KERNEL_FEATURE])
    with pytest.raises(ValueError, match=r"lack column\(s\) \['latency_ms'\]"):
        kernel_checks.additivity_check(rows.drop(columns="latency_ms"), progress=False)
    with pytest.raises(ValueError, match="at least one row"):
        kernel_checks.additivity_check(rows.iloc[:0], progress=False)


def test_paired_variants_pairs_the_hold_outs_and_applies_the_rule():
    """SYNTHETIC two draws 1.5x apart: aligning them must win the paired rule against pooling
    them, the reverse comparison must keep the base, and both variants see the same hold-outs."""
    bench = two_draws(1.5, n=300)
    fast = {"n_estimators": 60}
    pv = kernel_checks.paired_variants(bench, {"draws": "pooled", **fast},
                                       {"draws": "aligned", **fast}, seeds=3,
                                       names=("pooled", "aligned"))
    assert list(pv.wide.columns) == ["pooled", "aligned"] and len(pv.wide) == 3
    # the same hold-out per seed: each variant's score equals holdout_check's on that seed
    for seed in range(3):
        ref = kernels.holdout_check(bench, random_state=seed, draws="aligned", **fast)
        assert pv.wide.loc[seed, "aligned"] == pytest.approx(ref.metrics["mape_pct"])
    assert (pv.gap < 0).all() and pv.gap_se > 0
    assert pv.candidate_wins() and pv.n_largest > 0
    assert "switch to aligned" in pv.report()
    rev = kernel_checks.paired_variants(bench, {"draws": "aligned", **fast},
                                        {"draws": "pooled", **fast}, seeds=3,
                                        names=("aligned", "pooled"))
    assert not rev.candidate_wins() and "keep aligned" in rev.report()
    np.testing.assert_allclose(rev.gap.to_numpy(), -pv.gap.to_numpy())
    with pytest.raises(ValueError, match=">= 2 seeds"):
        kernel_checks.paired_variants(bench, {}, {}, seeds=1)
    with pytest.raises(ValueError, match="two names"):
        kernel_checks.paired_variants(bench, {}, {}, seeds=2, names=("a", "a"))
