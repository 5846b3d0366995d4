"""Probe networks (carb_lib.kernels.probe_nets): the draw, the built network, what the module family
measures on it and the operators the kernel law reads from it."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import torch

from carb_lib.families.module import describe
from carb_lib.kernels.operators import KERNEL_KINDS
from carb_lib.kernels.probe_nets import (
    PROBE_FACTORY,
    PROBE_VERSION,
    describe_probe,
    probe_network,
)


def _kwargs(seed: int) -> str:
    return json.dumps({"seed": seed, "version": PROBE_VERSION})


def _expected_counts(d: dict) -> dict[str, int]:
    """Layer counts of a drawn structure, block by block."""
    n_conv, n_dw, n_se, n_add = 2, 0, 0, 0  # the stem and the head
    for b in d["blocks"]:
        if b["kind"] == "conv":
            n_conv += 1
        else:
            expand = b["kind"] == "inverted" and b["cin"] * b["expansion"] != b["cin"]
            n_conv += 2 + int(expand) + 2 * int(b["se"])
            n_dw += 1
            n_se += int(b["se"])
        n_add += int(b["residual"])
    return {"n_conv": n_conv, "n_dwconv": n_dw, "n_se": n_se, "n_add": n_add}


def test_the_draw_is_a_function_of_seed_and_version():
    assert describe_probe(7) == describe_probe(7, PROBE_VERSION)
    assert describe_probe(7) != describe_probe(8)
    d = describe_probe(7)
    assert 3 <= d["stages"] <= 6 and d["act"] in ("relu", "relu6", "silu")
    assert all(b["cin"] % 8 == 0 and b["cout"] % 8 == 0 for b in d["blocks"])
    # a block keeps a residual add only where its input and output shapes agree
    assert all(not b["residual"] or (b["stride"] == 1 and b["cin"] == b["cout"])
               for b in d["blocks"])


@pytest.mark.parametrize("seed, version, match", [(-1, 1, "non-negative integer"),
                                                  (1.5, 1, "non-negative integer"),
                                                  (0, 2, "unknown probe version")])
def test_bad_seed_or_version_is_one_clear_error(seed, version, match):
    with pytest.raises(ValueError, match=match):
        describe_probe(seed, version)


def test_the_network_runs_and_has_the_drawn_head():
    net = probe_network(seed=3, num_classes=10).eval()
    with torch.no_grad():
        out = net(torch.randn(2, 3, 32, 32))
    assert out.shape == (2, 10) and torch.isfinite(out).all()


@pytest.mark.parametrize("seed", [0, 5, 11, 40])
def test_the_module_family_measures_the_drawn_layers(seed):
    units = describe(PROBE_FACTORY, _kwargs(seed), (3, 64, 64)).units
    want = _expected_counts(describe_probe(seed))
    assert {k: units[k] for k in want} == want
    assert (units["se_flops"] > 0) == (want["n_se"] > 0)
    assert (units["dw_flops_share"] > 0) == (want["n_dwconv"] > 0)


def test_the_kernel_law_reads_every_operator_of_a_probe_network():
    from carb_lib.families.module import ModuleConfig
    from carb_lib.kernels.law import network_ops

    cfgs = [ModuleConfig(PROBE_FACTORY, "3,64,64", 2, "fp32", _kwargs(seed)) for seed in (1, 2, 3)]
    rows = pd.DataFrame([{**c.to_dict(), "config_id": c.config_id} for c in cfgs])
    ops, arch_id = network_ops(rows)
    assert set(ops["kind"]) <= set(KERNEL_KINDS)
    for i, kw in enumerate(rows["module_kwargs"]):
        want = _expected_counts(describe_probe(json.loads(kw)["seed"]))
        mine = ops[ops["arch_id"] == arch_id[i]]["kind"].value_counts()
        assert mine.get("dwconv", 0) == want["n_dwconv"]
        assert mine.get("sigmoid", 0) == mine.get("mul", 0) == want["n_se"]
        assert mine.get("linear", 0) == 1


def test_stored_probe_rows_find_their_moved_factory_and_keep_their_ids():
    """Shipped rows name the factory by its path when they were measured
    (``carb_lib.probe_nets``); it resolves to the module's home now, and the ids hash the same."""
    from pathlib import Path

    from carb_lib.families.module import MOVED_MODULES, config_ids, load_factory

    path = Path(__file__).resolve().parents[1] / "data/cpu_epyc_zen5_2c/probe_nets/rows.parquet"
    rows = pd.read_parquet(path).head(3)
    assert set(rows["module"]) == {PROBE_FACTORY} and PROBE_FACTORY.split(":")[0] in MOVED_MODULES
    assert load_factory(PROBE_FACTORY) is probe_network
    assert config_ids(rows) == rows["config_id"].tolist()
