"""Energy end to end on the shipped NVIDIA H200 rows: ``carb fit`` on both H200 files,
``carb predict`` with intervals, ``carb screen`` with an energy budget (energy among the
default objectives), ``carb zoo predict`` with the GPU model; and the bad input around energy
(a budget on a target the model lacks, ok rows without energy in a fit)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import one_line_error
from typer.testing import CliRunner

from carb_lib.app.cli import app
from carb_lib.dataset import catalog

ROOT = Path(__file__).resolve().parents[1]
H200 = [ROOT / "data" / "gpu_nvidia_h200" / "design" / "rows.parquet",
        ROOT / "data" / "gpu_nvidia_h200" / "design" / "rows_new_families.parquet"]
runner = CliRunner()

pytestmark = pytest.mark.skipif(not all(p.is_file() for p in H200),
                                reason="the shipped H200 rows are not in this checkout")


def cli(*args: str):
    return runner.invoke(app, list(args))


def _ok_rows() -> pd.DataFrame:
    rows = pd.concat([pd.read_parquet(p) for p in H200], ignore_index=True)
    return rows[rows["status"].astype(str).eq("ok")].reset_index(drop=True)


def _check_energy(table: pd.DataFrame, where: str, col: str = "energy_j_pred") -> None:
    """``col`` (the energy prediction) with its interval ``col_lo``, ``col_hi``: finite,
    positive, lo <= prediction <= hi."""
    for c in (col, f"{col}_lo", f"{col}_hi"):
        assert c in table.columns, (where, c, list(table.columns))
        v = table[c].to_numpy(float)
        assert len(v) and np.isfinite(v).all() and (v > 0).all(), (where, c, v)
    assert (table[f"{col}_lo"] <= table[col]).all(), where
    assert (table[col] <= table[f"{col}_hi"]).all(), where


@pytest.fixture(scope="module")
def h200_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("h200")
    args = ["fit", "--quick", "--out", str(d / "m.joblib")]
    for p in H200:
        args += ["--data", str(p)]
    res = cli(*args)
    assert res.exit_code == 0, res.output
    return d / "m.joblib", res.output


def test_fit_on_both_h200_files_predicts_energy_with_cv_error(h200_model):
    path, output = h200_model
    meta = json.loads(Path(f"{path}.json").read_text())
    text = json.dumps(meta)
    assert "energy_j" in text and "cuda" in text
    assert f"{len(_ok_rows())} rows" in output
    assert "energy_j: RMSE of log energy_j" in output  # cross-validated error of the energy target


def test_predict_writes_energy_with_intervals_for_h200_configs(h200_model, tmp_path):
    rows = _ok_rows().groupby("family").head(3)
    configs = rows.drop(columns=["energy_j", "latency_ms", "peak_mem_mib"])
    configs.to_csv(tmp_path / "q.csv", index=False)
    out = tmp_path / "p.csv"
    res = cli("predict", "--model", str(h200_model[0]), "--configs", str(tmp_path / "q.csv"),
              "--out", str(out))
    assert res.exit_code == 0, res.output
    pred = pd.read_csv(out)
    assert len(pred) == len(rows)
    _check_energy(pred, "carb predict")


def test_screen_with_energy_budget_minimises_energy_by_default(h200_model, tmp_path):
    median = float(_ok_rows()["energy_j"].median())
    out = tmp_path / "s.csv"
    res = cli("screen", "--model", str(h200_model[0]), "--budget", f"energy_j<={median:.3f}",
              "--out", str(out), "--k", "5")
    assert res.exit_code == 0, res.output
    assert "min:energy_j" in res.output and "min:latency_ms" in res.output
    summary = json.loads((tmp_path / "s_summary.json").read_text())
    assert "min:energy_j" in json.dumps(summary)
    short = pd.read_csv(out)
    assert len(short) > 0
    _check_energy(short, "carb screen", col="energy_j")
    assert (short["energy_j_hi"] <= median + 1e-3).all()  # the budget holds on the bound


def test_zoo_predict_with_the_h200_model_gives_energy_intervals(h200_model, tmp_path):
    out = tmp_path / "z.csv"
    res = cli("zoo", "predict", "--model", str(h200_model[0]), "--networks",
              "resnet18,mobilenet_v2", "--resolutions", "64",
              "--cache-dir", str(tmp_path / "cache"), "--out", str(out))
    assert res.exit_code == 0, res.output
    pred = pd.read_csv(out)
    assert list(pred["network"]) == ["resnet18", "mobilenet_v2"]
    _check_energy(pred, "carb zoo predict")
    assert "energy J [lo, hi]" in res.output  # the printed table shows the energy interval


def test_energy_budget_with_a_model_without_energy_is_one_line_naming_its_targets(tmp_path):
    rows = pd.read_parquet(H200[0]).assign(energy_j=np.nan)
    rows.to_parquet(tmp_path / "no_energy.parquet")
    res = cli("fit", "--quick", "--data", str(tmp_path / "no_energy.parquet"),
              "--out", str(tmp_path / "m.joblib"))
    assert res.exit_code == 0, res.output
    res = cli("screen", "--model", str(tmp_path / "m.joblib"), "--budget", "energy_j<=1",
              "--out", str(tmp_path / "s.csv"))
    one_line_error(res, "energy_j", "latency_ms", "peak_mem_mib")
    assert not (tmp_path / "s.csv").exists()


def test_ok_rows_without_energy_leave_the_energy_target_only_with_a_count(tmp_path):
    rows = pd.read_parquet(H200[0])
    ok = rows.index[rows["status"].astype(str).eq("ok")]
    rows.loc[ok[:5], "energy_j"] = np.nan
    rows.loc[ok[:5], "energy_reason"] = "power samples missing"
    rows.to_parquet(tmp_path / "some.parquet")
    res = cli("fit", "--quick", "--data", str(tmp_path / "some.parquet"),
              "--out", str(tmp_path / "m.joblib"))
    assert res.exit_code == 0, res.output
    assert f"energy_j: 5 of {len(ok)} ok rows have no energy_j" in res.output
    metrics = {ln.split(":")[0].strip(): ln for ln in res.output.splitlines()
               if "RMSE of log" in ln}
    assert f"{len(ok) - 5} rows" in metrics["energy_j"]
    assert f"{len(ok)} rows" in metrics["latency_ms"]


# ---------------------------------------------------------------------------- the gpu profile
def _prepared(path: Path) -> pd.DataFrame:
    from carb_lib.characterize.scaling import load_measured
    from carb_lib.evaluation import prepare_dataset

    return prepare_dataset(load_measured([str(path)]))


def test_cross_family_judges_energy_where_every_row_holds_it_and_not_on_cpu_rows():
    from carb_lib.evaluation.cross_family import CROSS_FAMILY_TARGETS, cross_family_targets

    src, tgt = _prepared(H200[0]), _prepared(H200[1])
    assert cross_family_targets(src, tgt) == (*CROSS_FAMILY_TARGETS, "energy_j")
    cpu = _prepared(ROOT / "data" / "cpu_epyc_zen3_2c" / "design" / "rows.parquet")
    assert cross_family_targets(cpu, tgt) == CROSS_FAMILY_TARGETS  # CPU rows carry no energy
    gap = tgt.copy()
    gap.loc[gap.index[0], "energy_j"] = np.nan
    assert "energy_j" not in cross_family_targets(src, gap)


def test_fitting_ks_keeps_the_k_values_the_h200_families_allow_and_names_the_rest():
    from carb_lib.evaluation.cross_family import cross_family_targets, fitting_ks

    src, tgt = _prepared(H200[0]), _prepared(H200[1])
    kept, notes = fitting_ks(tgt, [10, 20, 50], 5, cross_family_targets(src, tgt))
    assert kept == [10] and len(notes) == 2
    assert all("training rows" in n for n in notes) and "k = 50 left out" in notes[-1]


def test_the_gpu_profile_reads_references_and_audits_from_data_with_ks_that_fit():
    """Notebook 05 of the gpu profile on the H200 rows: every data parameter the platform, read
    as the catalog's files (present or absent there, never a results/ path), the profile's ks of which the families'
    sizes allow one at least, and energy judged."""
    from carb_lib.app.reproduce import load_runs
    from carb_lib.evaluation.cross_family import cross_family_targets, fitting_ks

    runs = {r.name: r for r in load_runs("gpu")}
    for nb in ("01_characterization", "03_carb-gpu_nvidia_h200", "04_screening-gpu_nvidia_h200",
               "05_cross_family-gpu_nvidia_h200"):
        assert nb in runs, sorted(runs)
    p = runs["05_cross_family-gpu_nvidia_h200"].parameters
    for key in ("source_dataset", "target_dataset", "source_reference", "target_reference",
                "target_audit", "kernel_bench"):
        assert p[key] == "gpu_nvidia_h200", (key, p[key])  # the platform: the catalog's files
    ref = catalog.resolve(p["source_reference"], "reference", family="resnet")
    assert ref == "data/gpu_nvidia_h200/design/reference.parquet"  # the campaign's reference rows
    assert catalog.resolve(p["target_audit"], "audit", family="!resnet") is None  # none: said
    src = _prepared(ROOT / catalog.resolve(p["source_dataset"], "rows", family="resnet"))
    tgt = _prepared(ROOT / catalog.resolve(p["target_dataset"], "rows", family="!resnet"))
    targets = cross_family_targets(src, tgt)
    assert "energy_j" in targets
    kept, _ = fitting_ks(tgt, p["ks"], p["n_seeds"], targets)
    assert kept and min(kept) == 10


def test_gpu_quick_runs_every_notebook_of_the_gpu_profile_on_the_same_files():
    from carb_lib.app.reproduce import load_runs

    full, quick = load_runs("gpu"), load_runs("gpu_quick")
    assert [r.name for r in quick] == [r.name for r in full]
    data_keys = ("data_paths", "dataset", "source_dataset", "target_dataset",
                 "source_reference", "target_reference", "target_audit", "kernel_bench")
    for q, f in zip(quick, full, strict=True):
        assert {k: q.parameters.get(k) for k in data_keys} == \
            {k: f.parameters.get(k) for k in data_keys}, q.name
        assert q.parameters.get("quick") is True, q.name


def test_notebook_05_of_gpu_quick_judges_energy_noise_and_memory_on_the_h200(run_notebook):
    """Notebook 05 as the gpu_quick profile runs it on the H200 files (fewer seeds and
    candidates): the energy claims, the energy error beside the noise of both window policies,
    and the GPU memory gap, each glued with rows behind it."""
    from carb_lib.app.reproduce import load_runs

    (run,) = [r for r in load_runs("gpu_quick") if r.name.startswith("05_cross_family")]
    params = {k: (str(ROOT / v) if isinstance(v, str) and v.startswith("data/") else v)
              for k, v in run.parameters.items()}
    params.update(ks=[10], energy_splits=2, n_candidates_per_family=200)
    rec, out = run_notebook("notebooks/05_cross_family.ipynb", params)
    assert rec["have_energy_claims"] is True and rec["platform"] == "gpu_nvidia_h200"
    assert rec["energy/carb_r2_energy_j/n"] > 0 and rec["energy/power_x_latency_r2_energy_j/n"] > 0
    assert rec["n_energy_noise_files"] == 2
    for w in ("0.5", "3"):
        assert rec[f"energy_vs_noise/window{w}s/noise_mape_pct"] > 0
        assert rec[f"energy_vs_noise/window{w}s/model_n_test"] > 0
    assert rec["have_gpu_memory"] is True
    assert rec["gpu_memory/resnet/fp32/measured_over_model"] > 0
    scores = pd.read_csv(out / "results/cross_family/energy_vs_noise.csv")
    assert list(scores["window_policy_s"]) == [0.5, 3.0]
