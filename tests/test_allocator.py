"""The allocator model (carb_lib.families._alloc, carb_lib.families.allocator): the simulated peak on
the meta device equals the measured CPU peak of real runs, the families' analytic walk equals
the simulation, every stored CPU row equals the analytic feature, and the memory base law
uses it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from carb_lib.core.vocab import ALLOC_FEATURE, ALLOC_FEATURES
from carb_lib.families import _alloc, get_family
from carb_lib.families.allocator import simulate_peak
from carb_lib.measure.counters import cpu_peak_memory_bytes

ROOT = Path(__file__).resolve().parents[1]
DATASETS = [ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "rows.parquet",
            ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "rows_new_families.parquet"]
#: Version 1 of the CPU data, measured on an AVX-512 CPU (oneDNN blocks of 16 channels).
AVX512_DATASET = ROOT / "data" / "cpu_epyc_2c" / "design" / "rows.parquet"
#: The rules were read on PyTorch's AVX2 CPU kernels (oneDNN blocks of 8 channels).
AVX2 = torch.backends.cpu.get_cpu_capability() == "AVX2" and torch.backends.mkldnn.is_available()
needs_avx2 = pytest.mark.skipif(not AVX2, reason="allocator rules are those of AVX2 oneDNN")


class SE(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.pool, self.fc1 = nn.AdaptiveAvgPool2d(1), nn.Conv2d(c, 4, 1)
        self.act, self.fc2, self.gate = nn.SiLU(inplace=True), nn.Conv2d(4, c, 1), nn.Sigmoid()

    def forward(self, x):
        return x * self.gate(self.fc2(self.act(self.fc1(self.pool(x)))))


class Res(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.body = body

    def forward(self, x):
        return x + self.body(x)


def _net(kind: str) -> nn.Module:
    """Tiny networks that exercise every rule."""
    if kind == "plain":  # cin < 8 with k > 1 (no input copy), cin >= 8, padding to 8
        return nn.Sequential(nn.Conv2d(3, 6, 3, padding=1, bias=False), nn.BatchNorm2d(6),
                             nn.ReLU(inplace=True), nn.Conv2d(6, 12, 3, padding=1),
                             nn.Conv2d(12, 20, 3, 2, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(20, 10))
    if kind == "pointwise":  # strided 1x1 (scratch), 1x1 stride 1 (slow path below 16 images)
        return nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3, bias=False), nn.MaxPool2d(3, 2, 1),
                             nn.Conv2d(16, 24, 1, 2, bias=False), nn.Conv2d(24, 8, 1),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
    if kind == "mobile":  # depthwise (grouped) convs, SE, residual add, ReLU6 and SiLU
        return nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                             nn.ReLU6(inplace=True),
                             Res(nn.Sequential(nn.Conv2d(16, 16, 5, 1, 2, groups=16, bias=False),
                                               nn.BatchNorm2d(16), nn.SiLU(inplace=True), SE(16),
                                               nn.Conv2d(16, 16, 1, bias=False))),
                             nn.Conv2d(16, 32, 3, 2, 1, groups=16), nn.AdaptiveAvgPool2d(1),
                             nn.Flatten(), nn.Linear(32, 10))
    raise ValueError(kind)


@needs_avx2
@pytest.mark.parametrize("kind", ["plain", "pointwise", "mobile"])
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("batch", [1, 3, 16])
def test_simulated_peak_equals_the_measured_one(kind, precision, batch):
    torch.manual_seed(0)
    dtype = torch.float16 if precision == "fp16" else torch.float32
    model = _net(kind).to(dtype).eval()
    x = torch.randn(batch, 3, 24, 24).to(dtype)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the campaigns' protocol; 1x1 kernels depend on it
    try:
        measured = cpu_peak_memory_bytes(model, x)
    finally:
        torch.set_num_threads(threads)
    sim = simulate_peak(model, tuple(x.shape), precision=precision)
    assert sim.resident_bytes == measured["resident_bytes"]
    assert sim.peak_bytes == measured["peak_bytes"]
    assert next(model.parameters()).device.type == "cpu"  # the caller's model is untouched


AVX512 = (torch.backends.cpu.get_cpu_capability().startswith("AVX512")
          and torch.backends.mkldnn.is_available())


@pytest.mark.skipif(not AVX512, reason="the grouped-conv layouts were read on AVX-512 oneDNN")
@pytest.mark.parametrize("per_group", [1, 4, 12, 16, 24, 32])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("batch", [1, 4])
def test_grouped_conv_peak_equals_the_measured_one(per_group, stride, batch):
    """A 3x3 grouped conv whose channels per group the 16-channel block does not divide (RegNet's
    groups of 24) runs in unpadded layouts; depthwise and multiples of 16 are blocked."""
    groups = 3
    c = per_group * groups
    conv = nn.Conv2d(c, c, 3, stride, 1, groups=groups, bias=False).eval()
    x = torch.randn(batch, c, 20, 20)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        measured = cpu_peak_memory_bytes(conv, x)
    finally:
        torch.set_num_threads(threads)
    variant = 16 if _alloc.host_variant() == 16 else "16+fp16"
    assert simulate_peak(conv, tuple(x.shape), block=variant).peak_bytes == measured["peak_bytes"]


def test_grouped_conv_events_pad_only_where_the_block_divides_the_group():
    hw_in, hw_out = 28 * 28, 14 * 14
    # RegNet's 72 channels in 3 groups of 24: input, weights and output unpadded
    ev = _alloc.conv_events("fp32", 1, 72, 72, (3, 3), (2, 2), (1, 1), 3, hw_in, hw_out, block=16)
    assert (72 * hw_in * 4, 0) in ev and (0, 72 * 24 * 9 * 4) in ev and (72 * hw_out * 4, 0) in ev
    # depthwise 72 channels: padded to 80
    ev = _alloc.conv_events("fp32", 1, 72, 72, (3, 3), (2, 2), (1, 1), 72, hw_in, hw_out, block=16)
    assert (80 * hw_in * 4, 0) in ev and (80 * hw_out * 4, 0) in ev


def test_simulated_peak_is_not_the_sum_of_outputs():
    """The scratch copies matter: an fp16 3x3 conv unfolds its input (9 x its size)."""
    conv = nn.Conv2d(16, 16, 3, padding=1, bias=False)
    f32 = simulate_peak(conv, (4, 16, 32, 32))
    f16 = simulate_peak(conv, (4, 16, 32, 32), precision="fp16")
    out = 4 * 16 * 32 * 32  # elements of the output (and of the input)
    assert f16.peak_increment_bytes == (out + 9 * out) * 2  # output + unfolded input
    # fp32 (oneDNN): blocked copy of the input + reordered weights + blocked output
    assert f32.peak_increment_bytes == 2 * out * 4 + 16 * 16 * 9 * 4
    with pytest.raises(ValueError, match="precision must be"):
        simulate_peak(conv, (1, 16, 8, 8), precision="bf16")


def _sample(name: str, n: int) -> pd.DataFrame:
    fam = get_family(name)
    if name == "resnet":
        from carb_lib.families.resnet import sample_configs
        df = sample_configs(n, seed=5)
    else:
        import importlib
        df = importlib.import_module(f"carb_lib.families.{name}").sample_configs(n, seed=5)
    rng = np.random.default_rng(1)
    # batches between the lanes' probes too, and both precisions
    df = df.assign(batch=rng.choice([1, 2, 3, 5, 15, 16, 17, 33, 100, 256], len(df)),
                   precision=rng.choice(["fp32", "fp16"], len(df)))
    return df.assign(family=fam.name)


@pytest.mark.parametrize("name", ["resnet", "mobilenetv2", "vgg", "efficientnet"])
def test_analytic_walk_equals_the_simulation(name):
    fam = get_family(name)
    df = _sample(name, 10).reset_index(drop=True)
    feats = fam.static_features(df)
    got, got16 = feats[ALLOC_FEATURE].to_numpy(), feats[ALLOC_FEATURES[16]].to_numpy()
    for i, row in df.iterrows():
        cfg = fam.from_row(row.to_dict())
        with torch.device("meta"):
            model = fam.build_model(cfg)
        shape = (cfg.batch, 3, cfg.resolution, cfg.resolution)
        sim = simulate_peak(model, shape, precision=cfg.precision)
        assert got[i] == pytest.approx(sim.peak_bytes, rel=0, abs=0.5), (row.to_dict(), i)
        if cfg.precision == "fp16":  # no blocked layouts: the same peak
            assert got16[i] == got[i]
            continue
        sim16 = simulate_peak(model, shape, precision=cfg.precision, block=16)
        assert got16[i] == pytest.approx(sim16.peak_bytes, rel=0, abs=0.5), (row.to_dict(), i)


@pytest.mark.parametrize("path", DATASETS, ids=lambda p: p.parent.name)
def test_every_stored_cpu_row_equals_the_analytic_peak(path):
    from carb_lib.dataset.features import static_features

    df = pd.read_parquet(path)
    df = df[df["status"] == "ok"]
    assert len(df) > 1000
    pred = static_features(df)[ALLOC_FEATURE].to_numpy()
    measured = df["peak_mem_mib"].to_numpy(dtype=float) * 2**20
    assert np.abs(pred - measured).max() <= 0.5  # the same byte count, every row


def test_the_avx512_rows_equal_the_16_channel_peak_and_the_law_learns_the_block():
    """Version 1 of the CPU data came from an AVX-512 CPU: every row is the 16-channel peak,
    about one in seven is not the 8-channel one, and the memory law picks 16 from the rows."""
    from carb_lib.dataset.features import static_features
    from carb_lib.ensemble.base_models import fit_base_law

    df = pd.read_parquet(AVX512_DATASET)
    df = df[df["status"] == "ok"]
    f = static_features(df)
    measured = df["peak_mem_mib"].to_numpy(dtype=float) * 2**20
    assert np.abs(f[ALLOC_FEATURES[16]].to_numpy() - measured).max() <= 0.5
    off8 = np.abs(f[ALLOC_FEATURE].to_numpy() - measured) > 0.5
    assert 0.05 < off8.mean() < 0.5
    law = fit_base_law(df.assign(**{c: f[c].to_numpy() for c in ALLOC_FEATURES.values()}),
                       "peak_mem_mib")
    assert law.alloc_block == 16 and law.train_error < 1e-9
    assert np.abs(law.predict(df) / df["peak_mem_mib"].to_numpy() - 1).max() < 1e-6
    avx2 = pd.read_parquet(DATASETS[0]).head(600)
    assert fit_base_law(avx2, "peak_mem_mib").alloc_block == 8


def test_lanes_and_table_shapes():
    walk = _alloc.AllocWalk()
    walk.conv(10, 3, 8, 3, 1, 1, 1, 8, 8)
    t = walk.table()
    assert t.shape == (len(_alloc.LANES), _alloc.K, 2)
    lane = _alloc.lane_of(np.array(["fp32", "fp32", "fp32", "fp16", "fp16", "bf16"], object),
                          np.array([1, 2, 16, 1, 700, 4]))
    assert lane.tolist() == [0, 1, 2, 3, 4, -1]
    lane16 = _alloc.lane_of(np.array(["fp32", "fp32", "fp32", "fp16", "fp16"], object),
                            np.array([1, 2, 16, 1, 700]), block=16)
    assert [_alloc.LANES[i][3] for i in lane16] == [16, 16, 16, 0, 0]
    assert lane16.tolist()[3:] == [3, 4]  # fp16 lanes are shared by both blocks
    with pytest.raises(ValueError, match="block=12 is not modelled"):
        _alloc.lane_of(np.array(["fp32"], object), np.array([1]), block=12)
    assert len(walk.unit()) == len(_alloc.ALLOC_UNIT_COLUMNS)
    reg = _alloc._registry()
    reg.reset_if_full(limit=0)  # a full registry starts over (when the next walk starts)
    assert reg.n == 0
    again = _alloc.AllocWalk()
    again.conv(10, 3, 8, 3, 1, 1, 1, 8, 8)
    np.testing.assert_array_equal(again.table(), t)


def test_walks_in_threads_keep_their_own_registry():
    """Dask workers with several threads walk concurrently: same features as one thread."""
    from concurrent.futures import ThreadPoolExecutor

    from carb_lib.families.resnet import _resnet_unit, resnet_static_features

    df = _sample("resnet", 40)
    serial = resnet_static_features(df)[ALLOC_FEATURE].to_numpy()
    _resnet_unit.cache_clear()
    parts = np.array_split(np.arange(len(df)), 4)
    with ThreadPoolExecutor(4) as ex:
        out = list(ex.map(lambda i: resnet_static_features(df.iloc[i])[ALLOC_FEATURE], parts))
    np.testing.assert_array_equal(np.concatenate([o.to_numpy() for o in out]), serial)


def test_nb201_has_no_model_and_the_law_falls_back():
    from carb_lib.dataset.features import static_features
    from carb_lib.ensemble.base_models import _alloc_term

    df = pd.DataFrame({"family": ["nb201"] * 2, "arch": ["|nor_conv_3x3~0|+|skip_connect~0|"
                                                         "nor_conv_1x1~1|+|skip_connect~0|"
                                                         "none~1|avg_pool_3x3~2|"] * 2,
                       "resolution": [32, 32], "batch": [1, 8], "precision": ["fp32"] * 2})
    f = static_features(df)
    assert f[list(ALLOC_FEATURES.values())].isna().all().all()
    np.testing.assert_array_equal(_alloc_term(f), f["param_bytes"] + f["peak_act_bytes"])
    np.testing.assert_array_equal(_alloc_term(f, 16), f["param_bytes"] + f["peak_act_bytes"])
    with pytest.raises(ValueError, match="alloc_block=4 is not modelled"):
        _alloc_term(f, 4)


def test_memory_law_puts_weight_one_on_the_allocator_peak():
    from carb_lib.ensemble.base_models import fit_base_law, law_columns

    df = pd.read_parquet(DATASETS[0])
    df = df[df["status"] == "ok"]
    law = fit_base_law(df, "peak_mem_mib")
    assert law_columns("memory")[-1] == "alloc_mib"
    for p in law.precisions:
        np.testing.assert_allclose(law.coef[p][-1], 1.0, atol=1e-6)
    rel = law.predict(df) / df["peak_mem_mib"].to_numpy() - 1
    assert np.abs(rel).max() < 1e-6
    old = fit_base_law(df, "peak_mem_mib", kind="memory_bytes")
    assert len(old.coef["fp32"]) == 4
    assert np.abs(old.predict(df) / df["peak_mem_mib"].to_numpy() - 1).mean() > 0.01
    with pytest.raises(ValueError, match="kind must be"):
        fit_base_law(df, "peak_mem_mib", kind="memory_bits")


def test_module_family_uses_the_simulator():
    from carb_lib.families import module as M

    nets = f"{ROOT / 'tests' / 'fixtures' / 'user_module' / 'nets.py'}:tiny"
    df = M.module_configs(nets, "3,32,32", batches=(1, 4), precisions=("fp32", "fp16"))
    f = M.module_static_features(df)
    for i, row in df.reset_index(drop=True).iterrows():
        model = M.build_from_spec(nets, row["module_kwargs"], meta=True)
        for block, name in ALLOC_FEATURES.items():
            sim = simulate_peak(model, (int(row["batch"]), 3, 32, 32),
                                precision=row["precision"], block=block)
            assert f[name].iloc[i] == sim.peak_bytes


def test_a_module_the_simulator_cannot_follow_gets_nan_and_a_warning(monkeypatch, caplog):
    import carb_lib.families.allocator as A
    from carb_lib.families import module as M

    def boom(*a, **k):
        raise RuntimeError("unsupported op")

    monkeypatch.setattr(A, "simulate_peaks", boom)
    M._alloc_peak_cases.cache_clear()
    nets = f"{ROOT / 'tests' / 'fixtures' / 'user_module' / 'nets.py'}:tiny"
    df = M.module_configs(nets, "3,32,32", batches=(2,))
    with caplog.at_level("WARNING", logger="carb_lib.families.module"):
        f = M.module_static_features(df)
    M._alloc_peak_cases.cache_clear()
    assert f[list(ALLOC_FEATURES.values())].isna().all().all() and f["flops"].gt(0).all()
    assert caplog.text.count("unsupported op") == 1  # simulated once, not once per block


@pytest.mark.parametrize("kind", ["plain", "pointwise", "mobile"])
@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_one_pass_over_several_variants_equals_one_pass_each(kind, precision):
    """simulate_peaks feeds each variant its own events from one forward: every variant's
    peak and event count are those of its own simulate_peak (the plain net's fp32 peaks and
    every fp16 peak differ between variants, so state shared between them would show)."""
    from carb_lib.families.allocator import simulate_peaks

    model = _net(kind)
    variants = tuple(ALLOC_FEATURES)
    together = simulate_peaks(model, (16, 3, 24, 24), precision=precision, blocks=variants)
    assert list(together) == list(variants)
    for v in variants:
        assert together[v] == simulate_peak(model, (16, 3, 24, 24), precision=precision, block=v)
    if kind == "plain" or precision == "fp16":
        lane = 16 if precision == "fp32" else "16+fp16"
        assert together[8].peak_bytes != together[lane].peak_bytes
    with pytest.raises(ValueError, match="blocks is empty"):
        simulate_peaks(model, (1, 3, 24, 24), blocks=())


def test_a_memory_law_saved_without_the_allocator_term_still_predicts():
    from carb_lib.ensemble.base_models import BaseLaw, fit_base_law

    df = pd.read_parquet(DATASETS[0])
    df = df[df["status"] == "ok"].head(400)
    old = fit_base_law(df, "peak_mem_mib", kind="memory_bytes")
    saved = BaseLaw("peak_mem_mib", "memory", old.precisions, old.coef, old.floor, old.n)
    np.testing.assert_array_equal(saved.predict(df), old.predict(df))
    assert list(saved.constants()["term"].unique()) == list(old.constants()["term"].unique())


def test_the_zen4_rows_are_one_cpu_and_equal_the_16_channel_peak():
    """The second CPU of the kernel law's replication (data/other_cpus): AVX-512, so 16-channel
    blocks; every row carries that CPU's ``cpu_id``; its configs are the Zen 3 plan's."""
    from carb_lib.dataset.features import static_features
    from carb_lib.dataset.schema import read_dataset

    df = read_dataset(ROOT / "data" / "cpu_epyc_zen4_2c" / "design" / "rows.parquet")
    assert (df["status"] == "ok").all() and len(df) == 2041
    assert df["cpu_id"].nunique() == 1 and "family 25 model 17" in df["cpu_id"].iloc[0]
    assert "AVX512" in df["cpu_id"].iloc[0]
    f = static_features(df)
    measured = df["peak_mem_mib"].to_numpy(dtype=float) * 2**20
    assert np.abs(f[ALLOC_FEATURES[16]].to_numpy() - measured).max() <= 0.5
    zen3 = pd.read_parquet(DATASETS[0], columns=["config_id"])
    assert set(df["config_id"]) <= set(zen3["config_id"])


# ------------------------------------------------------------ fp16 convs through oneDNN
#: Allocator events (bytes, in order) of single fp16 ``Conv2d`` calls recorded with
#: ``torch.profiler`` on the Xeon of ``data/cpu_xeon_emr_2c/design/rows.parquet`` (family 6
#: model 207, AVX512-FP16, PyTorch 2.13, one thread): (n, cin, cout, k, stride, pad, groups,
#: h) -> events.
XEON_FP16_CONV_EVENTS = {
    (2, 16, 32, 3, 1, 1, 1, 8): [8216, 4096, 9216, 8192, -9216, -4096, -8216, 8192, 8192,
                                 -8192, -8192],
    (4, 3, 16, 7, 2, 3, 1, 32): [8216, 24576, 4704, 32768, -4704, -24576, -8216, 32768,
                                 32768, -32768, -32768],
    (2, 40, 33, 1, 1, 0, 1, 8): [8216, 10240, 5120, 8448, -5120, -10240, -8216, 8448, 8448,
                                 -8448, -8448],
    (2, 32, 144, 1, 1, 0, 1, 8): [8216, 8192, 9216, 36864, -9216, -8192, -8216, 36864, 36864,
                                  -36864, -36864],
    (2, 40, 40, 5, 2, 2, 40, 8): [10240, 2400, 2560, -2400, -10240, 2560, 2560, -2560, -2560],
    (4, 96, 4, 1, 1, 0, 1, 1): [8216, 3072, 32, -3072, -8216, 32, -32],
    (2, 64, 64, 3, 2, 1, 64, 2): [1024, 1152, 256, -1152, -1024, 256, -256],
}
FP16_ONEDNN = _alloc.host_variant() == "16+fp16"


def _event_bytes(n, cin, cout, k, s, p, g, h):
    ho = (h + 2 * p - k) // s + 1
    out = []
    for ev in _alloc.conv_events("fp16", n, cin, cout, (k, k), (s, s), (p, p), g, h * h,
                                 ho * ho, block=16, fp16_onednn=True):
        out += [b for b in (ev[0] * n, ev[1]) if b]
    return out


@pytest.mark.parametrize("shape", list(XEON_FP16_CONV_EVENTS), ids=str)
def test_fp16_onednn_conv_events_are_the_recorded_ones(shape):
    """Dense (padded weights, the 8,216-byte scratch), depthwise, 1 x 1 inputs and outputs."""
    assert _event_bytes(*shape) == XEON_FP16_CONV_EVENTS[shape]


@pytest.mark.skipif(not FP16_ONEDNN, reason="this CPU's oneDNN does not run fp16 convs")
@pytest.mark.parametrize("kind", ["plain", "pointwise", "mobile"])
@pytest.mark.parametrize("batch", [1, 3])
def test_fp16_onednn_simulation_equals_the_measured_peak(kind, batch):
    """On an AVX512-FP16 CPU (this variant's), the simulated fp16 peak is the measured one."""
    torch.manual_seed(0)
    model = _net(kind).half().eval()
    x = torch.randn(batch, 3, 24, 24).half()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        measured = cpu_peak_memory_bytes(model, x)
    finally:
        torch.set_num_threads(threads)
    sim = simulate_peak(model, tuple(x.shape), precision="fp16", block="16+fp16")
    assert sim.peak_bytes == measured["peak_bytes"]
    slow = simulate_peak(model, tuple(x.shape), precision="fp16", block=16)
    assert slow.peak_bytes != measured["peak_bytes"]  # the slow path's rules do not hold here


def test_fp16_onednn_variant_lanes_features_and_law():
    """The variant reads the fp32 lanes of 16-channel blocks and its own fp16 lane; its
    feature equals ``alloc_peak_bytes_b16`` on fp32 rows; the memory law picks it from rows
    that follow it and keeps 16 on rows that follow the slow path."""
    from carb_lib.core.vocab import FP16_ONEDNN_VARIANT
    from carb_lib.dataset.features import static_features
    from carb_lib.ensemble.base_models import fit_base_law
    from carb_lib.families.resnet import sample_configs

    prec = np.array(["fp32", "fp32", "fp16", "fp16"], object)
    batch = np.array([1, 16, 1, 700])
    lane = _alloc.lane_of(prec, batch, block=FP16_ONEDNN_VARIANT)
    assert lane[:2].tolist() == _alloc.lane_of(prec, batch, block=16)[:2].tolist()
    assert [_alloc.LANES[i][:1] + _alloc.LANES[i][3:] for i in lane[2:]] == [("fp16", 16)] * 2
    with pytest.raises(ValueError, match=r"block='16\+fp32' is not modelled"):
        _alloc.variant_parts("16+fp32")
    assert _alloc.host_variant() in _alloc.BLOCKS  # this machine's variant is a modelled one
    rows = sample_configs(400, seed=5)
    f = static_features(rows)
    dnn, b16 = f[ALLOC_FEATURES[FP16_ONEDNN_VARIANT]], f[ALLOC_FEATURES[16]]
    fp32 = (rows["precision"] == "fp32").to_numpy()
    np.testing.assert_array_equal(dnn[fp32], b16[fp32])
    assert (dnn[~fp32] != b16[~fp32]).mean() > 0.9  # another fp16 path: other peaks
    for truth, want in ((dnn, FP16_ONEDNN_VARIANT), (b16, 16)):
        df = rows.assign(peak_mem_mib=truth.to_numpy() / 2**20,
                         **{c: f[c].to_numpy() for c in f.columns if c not in rows})
        law = fit_base_law(df, "peak_mem_mib")
        assert law.alloc_block == want and law.train_error < 1e-9


#: The two Intel Xeons of data/other_cpus: file stem, ``cpu_id`` prefix, and per file the rows,
#: the share of fp16 rows exact to the byte and the worst relative error of the others (the
#: modelled exceptions: an fp16 ``Linear``'s packing scratch, a 1x1 conv's padded channels).
XEONS = {
    "cpu_xeon_emr_2c": ("GenuineIntel family 6 model 207",
                        {"{}/design/rows": (1756, 0.99, 0.06),
                         "{}/design/rows_new_families": (1192, 0.75, 0.006)}),
    # a campaign of 2026-12-01, measured after the variant was written: a blind check of it; a campaign of 2026-12-02's
    # fresh new-family rows of the same CPU (another campaign) are a second one
    "cpu_xeon_gnr_2c": ("GenuineIntel family 6 model 167",
                        {"{}/design/rows": (2770, 0.99, 0.06),
                         "{}/design/rows_new_families": (1773, 0.75, 0.006),
                         "{}/rest/rows_new_families": (1570, 0.75, 0.006)}),
}


@pytest.mark.parametrize("stem", list(XEONS))
def test_the_xeon_rows_follow_the_fp16_onednn_variant(stem):
    """The Intel Xeons' rows (data/other_cpus, a campaign of 2026-12-01): one CPU per file; every fp32
    row is the 16-channel peak; the fp16 rows follow the ``16+fp16`` variant (not the slow
    path), to the byte but for the modelled exceptions' few rows; the memory law learns it."""
    from carb_lib.core.vocab import FP16_ONEDNN_VARIANT
    from carb_lib.dataset.features import static_features
    from carb_lib.dataset.schema import read_dataset
    from carb_lib.ensemble.base_models import fit_base_law

    variant, b16 = ALLOC_FEATURES[FP16_ONEDNN_VARIANT], ALLOC_FEATURES[16]
    cpu, limits = XEONS[stem]
    for name, (n, exact_share, worst) in limits.items():
        df = read_dataset(ROOT / "data" / f"{name.format(stem)}.parquet")
        assert (df["status"] == "ok").all() and len(df) == n
        assert df["cpu_id"].nunique() == 1 and df["cpu_id"].iloc[0].startswith(cpu)
        f = static_features(df)
        measured = df["peak_mem_mib"].to_numpy(dtype=float) * 2**20
        fp16 = (df["precision"] == "fp16").to_numpy()
        err = f[variant].to_numpy() - measured
        assert np.abs(err[~fp16]).max() <= 0.5
        assert np.abs(f[b16].to_numpy()[~fp16] - measured[~fp16]).max() <= 0.5
        assert (np.abs(err[fp16]) <= 0.5).mean() >= exact_share
        assert np.abs(err[fp16] / measured[fp16]).max() <= worst
        assert (np.abs(f[b16].to_numpy()[fp16] - measured[fp16]) <= 0.5).mean() < 0.05
    law = fit_base_law(df.assign(**{c: f[c].to_numpy() for c in f.columns if c not in df}),
                       "peak_mem_mib")
    assert law.alloc_block == FP16_ONEDNN_VARIANT


def test_the_two_xeons_peak_alike_on_every_shared_config():
    """Two generations of one oneDNN path: every config measured on both Xeons has the same
    peak memory to the byte (while their latencies differ by ~1.4x)."""
    from carb_lib.dataset.schema import read_dataset

    for name in ("rows", "rows_new_families"):
        a, b = (read_dataset(ROOT / "data" / s / "design" / f"{name}.parquet") for s in XEONS)
        m = a.merge(b, on="config_id", suffixes=("_a", "_b"))
        assert len(m) >= 1000
        assert (m["peak_mem_mib_a"] == m["peak_mem_mib_b"]).all()
        assert 1.2 < float(np.median(m["latency_ms_a"] / m["latency_ms_b"])) < 1.6


@pytest.mark.parametrize("block,depth", [("basic", 34), ("bottleneck", 200)])
def test_repeated_blocks_are_counted_not_walked(block, depth):
    """The ResNet walk visits blocks 0 and 1 of a stage and counts the rest (they repeat block
    1 exactly): features and peak still equal the built model's, at a depth where a stage has
    36 blocks."""
    from carb_lib.dataset.features import measured_features, static_features
    from carb_lib.families.resnet import STAGE_BLOCKS, _resnet_unit

    assert max(STAGE_BLOCKS[(block, depth)]) > 2
    _resnet_unit.cache_clear()
    fam = get_family("resnet")
    df = pd.DataFrame({"family": "resnet", "block": block, "depth": depth, "width": 0.5,
                       "early_downsample": False, "resolution": 32, "batch": [3, 16],
                       "precision": "fp32", "num_classes": 10})
    feats = static_features(df)
    for i, row in df.iterrows():
        cfg = fam.from_row(row.to_dict())
        meas = measured_features(cfg)
        for col, value in meas.items():
            assert feats.at[i, col] == value, col
        with torch.device("meta"):
            model = fam.build_model(cfg)
        sim = simulate_peak(model, (cfg.batch, 3, 32, 32), precision="fp32")
        assert feats.at[i, ALLOC_FEATURE] == pytest.approx(sim.peak_bytes, rel=0, abs=0.5)


def test_allocator_check_takes_every_cpu_file_by_glob_and_leaves_gpu_files_out(tmp_path):
    """benchmarks/check_allocator.py: CPU files anywhere under data/ are checked, GPU files
    (a ``cuda`` version recorded) and operator files are not."""
    import importlib.util


    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("check_allocator",
                                                  root / "benchmarks" / "check_allocator.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    row = {"status": "ok", "peak_mem_mib": 1.0, "family": "resnet", "precision": "fp32",
           "batch": 1}
    (tmp_path / "new_families").mkdir()
    (tmp_path / "kernels").mkdir()
    pd.DataFrame([dict(row, cuda=None)]).to_parquet(tmp_path / "cpu_a.parquet")
    pd.DataFrame([row]).to_parquet(tmp_path / "new_families" / "cpu_b.parquet")
    pd.DataFrame([dict(row, cuda="13.0")]).to_parquet(tmp_path / "gpu_x.parquet")
    pd.DataFrame([row]).to_parquet(tmp_path / "kernels" / "cpu_a.parquet")
    pd.DataFrame([{"status": "ok"}]).to_parquet(tmp_path / "no_memory.parquet")
    found = [p.relative_to(tmp_path).as_posix() for p in mod.measured_files(tmp_path)]
    assert found == ["cpu_a.parquet", "new_families/cpu_b.parquet"]
    assert mod.is_gpu_file(tmp_path / "gpu_x.parquet")
    assert mod.measured_files(root / "data") and not any(
        "gpu" in p.name for p in mod.measured_files(root / "data"))


@pytest.mark.parametrize("name", ["resnet", "mobilenetv2", "efficientnet"])
def test_fp16_onednn_walk_equals_the_simulation_between_the_probes(name):
    """On the AVX512-FP16 variant the fp16 lanes are exact at batches between the probes too
    (a single lane probed at 1, 16, 128, 1024 was high by up to 6,752 bytes at batches 2 and
    4 on small ResNets, where a dense conv's fixed weights and scratch set the peak)."""
    fam = get_family(name)
    base = _sample(name, 3).reset_index(drop=True)
    if name == "resnet":  # a small network whose fixed bytes set the peak at small batches
        base.loc[0, ["block", "depth", "width", "early_downsample", "resolution"]] = [
            "basic", 8, 0.1, True, 32]
    batches = [1, 2, 3, 4, 5, 8, 15, 17]
    df = base.loc[base.index.repeat(len(batches))].reset_index(drop=True)
    df = df.assign(batch=batches * len(base), precision="fp16")
    got = fam.static_features(df)[ALLOC_FEATURES["16+fp16"]].to_numpy()
    for i, row in df.iterrows():
        cfg = fam.from_row(row.to_dict())
        with torch.device("meta"):
            model = fam.build_model(cfg)
        sim = simulate_peak(model, (cfg.batch, 3, cfg.resolution, cfg.resolution),
                            precision="fp16", block="16+fp16")
        assert got[i] == pytest.approx(sim.peak_bytes, rel=0, abs=0.5), (row.to_dict(), i)
