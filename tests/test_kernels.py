"""Kernel characterization (carb_lib.kernels.law) and the kernel latency law."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from kernel_synthetic import synthetic_bench, two_draws
from typer.testing import CliRunner

from carb_lib.core.vocab import KERNEL_FEATURE
from carb_lib.dataset.features import static_features
from carb_lib.ensemble.base_models import fit_base_law, law_columns
from carb_lib.families import efficientnet, mobilenetv2, resnet, vgg
from carb_lib.kernels import law as kernels

ROOT = Path(__file__).resolve().parents[1]


def _configs() -> pd.DataFrame:
    """A few configs of every family with operators, extremes of the ResNet grid included."""
    frames = [resnet.sample_configs(6, seed=1), mobilenetv2.sample_configs(5, seed=2),
              vgg.sample_configs(5, seed=3), efficientnet.sample_configs(5, seed=4)]
    return pd.concat(frames, ignore_index=True)


def test_sample_kernels_is_seeded_valid_and_capped():
    a = kernels.sample_kernels(300, seed=5)
    assert a.equals(kernels.sample_kernels(300, seed=5))
    assert not a.equals(kernels.sample_kernels(300, seed=6))
    assert list(a.columns) == [*kernels.OP_COLUMNS, "batch", "precision"]
    assert set(a["kind"]) <= set(kernels.KERNEL_KINDS)
    assert {"conv", "dwconv", "linear", "bn", "add"} <= set(a["kind"])
    flops = kernels._flops(a)
    cap = np.where(a["precision"] == "fp16", 3e8, 3e9)
    assert (flops <= cap).all() and (a["h_out"] >= 1).all()
    dw = a[a["kind"] == "dwconv"]
    assert (dw["groups"] == dw["cin"]).all() and (dw["cin"] == dw["cout"]).all()
    with pytest.raises(ValueError, match="n must be >= 1"):
        kernels.sample_kernels(0)


def test_network_ops_count_every_layer_the_static_features_count():
    df = _configs()
    ops, arch_id = kernels.network_ops(df)
    assert len(arch_id) == len(df)
    counts = ops.groupby(["arch_id", "kind"]).size().unstack(fill_value=0).reindex(arch_id)
    counts = counts.reset_index(drop=True)
    sf = static_features(df)

    def n(*kinds):
        return sum(counts[k] if k in counts else 0 for k in kinds).to_numpy()

    np.testing.assert_array_equal(n("conv", "dwconv"), sf["n_conv"])
    np.testing.assert_array_equal(n("dwconv"), sf["n_dwconv"])
    np.testing.assert_array_equal(n("bn"), sf["n_bn"])
    np.testing.assert_array_equal(n("relu", "relu6", "silu", "sigmoid"), sf["n_act"])
    np.testing.assert_array_equal(n("linear"), sf["n_fc"])
    np.testing.assert_array_equal(n("add"), sf["n_add"])
    np.testing.assert_array_equal(n("maxpool", "avgpool"), sf["n_pool"])
    np.testing.assert_array_equal(n("mul"), sf["n_se"])
    # the convolutions' FLOPs at batch 1 add up to the network's (FlopCounterMode's) FLOPs
    conv = ops[ops["kind"].isin(["conv", "dwconv", "linear"])].assign(batch=1)
    per_arch = pd.Series(kernels._flops(conv), index=conv.index).groupby(conv["arch_id"]).sum()
    fl1 = static_features(df.assign(batch=1))["flops"].to_numpy(dtype=float)
    np.testing.assert_allclose(per_arch.reindex(arch_id).to_numpy(), fl1, rtol=1e-9)


def test_bench_kernels_times_each_operator_and_restores_threads():
    import torch

    ops = pd.DataFrame([
        dict(kind="conv", cin=8, cout=8, k=3, stride=1, pad=1, groups=1, h_in=8, h_out=8,
             batch=2, precision="fp32"),
        dict(kind="dwconv", cin=8, cout=8, k=3, stride=2, pad=1, groups=8, h_in=8, h_out=4,
             batch=1, precision="fp16"),
        dict(kind="linear", cin=16, cout=4, k=1, stride=1, pad=0, groups=1, h_in=1, h_out=1,
             batch=3, precision="fp32"),
        dict(kind="mul", cin=8, cout=8, k=1, stride=1, pad=0, groups=1, h_in=4, h_out=4,
             batch=2, precision="fp32"),
        dict(kind="maxpool", cin=8, cout=8, k=3, stride=2, pad=1, groups=1, h_in=8, h_out=4,
             batch=1, precision="fp32"),
    ])  # fmt: skip
    before = torch.get_num_threads()
    seen = []
    out = kernels.bench_kernels(ops, window_s=0.001, n_windows=2, platform="test_cpu",
                                progress=False, on_chunk=seen.append, chunk=2)
    assert torch.get_num_threads() == before
    assert list(out.columns[: len(kernels.BENCH_COLUMNS)]) == list(kernels.BENCH_COLUMNS)
    assert (out["time_ms"] > 0).all() and (out["n_iter"] >= 1).all()
    assert (out["platform"] == "test_cpu").all() and (out["threads"] == 1).all()
    from carb_lib.families._alloc import host_variant

    assert (out["alloc_variant"] == str(host_variant())).all()
    assert (out["faults_per_call"] >= 0).all()  # small operators: buffers under 32 MiB
    assert [len(c) for c in seen] == [2, 4]  # the rows so far, every 2 operators
    with pytest.raises(ValueError, match="row 0: kind='pool'"):
        kernels.bench_kernels(ops.assign(kind="pool"), progress=False)


def test_an_interrupted_bench_hands_over_every_measured_row(monkeypatch):
    ops = kernels.sample_kernels(5, seed=3)
    calls = []

    def fake(call, window_s, n_windows):
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append(1)
        return 1e-3, 0.0, 1

    monkeypatch.setattr(kernels, "_module", lambda r, dtype: (lambda: None))
    monkeypatch.setattr(kernels, "_time_call", fake)
    seen = []
    with pytest.raises(KeyboardInterrupt):
        kernels.bench_kernels(ops, platform="t", progress=False, on_chunk=seen.append, chunk=2)
    assert [len(c) for c in seen] == [2, 3]  # the chunk of 2, then all 3 at the interrupt
    assert seen[-1]["time_ms"].tolist() == [1.0, 1.0, 1.0]


def test_kernel_model_learns_a_known_law_and_sums_it_per_network():
    bench = synthetic_bench(600)
    model = kernels.KernelModel(n_estimators=300).fit(bench)
    test = synthetic_bench(200, seed=9)
    pred = model.predict(test)
    err = np.abs(pred / test["time_ms"].to_numpy() - 1)
    assert np.median(err) < 0.10
    assert model.n_ops_ == 600 and model.predict(test.iloc[:0]).shape == (0,)

    df = _configs()
    out = kernels.with_kernel_column(df, model)
    assert KERNEL_FEATURE not in df.columns and (out[KERNEL_FEATURE] > 0).all()
    # the column is the sum of the model's predictions over the row's operators
    ops, arch_id = kernels.network_ops(df.iloc[[0]])
    expect = model.predict(ops.assign(batch=df["batch"].iloc[0],
                                      precision=df["precision"].iloc[0])).sum()
    assert out[KERNEL_FEATURE].iloc[0] == pytest.approx(expect)
    # two threads give the same numbers; a cached second listing gives the same operators
    np.testing.assert_array_equal(
        kernels.with_kernel_column(df, model, n_jobs=2)[KERNEL_FEATURE], out[KERNEL_FEATURE])
    again, _ = kernels.network_ops(df.iloc[[0]])
    pd.testing.assert_frame_equal(again, ops)
    assert ops.dtypes.drop("kind").eq("int64").all()
    # more images cost more kernel time
    big = kernels.with_kernel_column(df.assign(batch=64), model)[KERNEL_FEATURE]
    one = kernels.with_kernel_column(df.assign(batch=1), model)[KERNEL_FEATURE]
    assert (big.to_numpy() > one.to_numpy()).all()
    # a platform's operator timings are not another platform's
    timed = kernels.KernelModel(n_estimators=50).fit(bench.assign(platform="cpu_a"))
    assert timed.platform_ == "cpu_a"
    kernels.with_kernel_column(df.assign(platform="cpu_a"), timed)
    with pytest.raises(ValueError, match=r"platform 'cpu_a'; rows of \['gpu_b'\] need"):
        kernels.with_kernel_column(df.assign(platform="gpu_b"), timed)


def test_kernel_model_refuses_too_few_operators_and_bad_parameters():
    from sklearn.utils._param_validation import InvalidParameterError

    with pytest.raises(ValueError, match=">= 20 timed operators, got 5"):
        kernels.KernelModel().fit(synthetic_bench(5))
    with pytest.raises(TypeError):
        kernels.KernelModel(100, 0.1)  # everything after n_estimators is keyword-only
    for name, bad in {"n_estimators": 0, "learning_rate": 0.0, "num_leaves": 1,
                      "draws": "mixed"}.items():
        with pytest.raises(InvalidParameterError, match=f"'{name}' parameter"):
            kernels.KernelModel(**{name: bad}).fit(synthetic_bench(30))


def test_fit_kernel_model_fits_a_clone_of_its_template_or_the_default():
    bench = synthetic_bench(60)
    template = kernels.KernelModel(20, num_leaves=7, random_state=3)
    fitted = kernels.fit_kernel_model(bench, template, random_state=9)
    assert fitted is not template and not hasattr(template, "model_")  # the template unfitted
    assert fitted.get_params() == template.get_params()  # random_state is the template's
    default = kernels.fit_kernel_model(bench, random_state=5)
    assert default.get_params() == kernels.KernelModel(random_state=5).get_params()
    assert default.n_ops_ == 60


def test_aligned_draws_recover_each_hosts_speed_and_predict_at_one_reference():
    bench = two_draws(1.5)
    aligned = kernels.KernelModel(n_estimators=200).fit(bench)  # draws="aligned": the default
    speed = aligned.draw_speed_
    assert speed[1] / speed[0] == pytest.approx(1.5, rel=0.03)
    assert np.log(speed[0]) + np.log(speed[1]) == pytest.approx(0, abs=1e-9)  # 600 ops each
    pooled = kernels.KernelModel(n_estimators=200, draws="pooled").fit(bench)
    assert pooled.draw_speed_ == {0: 1.0, 1: 1.0}
    # at a draw's speed the aligned model reproduces both draws; the pooled one splits the
    # difference (less than half of it here: its trees partly memorise which shapes were slow)
    y = bench["time_ms"].to_numpy()
    ape_aligned = np.abs(aligned.predict(bench, at_draw_speed=True) / y - 1)
    ape_pooled = np.abs(pooled.predict(bench, at_draw_speed=True) / y - 1)
    assert np.median(ape_aligned) < 0.03 and np.median(ape_pooled) > 3 * np.median(ape_aligned)
    np.testing.assert_allclose(aligned.predict(bench, at_draw_speed=True)[600:],
                               aligned.predict(bench)[600:] * speed[1], rtol=1e-12)
    # an operator of a draw the model did not see is predicted at the reference speed
    np.testing.assert_array_equal(aligned.predict(bench.assign(sample_seed=7), at_draw_speed=True),
                                  aligned.predict(bench))
    # the held-out check scores each operator at its draw's speed
    check = {d: kernels.holdout_check(bench, draws=d, n_estimators=200).metrics.mape_pct
             for d in ("aligned", "pooled")}
    assert check["aligned"] < check["pooled"] / 2
    # one draw, or none recorded: nothing to align, the pooled model exactly
    one = bench[bench["sample_seed"] == 0]
    assert kernels.KernelModel(n_estimators=50).fit(one).draw_speed_ == {0: 1.0}
    bare = bench.drop(columns="sample_seed")
    a = kernels.KernelModel(n_estimators=50).fit(bare)
    assert a.draw_speed_ == {}
    np.testing.assert_array_equal(
        a.predict(bare), kernels.KernelModel(n_estimators=50, draws="pooled").fit(bare)
        .predict(bare))


def test_read_bench_one_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such kernel benchmark"):
        kernels.read_bench(tmp_path / "nope.parquet")
    bench = synthetic_bench(30)
    p = tmp_path / "b.parquet"
    bench.drop(columns=["time_ms"]).to_parquet(p)
    with pytest.raises(ValueError, match=r"column\(s\) \['time_ms'\] missing"):
        kernels.read_bench(p)
    bad = bench.copy()
    bad.loc[3, "time_ms"] = -1.0
    bad.to_parquet(p)
    with pytest.raises(ValueError, match="row 3: time_ms=-1.0 must be > 0"):
        kernels.read_bench(p)
    bad = bench.copy()
    bad.loc[4, "precision"] = "int8"
    bad.to_parquet(p)
    with pytest.raises(ValueError, match="row 4: precision='int8'"):
        kernels.read_bench(p)
    bench.to_parquet(p)
    assert len(kernels.read_bench(p)) == 30


def test_read_bench_joins_files_of_one_benchmark_only(tmp_path):
    """Several files read as one benchmark (a later draw kept in its own file): rows of all,
    in order; a file of another CPU, platform or PyTorch, or a seed held twice, is one clear
    error naming the file."""
    prov = dict(platform="p", threads=1, torch_version="2.13.0", cpu_id="zen3 | AVX2")
    a = synthetic_bench(30).assign(sample_seed=0, **prov)
    b = synthetic_bench(20, seed=5).assign(sample_seed=3, **prov)
    pa, pb, pc = (tmp_path / f"{n}.parquet" for n in "abc")
    a.to_parquet(pa)
    b.to_parquet(pb)
    both = kernels.read_bench([pa, pb])
    assert len(both) == 50 and both["sample_seed"].tolist() == [0] * 30 + [3] * 20
    pd.testing.assert_frame_equal(kernels.read_bench([pa]), kernels.read_bench(pa))
    with pytest.raises(ValueError, match="no kernel benchmark file given"):
        kernels.read_bench([])
    for change, msg in (({"cpu_id": "zen4 | AVX512"},
                         r"cpu_id \['zen4 \| AVX512'\] differs from \['zen3 \| AVX2'\]"),
                        ({"platform": "q"}, r"platform \['q'\] differs from \['p'\]"),
                        ({"threads": 2}, r"threads \['2'\] differs from \['1'\]"),
                        ({"torch_version": "2.12.0"}, r"torch_version \['2.12.0'\] differs"),
                        ({"sample_seed": 0.0}, r"sample seed\(s\) \[0\] also in")):
        b.assign(**change).to_parquet(pc)
        with pytest.raises(ValueError, match=rf"c\.parquet: {msg}"):
            kernels.read_bench([pa, pc])
    b.drop(columns=["cpu_id"]).to_parquet(pc)  # a draw timed before cpu_id was recorded
    assert len(kernels.read_bench([pa, pc])) == 50
    b.assign(time_ms=-1.0).to_parquet(pc)
    with pytest.raises(ValueError, match=r"c\.parquet: row 0: time_ms=-1.0 must be > 0"):
        kernels.read_bench([pa, pc])


def test_kernel_law_recovers_its_constants_and_needs_its_column():
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({
        "batch": rng.choice([1, 4, 16, 64], n), "precision": rng.choice(["fp32", "fp16"], n),
        KERNEL_FEATURE: rng.uniform(1, 100, n), "param_bytes": rng.uniform(1e6, 1e8, n),
        "activation_bytes": rng.uniform(1e6, 1e8, n), "memory_bound_bytes": rng.uniform(1e5, 1e7, n),
        "n_conv": 20, "n_bn": 20, "n_act": 20, "n_fc": 1,
    })  # fmt: skip
    df["latency_ms"] = 0.5 + np.where(df["precision"] == "fp16", 2.0, 1.5) * df[KERNEL_FEATURE]
    law = fit_base_law(df, "latency_ms", kind="kernel")
    i = law_columns("kernel").index("kernel_ms")
    assert law.coef["fp32"][i] == pytest.approx(1.5, rel=1e-3)
    assert law.coef["fp16"][i] == pytest.approx(2.0, rel=1e-3)
    np.testing.assert_allclose(law.predict(df), df["latency_ms"], rtol=1e-3)
    c = law.constants()
    assert set(c.loc[c["term"] == "kernel_ms", "unit"]) == {"ms per ms"}
    with pytest.raises(ValueError, match="the kernel law needs column 'kernel_ms'"):
        fit_base_law(df.drop(columns=[KERNEL_FEATURE]), "latency_ms", kind="kernel")


def test_cli_kernels_refuses_an_existing_or_non_parquet_out(tmp_path):
    from carb_lib.app.cli import app

    runner = CliRunner()
    p = tmp_path / "k.parquet"
    p.write_bytes(b"")
    r = runner.invoke(app, ["kernels", "--n", "2", "--out", str(p)])
    assert r.exit_code == 1 and "exists; give a new file" in r.output
    r = runner.invoke(app, ["kernels", "--n", "2", "--out", str(tmp_path / "k.csv")])
    assert r.exit_code == 1 and "must end in .parquet" in r.output
    out = tmp_path / "new.parquet"
    r = runner.invoke(app, ["kernels", "--n", "3", "--out", str(out), "--no-progress",
                            "--platform", "test_cpu", "--no-anchors", "--no-cache-probe"])
    assert r.exit_code == 0, r.output
    assert len(kernels.read_bench(out)) == 3


def test_analytic_operator_lists_equal_the_recorded_ones():
    """Every family's analytic pass lists exactly the operators recorded on its built model
    (as a multiset: the sum of kernel times does not depend on their order), extremes of each
    family's space included."""
    from carb_lib.families import get_family
    from carb_lib.families._config import check_sample

    frames = [resnet.sample_configs(12, seed=7)]
    for mod in (mobilenetv2, vgg, efficientnet):
        frames.append(check_sample(mod.FAMILY, mod.SPACE, 6, seed=1).head(14))
    df = pd.concat(frames, ignore_index=True)
    # the lists are per image at batch 1: one check per architecture and resolution
    df = df.drop_duplicates([c for c in df.columns
                             if c not in ("config_id", "batch", "precision")])
    for _, r in df.iterrows():
        row = r.to_dict()
        fam = get_family(row["family"])
        analytic = fam.op_list(row)
        assert analytic is not None
        assert sorted(analytic) == sorted(kernels.recorded_ops(fam, row)), row["config_id"]


def test_vectorised_onednn_rule_is_the_scalar_rule():
    from itertools import product

    from carb_lib.families._alloc import uses_onednn, uses_onednn_array

    grid = list(product(["fp32", "fp16"], [1, 2, 16], [3, 8, 64], [1, 3, 5], [1, 2], [1, 8],
                        [1, 49, 3136]))
    want = [uses_onednn(p, n, c, (k, k), (s, s), g, hw) for p, n, c, k, s, g, hw in grid]
    cols = list(zip(*grid, strict=True))
    got = uses_onednn_array(np.array(cols[0]), *(np.array(c) for c in cols[1:]))
    assert got.tolist() == want and any(want) and not all(want)


def test_sampler_v2_reaches_one_pixel_and_wide_convolutions_v1_stays_reproducible():
    v2 = kernels.sample_kernels(3000, seed=1, version=2)
    conv = v2[v2["kind"] == "conv"]
    # padded 3x3 kernels at 1 px (the last stage of a wide ResNet at 32 px) are drawn ...
    assert ((conv["k"] == 3) & (conv["h_in"] == 1)).sum() >= 20
    # ... and wide convolutions (>= 512 channels in and out) a visible share, about 4x
    # the share of independent draws (the FLOP cap redraws many of them)
    wide = (conv["cin"] >= 512) & (conv["cout"] >= 512)
    assert wide.mean() > 0.06
    assert (v2["h_out"] >= 1).all()
    v1 = kernels.sample_kernels(3000, seed=1, version=1)
    c1 = v1[v1["kind"].isin(["conv", "dwconv"])]
    assert not ((c1["k"] >= 3) & (c1["h_in"] == 1)).any()
    d1 = c1[c1["kind"] == "conv"]
    assert ((d1["cin"] >= 512) & (d1["cout"] >= 512)).mean() < wide.mean() / 3
    with pytest.raises(ValueError, match="version must be 1, 2, 3 or 4, got 5"):
        kernels.sample_kernels(5, version=5)


def test_sampler_v3_draws_weights_past_the_cache_and_vgg_pools_v2_stays_reproducible():
    v3 = kernels.sample_kernels(3000, seed=2, version=3)
    _, _, w = kernels._byte_parts(v3)
    conv = (v3["kind"] == "conv").to_numpy()
    small = (v3["h_in"] <= 8).to_numpy()
    v2 = kernels.sample_kernels(3000, seed=2, version=2)
    _, _, w2 = kernels._byte_parts(v2)
    conv2, small2 = (v2["kind"] == "conv").to_numpy(), (v2["h_in"] <= 8).to_numpy()
    # weights past the 32 MB L3 at small feature maps: at least 3x v2's count
    past = int((conv & small & (w > 32e6)).sum())
    assert past >= 40 and past >= 3 * int((conv2 & small2 & (w2 > 32e6)).sum())
    # VGG's 2x2 stride-2 pool without padding, and ResNet's padded 3x3, both drawn
    pool = v3[v3["kind"] == "maxpool"]
    two = pool[pool["k"] == 2]
    assert len(two) >= 20 and (two["pad"] == 0).all() and (two["stride"] == 2).all()
    assert (two["h_out"] == two["h_in"] // 2).all()
    three = pool[pool["k"] == 3]
    assert len(three) >= 20 and (three["pad"] == 1).all()
    assert not (v2[v2["kind"] == "maxpool"]["k"] == 2).any()
    assert (v3["h_out"] >= 1).all()
    # the committed Zen 4 benchmark is v3's seed-0 draw, operator for operator
    zen4 = kernels.read_bench(ROOT / "data" / "cpu_epyc_zen4_2c" / "design" / "kernels.parquet")
    cols = [*kernels.OP_COLUMNS, "batch", "precision"]
    drawn = kernels.sample_kernels(len(zen4), seed=0, version=3)
    assert set(zen4["sampler"]) == {3} and set(zen4["sample_seed"]) == {0}
    pd.testing.assert_frame_equal(zen4[cols].astype(str).reset_index(drop=True),
                                  drawn[cols].astype(str))


def test_sampler_v4_draws_the_depthwise_and_se_regime_v3_stays_reproducible():
    v4 = kernels.sample_kernels(3000, seed=3)
    assert kernels.SAMPLER_VERSION == 4
    assert v4.equals(kernels.sample_kernels(3000, seed=3, version=4))
    v3 = kernels.sample_kernels(3000, seed=3, version=3)
    dw, dw3 = v4[v4["kind"] == "dwconv"], v3[v3["kind"] == "dwconv"]
    # depthwise kernels overhanging their map (most taps read padding) at batches >= 16:
    # the regime a campaign of 2026-12-01 found up to 80x mispredicted; v3 drew few
    over = (dw["h_in"] < dw["k"]) & (dw["batch"] >= 16)
    over3 = (dw3["h_in"] < dw3["k"]) & (dw3["batch"] >= 16)
    assert over.sum() >= 250 and over.sum() >= 5 * over3.sum()
    assert set(dw.loc[over & (dw["k"] == 3), "h_in"]) <= {1, 2}
    assert (dw["groups"] == dw["cin"]).all() and (dw["cin"] == dw["cout"]).all()
    # the SE's 1x1 convolutions on the squeezed 1x1 map, reducing and expanding
    se = v4[(v4["kind"] == "conv") & (v4["k"] == 1) & (v4["h_in"] == 1) & (v4["batch"] >= 16)]
    assert (se["cin"] > se["cout"]).sum() >= 80 and (se["cin"] < se["cout"]).sum() >= 80
    # the gate (sigmoid) on the squeezed map; every operator inside the caps, valid
    assert len(v4[(v4["kind"] == "sigmoid") & (v4["h_in"] == 1)]) >= 60
    assert (v4["h_out"] >= 1).all() and (v4["h_out"] <= v4["h_in"]).all()
    assert (kernels._flops(v4) <= 3e9).all()
    # the committed v3 draw of the Zen 3 benchmark (seed 2) is still reproduced exactly
    zen3 = kernels.read_bench(ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "kernels.parquet")
    cols = [*kernels.OP_COLUMNS, "batch", "precision"]
    part = zen3[(zen3["sampler"] == 3) & (zen3["sample_seed"] == 2)]
    pd.testing.assert_frame_equal(part[cols].astype(str).reset_index(drop=True),
                                  kernels.sample_kernels(len(part), seed=2, version=3)[cols]
                                  .astype(str))


def test_cli_kernels_append_adds_a_new_seed_and_refuses_a_mismatch(tmp_path):
    from carb_lib.app.cli import app

    runner = CliRunner()
    out = tmp_path / "b.parquet"
    base = ["kernels", "--out", str(out), "--no-progress", "--platform", "test_cpu",
            "--no-anchors", "--no-cache-probe"]
    assert runner.invoke(app, [*base, "--n", "2"]).exit_code == 0
    r = runner.invoke(app, [*base, "--n", "3", "--seed", "1", "--append"])
    assert r.exit_code == 0, r.output
    assert "3 operators (seed 1, sampler v4), 5 in all" in r.output
    b = kernels.read_bench(out)
    assert b["sample_seed"].tolist() == [0, 0, 1, 1, 1] and set(b["sampler"]) == {4}
    before = out.read_bytes()
    for args, msg in [(["--seed", "1", "--append"], "already holds the operators of --seed 1"),
                      (["--seed", "2", "--append", "--threads", "2"], "holds threads ['1']"),
                      (["--seed", "2"], "exists; give a new file")]:
        r = runner.invoke(app, [*base, "--n", "2", *args])
        assert r.exit_code == 1 and msg in r.output, r.output
    r = runner.invoke(app, ["kernels", "--out", str(out), "--n", "2", "--seed", "2",
                            "--append", "--platform", "other_cpu", "--no-progress",
                            "--no-anchors", "--no-cache-probe"])
    assert r.exit_code == 1 and "holds platform ['test_cpu']; this run's is 'other_cpu'" in r.output
    assert out.read_bytes() == before  # nothing written by a refused run
    r = runner.invoke(app, ["kernels", "--out", str(tmp_path / "none.parquet"), "--n", "2",
                            "--append", "--no-progress"])
    assert r.exit_code == 1 and "does not exist" in r.output
    r = runner.invoke(app, [*base, "--n", "2", "--seed", "3", "--append", "--sampler", "9"])
    assert r.exit_code == 1 and "--sampler must be 1-4, got 9" in r.output
    assert out.read_bytes() == before
    r = runner.invoke(app, [*base, "--n", "2", "--seed", "3", "--append", "--sampler", "1"])
    assert r.exit_code == 0 and "2 operators (seed 3, sampler v1), 7 in all" in r.output
    assert kernels.read_bench(out)["sampler"].tolist() == [4] * 5 + [1] * 2


def _kernel_rows():
    """SYNTHETIC ResNet rows whose latency follows their summed synthetic operator times."""
    from carb_lib.dataset.synthetic import make_synthetic_dataset

    df = make_synthetic_dataset(216, seed=3, platform="synthetic_cpu", with_energy=False,
                                with_telemetry=False, error_rate=0.0)
    model = kernels.KernelModel(n_estimators=200).fit(synthetic_bench(600))
    k = kernels.with_kernel_column(df, model)[KERNEL_FEATURE].to_numpy()
    return df.assign(latency_ms=0.3 + 1.2 * k), model


def test_estimator_learns_the_kernel_model_from_a_bench_and_predicts_alone(tmp_path):
    from carb_lib.ensemble import CARBRegressor, load_model, preset, save_model

    df, _ = _kernel_rows()
    bench = synthetic_bench(600)
    params = preset("test", targets=("peak_mem_mib", "latency_ms"), latency_law="kernel")
    with_bench = CARBRegressor(**params, kernel_bench=bench).fit(df)
    assert with_bench.kernel_model_.n_ops_ == 600
    # the same as a model fitted and asked with the column added beforehand
    col = kernels.with_kernel_column(df, kernels.KernelModel().fit(bench))
    with_column = CARBRegressor(**params).fit(col)
    a, b = with_bench.predict(df), with_column.predict(col)
    np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=1e-9)
    law = with_bench.base_constants().query("term == 'kernel_ms' and precision == 'fp32'")
    assert law["value"].iloc[0] == pytest.approx(1.2, rel=0.02)
    with pytest.raises(ValueError, match="the kernel law needs column 'kernel_ms'"):
        with_column.predict(df)  # without a bench the column is the caller's
    path = save_model(with_bench, tmp_path / "m.joblib")
    again = load_model(path)
    np.testing.assert_allclose(again.predict(df).to_numpy(), a.to_numpy())
    assert "<600 timed operators>" in (tmp_path / "m.joblib.json").read_text()
    with pytest.raises(ValueError, match="kernel_bench is read by latency_law='kernel' only"):
        CARBRegressor(**{**params, "latency_law": "roofline"}, kernel_bench=bench).fit(df)


def test_cli_fit_kernel_law_needs_its_bench_and_predicts_new_configs(tmp_path):
    from carb_lib.app.cli import app

    df, _ = _kernel_rows()
    data, bench = tmp_path / "d.parquet", tmp_path / "k.parquet"
    df.drop(columns="config_id").to_parquet(data)  # the SYNTHETIC ids are not the family's
    synthetic_bench(600).assign(platform="synthetic_cpu").to_parquet(bench)
    runner = CliRunner()
    fit = ["fit", "--data", str(data), "--out", str(tmp_path / "m.joblib"), "--preset", "test"]
    r = runner.invoke(app, [*fit, "--latency-law", "kernel"])
    assert r.exit_code == 1 and "--latency-law kernel and --kernel-bench FILE go together" in r.output
    r = runner.invoke(app, [*fit, "--latency-law", "kernel", "--kernel-bench", str(bench)])
    assert r.exit_code == 0 and "latency law kernel" in r.output, r.output
    configs = tmp_path / "c.csv"
    resnet.sample_configs(4, seed=11).to_csv(configs, index=False)
    r = runner.invoke(app, ["predict", "--model", str(tmp_path / "m.joblib"), "--configs",
                            str(configs), "--out", str(tmp_path / "p.csv")])
    assert r.exit_code == 0, r.output
    p = pd.read_csv(tmp_path / "p.csv")
    assert len(p) == 4 and (p["latency_ms_pred"] > 0).all()
    assert (p["latency_ms_pred_lo"] <= p["latency_ms_pred"]).all()
    # screening with that model: kernel_ms is the model's own business
    cands = tmp_path / "cands.csv"
    resnet.sample_configs(40, seed=12).to_csv(cands, index=False)
    r = runner.invoke(app, ["screen", "--model", str(tmp_path / "m.joblib"), "--candidates",
                            str(cands), "--objective", "latency_ms", "--no-quality", "--k", "3",
                            "--out", str(tmp_path / "short.csv")])
    assert r.exit_code == 0, r.output
    short = pd.read_csv(tmp_path / "short.csv")
    assert 1 <= len(short) <= 3 and KERNEL_FEATURE not in short.columns


def test_kernel_law_comparison_runs_every_law_on_every_split_and_refuses_bad_input():
    """``kernel_law_comparison`` (every latency law on every split, as notebook 06 runs it):
    on SYNTHETIC rows whose latency is their summed operator times, the kernel law extrapolates
    to held-out small batches better than the roofline law; the strict variant never sees an
    operator at a held-out batch."""
    from carb_lib.evaluation import kernel_law_comparison, prepare_dataset

    df, _ = _kernel_rows()
    df = prepare_dataset(df)
    bench = synthetic_bench(600).assign(platform="synthetic_cpu")
    res = kernel_law_comparison(df, bench, splits=("random", "batch_small"), seeds=2,
                                preset="test")
    sc = res.scores
    assert (res.n_rows, res.n_operators, res.preset) == (len(df), 600, "test")
    assert sc.groupby("split")["law"].apply(lambda s: sorted(set(s))).to_dict() == {
        "batch_small": ["kernel", "kernel_strict", "roofline"], "random": ["kernel", "roofline"]}
    assert (sc.groupby(["split", "law"]).size() == 2).all()
    small = sc[sc["split"] == "batch_small"]
    assert (small["n_test"] == int((df["batch"] <= 8).sum())).all()
    assert (small["n_train"] + small["n_test"] == len(df)).all()
    assert set(small["train_batches"]) == {f"{df.loc[df['batch'] > 8, 'batch'].min()}-256"}
    mean = small.groupby("law")["r2"].mean()
    assert mean["kernel"] > 0.999 and mean["kernel"] > mean["roofline"]
    summ = res.summary()
    assert {"r2", "r2_sd", "mape_pct_sd", "n_test"} <= set(summ.columns) and len(summ) == 5
    assert res.table().loc[("batch_small", "kernel"), "r2"].count(" ± ") == 1
    # the kernel model's parameters are the caller's (a template, cloned for every fit)
    template = kernels.KernelModel(n_estimators=50, draws="pooled")
    few = kernel_law_comparison(df, bench, splits=("random",), seeds=1, preset="test",
                                kernel_model=template)
    assert not hasattr(template, "model_") and len(few.scores) == 2
    assert (few.scores["r2"] != sc[sc["split"] == "random"]["r2"].iloc[:2].to_numpy()).any()
    with pytest.raises(ValueError, match=r"unknown split\(s\) \['depth'\]"):
        kernel_law_comparison(df, bench, splits=("depth",))
    with pytest.raises(ValueError, match="must be one platform"):
        kernel_law_comparison(df, bench.assign(platform="other"), splits=("random",))


def test_kernel_time_by_operator_group_sums_to_the_column():
    """``by_group=True``: where a network's operator time goes; the groups sum to kernel_ms,
    ResNet has no depthwise time, MobileNetV2 and EfficientNet do."""
    model = kernels.KernelModel(n_estimators=100).fit(synthetic_bench(400))
    df = _configs()
    out = kernels.with_kernel_column(df, model, by_group=True)
    groups = [f"{KERNEL_FEATURE}_{g}" for g in kernels.KERNEL_GROUPS]
    np.testing.assert_allclose(out[groups].sum(axis=1), out[KERNEL_FEATURE], rtol=1e-12)
    np.testing.assert_array_equal(kernels.with_kernel_column(df, model)[KERNEL_FEATURE],
                                  out[KERNEL_FEATURE])
    dw = out.groupby("family")[f"{KERNEL_FEATURE}_dwconv"].min()
    assert dw["resnet"] == 0 and dw["vgg"] == 0
    assert dw["mobilenetv2"] > 0 and dw["efficientnet"] > 0
    assert (out[f"{KERNEL_FEATURE}_memory"] > 0).all()


def test_taps_feature_is_read_only_by_the_taps_model():
    """``log_tap_share``: 0 for a kernel that fits its map, log(1/25) for a 5x5 kernel on a
    1x1 map; ``features="all"`` (the default) does not read it, ``"taps"`` does."""
    ops = pd.DataFrame([
        {"kind": "dwconv", "cin": 64, "cout": 64, "k": 5, "stride": 1, "pad": 2, "groups": 64,
         "h_in": 1, "h_out": 1, "batch": 8, "precision": "fp32"},
        {"kind": "dwconv", "cin": 64, "cout": 64, "k": 5, "stride": 1, "pad": 2, "groups": 64,
         "h_in": 2, "h_out": 2, "batch": 8, "precision": "fp32"},
        {"kind": "conv", "cin": 16, "cout": 32, "k": 3, "stride": 1, "pad": 1, "groups": 1,
         "h_in": 14, "h_out": 14, "batch": 8, "precision": "fp32"}])
    taps = kernels.kernel_features(ops)[kernels.TAPS_FEATURE].to_numpy()
    np.testing.assert_allclose(taps, [np.log(1 / 25), np.log(4 / 25), 0.0])
    bench = synthetic_bench(300)
    assert kernels.TAPS_FEATURE not in kernels.KernelModel(n_estimators=20).fit(bench).features_
    assert kernels.TAPS_FEATURE in kernels.KernelModel(n_estimators=20,
                                                       features="taps").fit(bench).features_
    with pytest.raises(ValueError, match="features"):
        kernels.KernelModel(features="tap").fit(bench)
