"""Chains of operators against their parts (carb_lib.kernels.chains), on SYNTHETIC shapes."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from carb_lib.kernels import chains as C
from carb_lib.kernels.operators import OP_COLUMNS


def _ops(arch: int, kinds: list[str], cin: int = 8, h: int = 16, break_at: int | None = None):
    rows = []
    for i, kind in enumerate(kinds):
        c_in = cin + (1 if i == break_at else 0)  # a shape that does not connect
        groups = c_in if kind == "dwconv" else 1
        rows.append({"arch_id": arch, "kind": kind, "cin": c_in, "cout": cin, "k": 3 if "conv" in kind else 1,
                     "stride": 1, "pad": 1 if "conv" in kind else 0, "groups": groups, "h_in": h, "h_out": h})
    return pd.DataFrame(rows)


def test_chains_follow_a_pattern_connect_and_are_kept_once():
    ops = pd.concat([
        _ops(0, ["conv", "bn", "relu", "add", "conv", "bn", "maxpool"]),
        _ops(1, ["conv", "bn", "relu"]),  # the same chain as arch 0's first: kept once
        _ops(2, ["dwconv", "bn", "relu6", "conv", "relu"], cin=16),
        _ops(3, ["conv", "bn", "relu"], break_at=1),  # bn reads 9 channels, conv writes 8: none
    ], ignore_index=True)
    found = C.find_chains(ops)
    by = found.groupby("chain_id")
    assert by["pattern"].first().tolist() == ["conv+bn+relu", "conv+bn", "dwconv+bn+relu6",
                                              "conv+relu"]
    assert by.size().tolist() == [3, 2, 3, 2]
    assert (by["position"].apply(list) == by.size().apply(lambda n: list(range(n)))).all()
    assert list(found.columns) == ["chain_id", "pattern", "position", *OP_COLUMNS]
    with pytest.raises(ValueError, match="network_ops"):
        C.find_chains(ops.drop(columns="h_out"))


def test_a_chain_is_timed_as_one_call_and_by_its_parts():
    chains = C.find_chains(_ops(0, ["conv", "bn", "relu"], cin=4, h=8))
    rows = C.time_chains(chains, batches=(1, 2), window_s=0.001, n_windows=2, rounds=2,
                         keep_heap=False, progress=False)
    assert rows[["chain_id", "batch"]].values.tolist() == [[0, 1], [0, 2]]
    assert (rows["chain_ms"] > 0).all() and (rows["parts_ms"] > rows["first_part_ms"]).all()
    np.testing.assert_allclose(rows["ratio"], rows["chain_ms"] / rows["parts_ms"])
    assert (rows["threads"] == 1).all() and rows["cpu_id"].notna().all()


def test_times_are_medians_over_rounds_and_parts_are_summed(monkeypatch):
    # per round: the chain, then its three parts (seconds)
    seq = itertools.cycle([0.010, 0.001, 0.002, 0.003,
                           0.030, 0.001, 0.004, 0.003,
                           0.020, 0.005, 0.002, 0.003])
    monkeypatch.setattr(C, "_time_call", lambda call, w, n: (next(seq), 0.0, 1))
    chains = C.find_chains(_ops(0, ["conv", "bn", "relu"], cin=4, h=8))
    (row,) = C.time_chains(chains, rounds=3, keep_heap=False, progress=False).to_dict("records")
    assert row["chain_ms"] == pytest.approx(20.0)  # median of 10, 30, 20 ms
    assert row["parts_ms"] == pytest.approx(1.0 + 2.0 + 3.0)  # each part's median, summed
    assert row["ratio"] == pytest.approx(20.0 / 6.0) and row["first_part_ms"] == pytest.approx(1.0)


def test_bad_settings_are_one_clear_error():
    chains = C.find_chains(_ops(0, ["conv", "bn"]))
    for kwargs, words in [({"precision": "int8"}, "precision"), ({"rounds": 0}, ">= 1"),
                          ({"batches": []}, "batches")]:
        with pytest.raises(ValueError, match=words):
            C.time_chains(chains, keep_heap=False, progress=False, **kwargs)


def test_the_summary_reads_ratios_and_the_share_the_parts_miss():
    rows = pd.DataFrame({"pattern": ["a", "a", "b"], "batch": 1, "ratio": [1.0, 1.2, 0.9],
                         "chain_ms": [1.0, 6.0, 0.9], "parts_ms": [1.0, 5.0, 1.0]})
    s = C.chain_summary(rows).set_index("pattern")
    assert s.loc["a", "n"] == 2 and s.loc["a", "ratio_median"] == pytest.approx(1.1)
    assert s.loc["a", "added_ms_share"] == pytest.approx(7.0 / 6.0 - 1)
    assert s.loc["b", "added_ms_share"] == pytest.approx(-0.1)
