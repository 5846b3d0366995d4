"""The default latency law of ``carb fit`` and ``CARBRegressor()`` (latency_law="auto",
carb_lib.ensemble.latency_default): the kernel law where the platform has an operator benchmark
in data/, the roofline law otherwise, said and stored; both make the same model."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from kernel_synthetic import synthetic_bench
from typer.testing import CliRunner

from carb_lib.app.cli import app
from carb_lib.ensemble import latency_default as LD

PLAT = "synthetic_cpu"
CPU_A = "GenuineIntel family 6 model 207 stepping 2 | AVX512 | L3 307200K"
CPU_B = "AuthenticAMD family 25 model 17 stepping 1 | AVX512 | L3 32768K"


def _rows(cpu_id: str | None) -> pd.DataFrame:
    """SYNTHETIC ResNet rows of PLAT (the fit only needs them well formed)."""
    from carb_lib.dataset.synthetic import make_synthetic_dataset

    df = make_synthetic_dataset(216, seed=3, platform=PLAT, with_energy=False,
                                with_telemetry=False, error_rate=0.0)
    df = df.drop(columns="config_id")  # the SYNTHETIC ids are not the family's
    return df if cpu_id is None else df.assign(cpu_id=cpu_id)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository whose data/kernels/ holds an operator benchmark of PLAT timed on CPU_A."""
    kernels = tmp_path / "repo" / "data" / "kernels"
    kernels.mkdir(parents=True)
    when = pd.Timestamp("2026-12-01T10:00:00Z")  # a timed benchmark's column the model keeps
    synthetic_bench(600).assign(platform=PLAT, cpu_id=CPU_A, measured_at=when).to_parquet(
        kernels / f"{PLAT}.parquet")
    monkeypatch.setattr(LD, "DATA_DIR", tmp_path / "repo" / "data")
    return tmp_path / "repo"


def _fit(tmp_path: Path, rows: pd.DataFrame, *extra: str, name: str = "d.parquet"):
    data = tmp_path / name
    rows.to_parquet(data)
    out = tmp_path / "m.joblib"
    res = CliRunner().invoke(app, ["fit", "--data", str(data), "--out", str(out),
                                   "--preset", "test", *extra])
    meta = json.loads((tmp_path / "m.joblib.json").read_text()) if out.exists() else None
    return res, meta


def test_a_platform_with_a_benchmark_in_data_is_fitted_with_the_kernel_law(repo, tmp_path):
    res, meta = _fit(tmp_path, _rows(CPU_A))
    assert res.exit_code == 0, res.output
    said = [ln for ln in res.output.splitlines() if ln.startswith("latency law ")]
    assert said == [f"latency law kernel: operator benchmark data/kernels/{PLAT}.parquet of "
                    f"platform {PLAT} (found by platform; cpu_id checked): kernel law"]
    # the law fitted; the parameter stays the one given (scikit-learn's convention)
    assert meta["latency_law"] == "kernel" and meta["params"]["latency_law"] == "auto"
    assert meta["kernel_bench"] == f"data/kernels/{PLAT}.parquet"
    assert meta["cache_probe"] is None and meta["kernel_model"]["n_ops"] == 600
    # the saved model (its benchmark's timestamps too) loads and predicts
    configs = tmp_path / "c.csv"
    _rows(None).head(5).to_csv(configs, index=False)
    res = CliRunner().invoke(app, ["predict", "--model", str(tmp_path / "m.joblib"), "--configs",
                                   str(configs), "--out", str(tmp_path / "p.csv")])
    assert res.exit_code == 0, res.output
    assert (pd.read_csv(tmp_path / "p.csv")["latency_ms_pred"] > 0).all()
    from carb_lib.ensemble import load_model

    saved = load_model(tmp_path / "m.joblib")
    kept = saved.kernel_bench_["measured_at"]
    assert kept.dt.tz is not None and (kept == pd.Timestamp("2026-12-01T10:00:00Z")).all()
    # CARBRegressor() chooses the same law and benchmark, and fits the same model
    from carb_lib.ensemble import PRESETS, CARBRegressor

    assert CARBRegressor().latency_law == "auto" == PRESETS["default"]["latency_law"]
    assert PRESETS["test"]["latency_law"] == "roofline"  # the unit tests' size: no kernel model
    model = _estimator().fit(_prepared(_rows(CPU_A)))  # carb fit --preset test --n-jobs 2
    assert model.latency_law == "auto" and model.latency_law_ == "kernel" == saved.latency_law_
    assert model.latency_law_reason_ == said[0].removeprefix("latency law kernel: ")
    assert model.latency_law_choice_ == {k: meta[k] for k in ("latency_law", "latency_law_reason",
                                                              "kernel_bench", "cache_probe")}
    assert model.kernel_model_.n_ops_ == 600 and len(model.kernel_bench_) == 600
    assert model.base_laws_["latency_ms"].kind == "kernel" == saved.base_laws_["latency_ms"].kind
    rows = _rows(None).head(40)  # equal up to the threads' summation order (n_jobs=2)
    pd.testing.assert_frame_equal(model.predict(rows), saved.predict(rows), check_exact=False,
                                  rtol=1e-12, atol=0)


def test_a_platform_without_a_benchmark_gets_the_roofline_law_said_once(repo, tmp_path):
    (repo / "data" / "kernels" / f"{PLAT}.parquet").unlink()
    res, meta = _fit(tmp_path, _rows(CPU_A))
    assert res.exit_code == 0, res.output
    line = f"no operator benchmark of platform {PLAT} in data/: roofline law"
    assert res.output.count(line) == 1
    assert meta["latency_law"] == "roofline" and meta["params"]["latency_law"] == "auto"
    assert meta["kernel_bench"] is None and meta["kernel_model"] is None
    assert meta["latency_law_reason"] == line


def test_a_benchmark_of_another_cpu_is_refused_naming_both_ids(repo, tmp_path):
    res, meta = _fit(tmp_path, _rows(CPU_B))
    assert res.exit_code == 1 and meta is None and "Traceback" not in res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and CPU_A in lines[0] and CPU_B in lines[0], res.output
    assert f"data/kernels/{PLAT}.parquet" in lines[0]


@pytest.mark.parametrize("cpu_id", [None, "unknown"])
def test_rows_without_a_cpu_model_are_not_refused_but_said_unchecked(repo, tmp_path, cpu_id):
    res, meta = _fit(tmp_path, _rows(cpu_id))
    assert res.exit_code == 0, res.output
    assert "rows name no CPU model (cpu_id), cannot be checked" in res.output
    assert meta["latency_law"] == "kernel"


def test_explicit_choices_are_honoured(repo, tmp_path):
    rows = _rows(CPU_A)
    res, meta = _fit(tmp_path, rows, "--latency-law", "roofline")
    assert res.exit_code == 0, res.output
    assert meta["latency_law"] == "roofline" and meta["kernel_model"] is None
    other = tmp_path / "mine.parquet"
    synthetic_bench(300, seed=1).assign(platform=PLAT).to_parquet(other)
    res, meta = _fit(tmp_path, rows, "--latency-law", "kernel", "--kernel-bench", str(other))
    assert res.exit_code == 0, res.output
    assert meta["latency_law"] == "kernel" and meta["kernel_model"]["n_ops"] == 300
    assert meta["kernel_bench"] == str(other) and "--kernel-bench" in meta["latency_law_reason"]
    for bad, words in ((["--latency-law", "kernel"], "--latency-law kernel and --kernel-bench "
                                                      "FILE go together"),
                       (["--latency-law", "fast"], "--latency-law must be one of auto | "
                                                   "roofline | kernel"),
                       (["--latency-law", "roofline", "--kernel-bench", str(other)],
                        "--kernel-bench FILE is read by --latency-law kernel")):
        res, _ = _fit(tmp_path, rows, *bad, "--force")
        assert res.exit_code == 1 and words in res.output, res.output
        assert len(res.output.strip().splitlines()) == 1


def test_the_benchmark_of_the_rows_campaign_comes_first(repo, tmp_path):
    kernels = repo / "data" / "kernels"
    synthetic_bench(300, seed=1).assign(platform=PLAT, cpu_id=CPU_A).to_parquet(
        kernels / f"{PLAT}_steady.parquet")
    synthetic_bench(300, seed=2).assign(platform="another_cpu").to_parquet(
        kernels / f"{PLAT}_foreign.parquet")
    assert LD.find_benchmark(PLAT, campaign=f"{PLAT}_steady") == kernels / f"{PLAT}_steady.parquet"
    # a file of the campaign's name that holds another platform is not its benchmark
    assert LD.find_benchmark(PLAT, campaign=f"{PLAT}_foreign") == kernels / f"{PLAT}.parquet"
    assert LD.find_benchmark("no_such_cpu") is None
    res, meta = _fit(tmp_path, _rows(CPU_A), name=f"{PLAT}_steady.parquet")
    assert res.exit_code == 0, res.output
    assert meta["kernel_bench"] == f"data/kernels/{PLAT}_steady.parquet"


def test_a_probe_beside_the_benchmark_is_used_and_checked(repo, tmp_path):
    kernels = repo / "data" / "kernels"
    probe = pd.DataFrame({"size_mib": [4, 8, 16, 32, 64, 128, 512, 1024],
                          "read_gb_per_s": [30, 30, 30, 29, 12, 10, 10, 10], "cv": 0.0})
    probe.assign(cpu_id=CPU_A).to_csv(kernels / f"{PLAT}_cache_probe.csv", index=False)
    res, meta = _fit(tmp_path, _rows(CPU_A))
    assert res.exit_code == 0, res.output
    assert meta["cache_probe"] == f"data/kernels/{PLAT}_cache_probe.csv"
    assert meta["kernel_model"]["cache"] is not None
    probe.assign(cpu_id=CPU_B).to_csv(kernels / f"{PLAT}_cache_probe.csv", index=False)
    res, meta = _fit(tmp_path, _rows(CPU_A), "--force")
    assert res.exit_code == 1 and CPU_A in res.output and CPU_B in res.output, res.output


def test_the_repository_data_names_each_cpu_benchmark(repo_root):
    """The committed data/: the five CPUs' benchmarks are found by platform; the GPU has none."""
    data = repo_root / "data"
    for plat in ("cpu_epyc_zen3_2c", "cpu_epyc_zen4_2c", "cpu_epyc_zen5_2c", "cpu_xeon_emr_2c",
                 "cpu_xeon_gnr_2c"):
        assert LD.find_benchmark(plat, data) == data / plat / "design" / "kernels.parquet"
    assert LD.find_benchmark("gpu_nvidia_h200", data) is None
    gnr = LD.find_benchmark("cpu_xeon_gnr_2c", data, campaign="cpu_xeon_gnr_2c_steady_kept")
    assert gnr == data / "cpu_xeon_gnr_2c" / "steady_kept" / "kernels.parquet"
    assert LD.find_cache_probe(gnr, "cpu_xeon_gnr_2c") == \
        data / "cpu_xeon_gnr_2c" / "design" / "cache_probe.csv"


def _estimator(**params):
    from carb_lib.ensemble import CARBRegressor, preset

    return CARBRegressor(**preset("test", **{"latency_law": "auto", "n_jobs": 2, **params}))


def _prepared(rows: pd.DataFrame) -> pd.DataFrame:
    from carb_lib.evaluation import prepare_dataset

    return prepare_dataset(rows)


def test_a_platform_without_a_benchmark_is_fitted_with_the_roofline_law(repo, tmp_path):
    from carb_lib.ensemble import load_model, save_model

    (repo / "data" / "kernels" / f"{PLAT}.parquet").unlink()
    model = _estimator().fit(_prepared(_rows(CPU_A)))
    line = f"no operator benchmark of platform {PLAT} in data/: roofline law"
    assert model.latency_law_ == "roofline" and model.latency_law_reason_ == line
    assert not hasattr(model, "kernel_model_")
    save_model(model, tmp_path / "py.skops")
    meta = json.loads((tmp_path / "py.skops.json").read_text())
    assert meta["latency_law"] == "roofline" and meta["latency_law_reason"] == line
    assert meta["kernel_bench"] is None and meta["kernel_model"] is None
    assert load_model(tmp_path / "py.skops").latency_law_reason_ == line


def test_rows_of_several_platforms_or_none_get_the_roofline_law_and_why(repo):
    rows = _prepared(_rows(CPU_A))
    two = pd.concat([rows, rows.assign(platform="another_cpu")], ignore_index=True)
    model = _estimator(mixed_platforms=True)
    with pytest.warns(UserWarning):
        model.fit(two)
    assert model.latency_law_ == "roofline" and not hasattr(model, "kernel_model_")
    assert model.latency_law_reason_ == (f"the rows hold several platforms ['another_cpu', "
                                         f"'{PLAT}']: no operator benchmark to look up: "
                                         "roofline law")
    model = _estimator().fit(rows.drop(columns="platform"))
    assert model.latency_law_ == "roofline"
    assert model.latency_law_reason_.startswith("the rows have no platform column: ")


def test_a_benchmark_of_another_cpu_is_refused_as_carb_fit_refuses_it(repo, tmp_path):
    rows = _rows(CPU_B)
    res, _ = _fit(tmp_path, rows)
    with pytest.raises(ValueError) as err:
        _estimator().fit(_prepared(rows))
    message = str(err.value)
    assert "\n" not in message and CPU_A in message and CPU_B in message
    assert res.output.strip() == f"error: {message}", res.output


def test_the_roofline_law_named_is_the_roofline_model_whatever_the_benchmark(repo):
    # rows of another CPU than the benchmark: "auto" refuses them, "roofline" never reads it
    rows = _prepared(_rows(CPU_B))
    named = _estimator(latency_law="roofline").fit(rows)
    assert named.latency_law_ == "roofline" and not hasattr(named, "kernel_model_")
    assert named.latency_law_reason_ == "latency_law 'roofline' given: roofline law"
    assert named.base_laws_["latency_ms"].kind == "roofline"
    (repo / "data" / "kernels" / f"{PLAT}.parquet").unlink()
    chosen = _estimator().fit(rows)  # no benchmark: auto chooses the roofline law
    # equal up to the threads' summation order (n_jobs=2)
    pd.testing.assert_frame_equal(named.predict(rows), chosen.predict(rows), check_exact=False,
                                  rtol=1e-12, atol=0)
