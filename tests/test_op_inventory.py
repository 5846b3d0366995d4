"""The operator inventory (``carb_lib.kernels.inventory``): every aten call of a network on the
``meta`` device is classified or a listed view, nothing dropped; the kernel law's own lists
(``network_ops``, ``recorded_ops``) are unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from carb_lib.families import _torchvision as TV
from carb_lib.kernels import inventory as I
from carb_lib.kernels.op_lists import network_ops, recorded_ops

ROOT = Path(__file__).resolve().parents[1]
BEFORE = json.loads((ROOT / "tests/fixtures/op_inventory/network_ops_before.json").read_text())
#: The zoo networks whose blocks no design-space family holds, at 64 px, batch 1, fp32.
NETWORKS = {"convnext_tiny": {}, "shufflenet_v2_x1_0": {},
            "googlenet": {"aux_logits": False, "init_weights": False}, "alexnet": {},
            "mobilenet_v3_small": {}}
_CACHE: dict[str, pd.DataFrame] = {}


def _tv():
    try:
        return TV.import_torchvision()
    except TV.TorchvisionUnavailable as exc:  # the zoo extra is not installed
        pytest.skip(f"torchvision unavailable: {exc}")


def zoo_inventory(name: str) -> pd.DataFrame:
    if name not in _CACHE:
        import torch

        tv = _tv()
        with torch.device("meta"):
            net = getattr(tv.models, name)(**NETWORKS[name]).eval()
        _CACHE[name] = I.inventory(net, (1, 3, 64, 64), "fp32")
    return _CACHE[name]


def shapes(inv: pd.DataFrame, kind: str) -> list[tuple]:
    """The distinct (input shapes, output shapes) of the rows of ``kind``."""
    rows = inv[inv["kind"] == kind]
    return sorted(set(zip(rows["in_shapes"], rows["out_shapes"], strict=True)))


@pytest.mark.parametrize("name", list(NETWORKS))
def test_every_call_of_a_zoo_network_is_classified_or_a_listed_view(name):
    inv = zoo_inventory(name)
    I.check_complete(inv)  # raises, naming them, if any call is unclassified
    assert (inv["kind"] != "unclassified").all()
    assert list(inv.columns) == list(I.INVENTORY_COLUMNS)
    assert set(inv.loc[inv["kind"] != "view", "dtype"]) == {"float32"}  # (BN's uint8 empty)
    views = inv[inv["kind"] == "view"]
    assert views["aten"].str.split(".").str[1].isin(I.VIEW_OPS).all()
    assert (views[["flops", "bytes_read", "bytes_written"]] == 0).all().all()
    work = inv[inv["kind"] != "view"]
    assert (work["bytes_read"] > 0).all() and (work["bytes_written"] > 0).all()
    # modelled is exactly "the law records a row for it", with that row's kind
    assert (inv["modelled"] == inv["law_op"].notna()).all()
    law = inv[inv["modelled"]]
    assert (law["law_flops"] > 0).all() and (inv.loc[~inv["modelled"], "law_flops"] == 0).all()
    kinds = law["law_op"].str[0]
    # a linear layer on every pixel (ConvNeXt) is summed as a 1x1 convolution on them
    per_pixel = (law["kind"] == "linear") & (kinds == "conv") & (law["law_op"].str[3] == 1)
    same = (kinds == law["kind"]) | ((law["kind"] == "conv") & (kinds == "dwconv")) | per_pixel
    assert same.all()
    assert per_pixel.any() == (name == "convnext_tiny")


def test_layernorm_gelu_and_layer_scale_of_convnext_are_rows_the_law_leaves_out():
    inv = zoo_inventory("convnext_tiny")
    ln = inv[inv["kind"] == "layernorm"]
    assert len(ln) == 23 and not ln["modelled"].any()  # 18 blocks, stem, 3 downsamples, head
    assert ln["aten"].eq("aten.native_layer_norm.default").all()
    first = ln.iloc[0]  # the stem's LayerNorm2d: channels last, 96 channels on 16 x 16
    assert first["in_shapes"][0] == (1, 16, 16, 96) and first["cin"] == 96
    assert first["h_in"] == 16
    gelu = shapes(inv, "gelu")
    assert (((1, 16, 16, 384),), ((1, 16, 16, 384),)) in gelu
    assert (((1, 2, 2, 3072),), ((1, 2, 2, 3072),)) in gelu
    assert len(inv[inv["kind"] == "gelu"]) == 18
    assert len(inv[(inv["kind"] == "mul") & ~inv["modelled"]]) == 18  # layer scale, (C,1,1)
    # the block's linear layers run on every pixel: the law's row is a 1x1 convolution on them
    lin = inv[(inv["kind"] == "linear") & (inv["in_shapes"].str[1] == (256, 96))].iloc[0]
    assert lin["law_op"] == ("conv", 96, 384, 1, 1, 0, 1, 16, 16)
    assert lin["flops"] == lin["law_flops"] == 2 * 256 * 96 * 384
    head = inv[inv["kind"] == "linear"].iloc[-1]  # the classifier: one vector, a linear row
    assert head["law_op"][0] == "linear" and head["law_flops"] == head["flops"]
    share = I.unmodelled_share(inv)
    assert share["unmodelled_kinds"] == {"layernorm": 23, "gelu": 18, "mul": 18}
    assert 0 < share["unmodelled_flops_share"] < 0.01 < share["unmodelled_bytes_share"]
    assert share["law_flops_share"] > 0.99  # the per-pixel linear layers counted whole


def test_channel_shuffle_and_concatenation_of_shufflenet():
    inv = zoo_inventory("shufflenet_v2_x1_0")
    shuffle = inv[inv["kind"] == "channel_shuffle"]
    assert len(shuffle) == 16 and shuffle["aten"].eq("aten.clone.default").all()
    assert (shuffle["groups"] == 2).all() and not shuffle["modelled"].any()
    assert shapes(inv, "channel_shuffle")[0] == (((1, 58, 2, 8, 8),), ((1, 58, 2, 8, 8),))
    assert sorted(set(shuffle["cin"])) == [116, 232, 464]
    cat = inv[inv["kind"] == "cat"]
    assert len(cat) == 16 and not cat["modelled"].any()
    assert (((1, 58, 8, 8), (1, 58, 8, 8)), ((1, 116, 8, 8),)) in shapes(inv, "cat")
    row = cat.iloc[0]
    assert row["bytes_read"] == row["bytes_written"] == 116 * 8 * 8 * 4 and row["flops"] == 0
    assert I.unmodelled_share(inv)["unmodelled_flops_share"] == 0


def test_googlenet_branches_concatenate():
    inv = zoo_inventory("googlenet")
    cat = inv[inv["kind"] == "cat"]
    assert len(cat) == 9  # inception 3a-3b, 4a-4e, 5a-5b
    assert cat["in_shapes"].map(len).eq(4).all()  # four branches each
    assert (((1, 64, 8, 8), (1, 128, 8, 8), (1, 32, 8, 8), (1, 32, 8, 8)),
            ((1, 256, 8, 8),)) in shapes(inv, "cat")
    assert set(inv.loc[~inv["modelled"] & (inv["kind"] != "view"), "kind"]) == {"cat"}


def test_alexnet_adaptive_pool_to_6x6_and_a_conv_by_hand():
    inv = zoo_inventory("alexnet")
    pool = inv[inv["aten"] == "aten._adaptive_avg_pool2d.default"].iloc[0]
    assert pool["kind"] == "avgpool" and pool["out_shapes"] == ((1, 256, 6, 6),)
    assert (pool["h_in"], pool["h_out"], pool["cin"]) == (1, 6, 256)
    assert pool["law_op"][-1] == 1  # network_ops' row keeps its global pool (h_out 1)
    conv = inv[inv["kind"] == "conv"].iloc[0]  # 3 -> 64, 11 x 11, stride 4, pad 2, 64 -> 15
    assert (conv["cin"], conv["cout"], conv["k"], conv["stride"], conv["pad"], conv["groups"],
            conv["h_in"], conv["h_out"]) == (3, 64, 11, 4, 2, 1, 64, 15)
    assert conv["flops"] == 2 * 64 * 15 * 15 * 3 * 11 * 11
    assert conv["bytes_read"] == 4 * (3 * 64 * 64 + 64 * 3 * 11 * 11 + 64)
    assert conv["bytes_written"] == 4 * 64 * 15 * 15
    assert conv["law_flops"] == conv["flops"]


def test_hardswish_and_hardsigmoid_of_mobilenet_v3_are_left_out_of_the_law():
    inv = zoo_inventory("mobilenet_v3_small")
    share = I.unmodelled_share(inv)
    assert share["unmodelled_kinds"] == {"hardswish": 19, "hardsigmoid": 9}
    assert (((1, 16, 32, 32),), ((1, 16, 32, 32),)) in shapes(inv, "hardswish")
    assert inv.loc[inv["aten"] == "aten.hardswish_.default", "kind"].eq("hardswish").all()


def test_transposed_convolution_and_copies():
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.up = torch.nn.ConvTranspose2d(8, 4, 2, stride=2, groups=2)

        def forward(self, x):
            y = self.up(x)  # 8 x 4 x 4 -> 4 x 8 x 8
            z = torch.empty_like(y).copy_(y.transpose(2, 3))
            return z.to(torch.float16)

    inv = I.inventory(Net(), (1, 8, 4, 4))
    I.check_complete(inv)
    up = inv[inv["kind"] == "conv_transpose"].iloc[0]
    assert (up["cin"], up["cout"], up["k"], up["stride"], up["groups"], up["h_in"],
            up["h_out"]) == (8, 4, 2, 2, 2, 4, 8)
    assert up["flops"] == 2 * 8 * 4 * 4 * 2 * 2 * 2  # each input element: cout/groups x taps
    assert inv.loc[inv["kind"] != "view", "kind"].tolist() == ["conv_transpose", "copy", "copy"]


def test_a_call_neither_classified_nor_a_view_is_reported_or_raises():
    import torch

    class Odd(torch.nn.Module):
        def forward(self, x):
            return torch.cumsum(x, dim=1)

    inv = I.inventory(Odd(), (1, 4, 8, 8))
    assert inv["kind"].tolist() == ["unclassified"]
    assert inv["bytes_read"].iloc[0] == 4 * 4 * 64 and not inv["modelled"].iloc[0]
    with pytest.raises(ValueError, match="aten.cumsum.default"):
        I.check_complete(inv)
    with pytest.raises(ValueError, match="neither classified nor views"):
        I.inventory(Odd(), (1, 4, 8, 8), strict=True)


def test_a_module_off_meta_is_copied_and_fp16_halves_the_bytes():
    import torch

    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU())  # on the CPU
    a, b = I.inventory(net, (2, 3, 8, 8)), I.inventory(net, (2, 3, 8, 8), "fp16")
    assert next(net.parameters()).device.type == "cpu"
    assert set(b["dtype"]) == {"float16"}
    assert (a["bytes_read"] == 2 * b["bytes_read"]).all() and (a["flops"] == b["flops"]).all()
    assert (a["law_bytes"] == 2 * b["law_bytes"]).all()
    with pytest.raises(ValueError, match="not a torch dtype"):
        I.inventory(net, (1, 3, 8, 8), "fp8")


def test_network_ops_and_recorded_ops_are_unchanged():
    from carb_lib.families import get_family

    def rows(ops):
        return [[str(r[0]), *map(int, r[1:])] for r in ops]

    row = BEFORE["resnet_row"]
    ops, _ = network_ops(pd.DataFrame([row]))
    assert rows(ops.drop(columns="arch_id").itertuples(index=False)) == \
        BEFORE["resnet_network_ops"]
    assert rows(recorded_ops(get_family("resnet"), row)) == BEFORE["resnet_recorded_ops"]
    # the inventory's modelled rows are recorded_ops' rows, in order
    inv = I.network_inventory(row, strict=True)
    assert rows(inv.loc[inv["modelled"], "law_op"]) == BEFORE["resnet_recorded_ops"]


def test_alexnet_through_the_module_family_keeps_network_ops_global_pool():
    _tv()
    row = BEFORE["alexnet_row"]
    ops, _ = network_ops(pd.DataFrame([row]))
    got = [[str(r[0]), *map(int, r[1:])] for r in ops.drop(columns="arch_id").itertuples(
        index=False)]
    assert got == BEFORE["alexnet_network_ops"]
    inv = I.network_inventory(row, strict=True)
    assert inv.loc[inv["kind"] == "avgpool", "h_out"].tolist() == [6]
