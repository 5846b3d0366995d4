"""The zoo evaluation (carb_lib.evaluation.zoo): folds, scores, the re-measurement noise,
and one small end-to-end run on the shipped zoo rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from carb_lib.evaluation import zoo as ez

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "data" / "cpu_epyc_zen5_2c" / "zoo" / "rows.parquet"
DESIGN = ROOT / "data" / "cpu_epyc_zen5_2c" / "design" / "rows.parquet"


def test_exact_share_is_half_a_byte():
    mib = ez.BYTE_MIB
    assert ez.exact_share([10.0, 10.0, 10.0], [10.0, 10.0 + 0.4 * mib, 10.0 + 0.6 * mib]) == \
        pytest.approx(2 / 3)


def test_network_folds_keep_a_network_in_one_fold_and_fill_every_fold():
    nets = pd.Series([f"n{i % 7}" for i in range(40)])
    folds = ez.network_folds(nets, 3, seed=1)
    assert set(folds) == {0, 1, 2}
    assert all(len(set(folds[nets.to_numpy() == n])) == 1 for n in nets.unique())
    assert (folds == ez.network_folds(nets, 3, seed=1)).all()  # seeded
    with pytest.raises(ValueError, match="n_folds must be in 2..7"):
        ez.network_folds(nets, 8, seed=0)


def _pred(method, target, measured, predicted, batch):
    n = len(measured)
    return pd.DataFrame({"config_id": [f"c{i}" for i in range(n)], "network": "x", "kind": "k",
                         "resolution": 224, "batch": batch, "precision": "fp32",
                         "method": method, "target": target, "measured": measured,
                         "predicted": predicted})


def test_zoo_scores_median_error_within_and_rank_within_each_batch():
    m = np.array([10.0, 20.0, 30.0, 40.0])
    lat = _pred("leave_network_out", "latency_ms", m, m * [1.05, 1.2, 0.7, 1.0], [1, 1, 1, 1])
    mem = _pred("leave_network_out", "peak_mem_mib", m, m, [1, 1, 1, 1])
    s = ez.zoo_scores(pd.concat([lat, mem]), by_kind=False).set_index("target")
    assert s.loc["latency_ms", "median_ape_pct"] == pytest.approx(12.5)  # of 5, 20, 30, 0
    assert s.loc["latency_ms", "within_10pct"] == pytest.approx(0.5)
    assert np.isnan(s.loc["latency_ms", "exact_share"])
    assert s.loc["peak_mem_mib", "exact_share"] == 1.0
    # predicted 10.5, 24, 21, 40: one swap within batch 1
    assert s.loc["latency_ms", "spearman_within_batch"] == pytest.approx(0.8)


def test_the_remeasurement_noise_scores_the_second_measurement_against_the_stored_one():
    audit = pd.DataFrame({"config_id": ["a", "b"], "module": ["torchvision.models:resnet18"] * 2,
                          "resolution": 224, "batch": [1, 16], "precision": "fp32",
                          "latency_ms": [10.0, 100.0], "latency_ms_new": [11.0, 95.0],
                          "peak_mem_mib": [5.0, 50.0], "peak_mem_mib_new": [5.0, 50.0]})
    c = ez.zoo_remeasurement_noise(audit).set_index("target")
    assert c.loc["latency_ms", "median_ape_pct"] == pytest.approx(7.5)  # of the stored values
    assert c.loc["peak_mem_mib", "exact_share"] == 1.0
    with pytest.raises(ValueError, match="latency_ms_new"):
        ez.zoo_remeasurement_noise(audit.drop(columns="latency_ms_new"))
    with pytest.warns(DeprecationWarning, match="zoo_remeasurement_noise"):
        old = ez.remeasurement_ceiling(audit)
    pd.testing.assert_frame_equal(old, c.reset_index()[old.columns])


def test_platform_scores_are_given_over_all_rows_and_per_batch_with_the_noise_once():
    m = np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
    b = [1, 1, 1, 4, 4, 4]
    lat = _pred("leave_network_out", "latency_ms", m, m * [1.05, 1.2, 0.7, 1.0, 1.0, 1.3], b)
    mem = _pred("leave_network_out", "peak_mem_mib", m, m, b)
    flops = _pred("flops_only", "latency_ms", m, m * 2, b)
    noise = pd.DataFrame({"method": "remeasurement", "target": ["latency_ms", "peak_mem_mib"],
                            "kind": "all", "n": 2, "median_ape_pct": [1.5, 0.0],
                            "within_10pct": [1.0, 1.0], "exact_share": [np.nan, 1.0],
                            "spearman_within_batch": [1.0, 1.0]})
    t = ez.zoo_platform_scores(pd.concat([lat, mem, flops]), noise, platform="cpu_x")
    assert (t["platform"] == "cpu_x").all()
    assert list(t["batch"].unique()) == ["all", "1", "4"]
    assert list(t["precision"].unique()) == ["all", "fp32"]
    assert t.groupby("batch")["method"].apply(list).to_dict() == {
        "all": ["leave_network_out", "flops_only", "remeasurement"],
        "1": ["leave_network_out", "flops_only"], "4": ["leave_network_out", "flops_only"]}
    lno = t[t["method"] == "leave_network_out"].set_index("batch")
    assert lno.loc["all", "latency_median_ape_pct"] == pytest.approx(12.5)  # of 5 20 30 0 0 30
    assert lno.loc["1", "latency_median_ape_pct"] == pytest.approx(20.0)
    assert lno.loc["4", "latency_within_10pct"] == pytest.approx(2 / 3)
    assert lno.loc["1", "latency_spearman"] == pytest.approx(0.5)  # 10.5, 24, 21
    assert (lno["peak_mem_exact_share"] == 1.0).all() and (lno["n"] == [6, 3, 3]).all()
    fl = t[t["method"] == "flops_only"].set_index("batch")
    assert fl["peak_mem_exact_share"].isna().all() and (fl["latency_median_ape_pct"] == 100).all()
    rm = t[t["method"] == "remeasurement"].iloc[0]
    assert rm["latency_median_ape_pct"] == 1.5 and rm["n"] == 2


def test_platform_scores_tell_precisions_apart_and_rank_within_one_precision():
    m = np.array([10.0, 20.0, 30.0, 100.0, 200.0, 300.0])
    lat = _pred("leave_network_out", "latency_ms", m, m * [1.0, 1.0, 1.0, 1.2, 1.2, 1.2],
                [1] * 6).assign(precision=["fp32"] * 3 + ["fp16"] * 3)
    # predicted fp16 ranks reversed within fp16 (the fp32 ranks right): across both
    # precisions the ranks would look fine, within each they are not
    lat.loc[3:, "predicted"] = [360.0, 240.0, 120.0]
    t = ez.zoo_platform_scores(lat, platform="cpu_x")
    assert list(zip(t["precision"], t["batch"], strict=True)) == [("all", "all"), ("fp32", "1"),
                                                     ("fp16", "1")]
    s = t.set_index("precision")
    assert s.loc["fp32", "latency_spearman"] == pytest.approx(1.0)
    assert s.loc["fp16", "latency_spearman"] == pytest.approx(-1.0)
    assert s.loc["all", "latency_spearman"] == pytest.approx(0.0)  # mean of the two settings
    assert s.loc["fp16", "latency_median_ape_pct"] == pytest.approx(60.0)  # 260, 20, 60
    assert (s["n"] == [6, 3, 3]).all()


def test_the_per_cpu_block_has_a_column_per_batch_and_a_dash_where_a_cpu_lacks_one(tmp_path):
    from carb_lib.app.readme_zoo import zoo_platforms_block

    m = np.array([10.0, 20.0, 30.0, 40.0])
    a = ez.zoo_platform_scores(pd.concat([
        _pred("leave_network_out", "latency_ms", m, m * 1.1, [1, 1, 16, 16]),
        _pred("leave_network_out", "peak_mem_mib", m, m, [1, 1, 16, 16])]), platform="cpu_a")
    b = ez.zoo_platform_scores(
        _pred("zero_zoo", "latency_ms", m, m * 0.8, [1, 4, 4, 64]).assign(
            precision=["fp32", "fp32", "fp16", "fp32"]), platform="cpu_b")
    (tmp_path / "zoo").mkdir()
    pd.concat([a, b]).to_csv(tmp_path / "zoo" / "platforms.csv", index=False)
    lines = zoo_platforms_block(tmp_path).splitlines()
    assert lines[0].endswith("| batch 1 | batch 4 | batch 16 | batch 64 | fp16 batch 4 "
                             "| peak memory exact to the byte |")
    assert lines[2] == ("| `cpu_a` | network left out of the fit (CARB, shared features) | 4 "
                        "| 10.0 % | 10.0 % | – | 10.0 % | – | – | 100.0 % |")
    assert lines[3] == ("| `cpu_b` | no zoo network in the fit (CARB, design space only) | 4 "
                        "| 20.0 % | 20.0 % | 20.0 % | – | 20.0 % | 20.0 % | – |")
    assert len(lines) == 4
    # a file written before precisions were told apart reads as fp32
    pd.concat([a, b]).drop(columns="precision").to_csv(tmp_path / "zoo" / "platforms.csv",
                                                       index=False)
    assert zoo_platforms_block(tmp_path).splitlines()[0].endswith(
        "| batch 1 | batch 4 | batch 16 | batch 64 | peak memory exact to the byte |")
    assert "no per-CPU zoo scores" in zoo_platforms_block(tmp_path / "none")


def test_sibling_files_find_a_platforms_design_rows_audit_and_operators(tmp_path):
    for f in ("zoo/cpu_x.parquet", "other_cpus/cpu_x.parquet", "new_families/cpu_x.parquet",
              "audit/zoo/cpu_x.parquet", "other_cpus/cpu_y.parquet"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_bytes(b"")
    # the data folder's catalog says which files go together, not their folders
    (tmp_path / "catalog.yaml").write_text("""format: 1
campaigns:
- {platform: cpu_x, campaign: design, files: [{path: new_families/cpu_x.parquet, role: rows},
                                              {path: other_cpus/cpu_x.parquet, role: rows}]}
- {platform: cpu_x, campaign: zoo, files: [{path: zoo/cpu_x.parquet, role: rows},
                                           {path: audit/zoo/cpu_x.parquet, role: audit}]}
- {platform: cpu_y, campaign: design, files: [{path: other_cpus/cpu_y.parquet, role: rows}]}
""")
    got = ez.sibling_files(tmp_path / "zoo" / "cpu_x.parquet")
    assert got == {"design_datasets": [(tmp_path / "new_families/cpu_x.parquet").as_posix(),
                                       (tmp_path / "other_cpus/cpu_x.parquet").as_posix()],
                   "audit": (tmp_path / "audit/zoo/cpu_x.parquet").as_posix(),
                   "kernel_bench": None}
    with pytest.raises(FileNotFoundError, match="cpu_z.parquet: no design-space rows"):
        ez.evaluate_zoo_file(tmp_path / "zoo" / "cpu_z.parquet")


def test_sibling_files_take_the_operator_benchmark_timed_with_the_zoo_rows_heap(tmp_path):
    for f in ("zoo/cpu_x.parquet", "other_cpus/cpu_x.parquet", "kernels/cpu_x.parquet",
              "kernels/cpu_x_kept.parquet", "kernels/cpu_x_older_kept.parquet"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_bytes(b"")

    def catalog(design_heap: str, with_kept: bool) -> None:
        kept = ("- {platform: cpu_x, campaign: older_kept, protocol: {heap: kept},\n"
                "   files: [{path: kernels/cpu_x_older_kept.parquet, role: kernels}]}\n"
                "- {platform: cpu_x, campaign: pair_kept, protocol: {heap: kept},\n"
                "   files: [{path: kernels/cpu_x_kept.parquet, role: kernels}]}\n") if with_kept else ""
        (tmp_path / "catalog.yaml").write_text(f"""format: 1
campaigns:
- {{platform: cpu_x, campaign: design, protocol: {{heap: {design_heap}}},
   files: [{{path: other_cpus/cpu_x.parquet, role: rows}}, {{path: kernels/cpu_x.parquet, role: kernels}}]}}
- {{platform: cpu_x, campaign: zoo, protocol: {{heap: kept}}, files: [{{path: zoo/cpu_x.parquet, role: rows}}]}}
{kept}""")

    def bench() -> str | None:
        return ez.sibling_files(tmp_path / "zoo" / "cpu_x.parquet")["kernel_bench"]

    catalog("default", with_kept=True)  # the last catalogued benchmark with the zoo rows' heap
    assert bench() == (tmp_path / "kernels/cpu_x_kept.parquet").as_posix()
    catalog("kept", with_kept=True)  # the design campaign's heap is the zoo rows': its own
    assert bench() == (tmp_path / "kernels/cpu_x.parquet").as_posix()
    catalog("default", with_kept=False)  # none with that heap: the design campaign's
    assert bench() == (tmp_path / "kernels/cpu_x.parquet").as_posix()


def test_zoo_rows_refuse_a_row_that_is_not_a_zoo_network():
    rows = pd.DataFrame({"status": ["ok"], "module": ["mypkg.nets:Net"]})
    with pytest.raises(ValueError, match="not torchvision zoo networks.*mypkg.nets:Net"):
        ez.zoo_rows(rows)


@pytest.mark.skipif(not ZOO.is_file(), reason="no measured zoo rows")
def test_zoo_rows_compute_the_allocator_peaks_with_the_current_model():
    from carb_lib.characterize.scaling import load_measured
    from carb_lib.core.vocab import ALLOC_FEATURES
    from carb_lib.dataset.features import static_features

    raw = load_measured([ZOO])
    rows = raw[raw["module"] == "torchvision.models:squeezenet1_1"].head(2).copy()
    cols = list(ALLOC_FEATURES.values())
    rows[cols] = 1.0  # what an older allocator model stored
    got = ez.zoo_rows(rows)
    want = static_features(rows.drop(columns=cols))
    for c in cols:
        assert (got[c] > 1e6).all(), c
        np.testing.assert_array_equal(got[c].to_numpy(float), want[c].to_numpy(float))


def test_design_rows_from_files_that_store_the_allocator_peaks_and_files_that_do_not():
    """Rows of two files, one storing the allocator peaks (an older model's values) and one
    without them: every row gets the current model's peaks, none is left NaN."""
    from carb_lib.core.vocab import ALLOC_FEATURES
    from carb_lib.dataset.features import static_features
    from carb_lib.dataset.synthetic import make_synthetic_dataset

    cols = list(ALLOC_FEATURES.values())
    a = make_synthetic_dataset(n=36, seed=0, error_rate=0.0)
    b = make_synthetic_dataset(n=36, seed=1, error_rate=0.0)
    a = a.drop(columns=[c for c in cols if c in a.columns])
    b = b.drop(columns=[c for c in cols if c in b.columns]).assign(**{c: 1.0 for c in cols})
    both = pd.concat([a, b], ignore_index=True)
    assert both[cols[0]].isna().sum() == len(a)  # what concatenating the two files gives
    got = ez.design_rows(both)
    want = static_features(both.drop(columns=cols))
    for c in cols:
        assert got[c].notna().all() and (got[c] > 1.0).all(), c
        np.testing.assert_array_equal(got[c].to_numpy(float), want[c].to_numpy(float))


@pytest.mark.skipif(not ZOO.is_file(), reason="no measured zoo rows")
@pytest.mark.slow
def test_every_zoo_row_is_predicted_by_models_that_never_saw_its_network():
    from carb_lib.characterize.scaling import load_measured

    raw = load_measured([ZOO])
    # six networks of six kinds (plain, residual, inverted residual, channel shuffle, fire, VGG)
    nets = [f"torchvision.models:{n}" for n in ("alexnet", "resnet18", "mobilenet_v2",
                                                 "shufflenet_v2_x1_0", "squeezenet1_0", "vgg11")]
    assert set(nets) <= set(raw["module"])
    zoo = ez.zoo_rows(raw[raw["module"].isin(nets)])
    design = ez.design_rows(load_measured([DESIGN]).sample(n=300, random_state=0))
    ev = ez.evaluate_zoo(design, zoo, n_folds=3, preset="test")
    p = ev.predictions
    assert set(p["method"]) == {"leave_network_out", "zero_zoo", "flops_only"}
    for m in ("leave_network_out", "zero_zoo", "flops_only"):
        got = p[p["method"] == m]
        # every zoo row once per target
        assert len(got) == 2 * len(zoo) and got["config_id"].value_counts().max() == 2
    assert np.isfinite(p["predicted"]).all() and (p["predicted"] > 0).all()
    s = ez.zoo_scores(p)
    mem = s[(s["kind"] == "all") & (s["target"] == "peak_mem_mib")].set_index("method")
    # the allocator model carries to unseen networks: most peaks are exact to the byte, with
    # or without zoo rows in the fit (the few zoo rows it misses do not move the others:
    # memory_exact)
    assert mem.loc["zero_zoo", "exact_share"] >= 0.9
    assert mem.loc["leave_network_out", "exact_share"] >= 0.9
    assert mem.loc["leave_network_out", "median_ape_pct"] < 0.5
    assert mem.loc["flops_only", "exact_share"] < 0.1 and mem.loc["flops_only",
                                                                  "median_ape_pct"] > 5
    # the out-of-fold model (the zoo screening's) predicts as the fold that held the network out
    got = ev.out_of_fold_model().predict(zoo)
    lno = p[p["method"] == "leave_network_out"].pivot(index="config_id", columns="target",
                                                       values="predicted")
    for t in ("latency_ms", "peak_mem_mib"):
        np.testing.assert_allclose(got[t].to_numpy(float),
                                   lno.loc[zoo["config_id"], t].to_numpy(float), rtol=1e-12)


class _Const:
    """A stand-in fold model: predicts its own number for every row."""

    targets_ = ("latency_ms",)

    def __init__(self, v):
        self.v = v

    def predict(self, X):
        return pd.DataFrame({"latency_ms": np.full(len(X), self.v, dtype=float)})

    def predict_interval(self, X, coverage=0.9):
        return self.predict(X).assign(latency_ms_lo=self.v - 1.0, latency_ms_hi=self.v + 1.0)


def test_the_out_of_fold_model_predicts_each_network_by_the_fold_that_held_it_out():
    oof = ez.OutOfFoldModel({0: _Const(10.0), 1: _Const(20.0)}, {"a": 0, "b": 1, "c": 0})
    X = pd.DataFrame({"network": ["b", "a", "c", "b", "a"]})
    assert oof.predict(X)["latency_ms"].tolist() == [20.0, 10.0, 10.0, 20.0, 10.0]
    iv = oof.predict_interval(X, coverage=0.9)
    assert iv["latency_ms_hi"].tolist() == [21.0, 11.0, 11.0, 21.0, 11.0]
    assert oof.targets_ == ("latency_ms",)
    with pytest.raises(ValueError, match="no fold held out network"):
        oof.predict(pd.DataFrame({"network": ["a", "zz"]}))


def test_the_operators_of_a_network_whose_factory_computes_with_tensors_are_listed():
    """RegNet's factory reads tensor values, which the meta device has not: its operators
    (for the kernel law) are listed through the same fallback as its features."""
    from carb_lib.families._common import meta_model
    from carb_lib.families.module import ModuleConfig

    cfg = ModuleConfig(module="torchvision.models:regnet_x_400mf", input_shape=(3, 64, 64),
                       batch=1, precision="fp16")
    model = meta_model(cfg)
    assert {p.device.type for p in model.parameters()} == {"meta"}
    assert {p.dtype for p in model.parameters()} == {__import__("torch").float16}
