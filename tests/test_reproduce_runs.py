"""carb reproduce as a reviewer uses it: where a run writes, -p overrides, shared defaults, the
GPU profile's globs, and notebooks started outside the runner (a plain kernel in notebooks/)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import nbformat
import pytest
import yaml

from carb_lib.app import reproduce as R
from carb_lib.app.reproduce import (
    OUTPUT_DIRS,
    ReproduceError,
    load_runs,
    notebook_parameters,
    output_parameters,
    output_root,
    parse_overrides,
    run_profile,
)

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout


def _runs_file(tmp_path, spec) -> Path:
    path = tmp_path / "runs.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


# ---------------------------------------------------------------------------- where runs write
def test_only_the_full_profile_without_overrides_writes_the_shipped_results(tmp_path):
    run = tmp_path / "runs" / "x"
    assert output_root("full", {}, None, run) == (REPO.resolve(), True)
    assert output_root("full", {"q_low": 0.25}, None, run) == (run.resolve(), False)
    assert output_root("quick", {}, None, run) == (run.resolve(), False)
    assert output_root("gpu", {}, None, run) == (run.resolve(), False)
    assert output_root("full", {}, tmp_path / "o", run) == ((tmp_path / "o").resolve(), False)


def test_every_output_folder_is_set_even_when_the_entry_names_none(tmp_path):
    """The runner sets fig_dir/results_dir for every notebook that has them: an entry that
    does not name them cannot fall back to the notebook's default."""
    for nb in NOTEBOOKS:
        declared = notebook_parameters(nb)
        run = R.NotebookRun(nb.relative_to(REPO), {"quick": True})
        params = output_parameters(run, tmp_path / "out")
        for key, folder in OUTPUT_DIRS.items():
            if key in declared:
                assert params[key] == str(tmp_path / "out" / folder), (nb.name, key)
    # relative entries go under the root, in the run's subfolder; explicit overrides stay
    run = R.NotebookRun(Path("notebooks/04_screening.ipynb"), {"fig_dir": "figs"}, "04-x", "x")
    params = output_parameters(run, REPO / "runs" / "r")
    assert params["fig_dir"] == "runs/r/figs/x" and params["results_dir"] == "runs/r/results/x"
    kept = output_parameters(run, REPO / "runs" / "r", keep={"fig_dir"})
    assert kept["fig_dir"] == "figs"


def test_notebooks_default_to_a_scratch_folder_outside_the_runner():
    """JupyterLab's Run All writes runs/lab/ (gitignored), never figures/ or results/."""
    for nb in NOTEBOOKS:
        declared = notebook_parameters(nb)
        for key in OUTPUT_DIRS:
            if key in declared:
                assert str(declared[key]).startswith("runs/lab/"), (nb.name, key, declared[key])
    assert "runs/" in (REPO / ".gitignore").read_text().split()


def test_parse_overrides_reads_yaml_values():
    got = parse_overrides(["q_low=0.25", "ks=[5, 10]", "platform=null", "name=abc",
                           "quick=true", "empty="])
    assert got == {"q_low": 0.25, "ks": [5, 10], "platform": None, "name": "abc",
                   "quick": True, "empty": ""}
    for bad in ("q_low", "=3", "a b=1", "x=[1,"):
        with pytest.raises(ReproduceError, match="-p"):
            parse_overrides([bad])


def test_an_override_naming_no_parameter_of_the_run_is_refused(tmp_path):
    with pytest.raises(ReproduceError, match=r"-p q_lw: no notebook .* 'q_lw'"):
        run_profile("quick", only=["01_char"], run_dir=tmp_path / "r",
                    overrides={"q_lw": 0.25})
    assert not (tmp_path / "r" / "summary.json").exists()


def test_cli_passes_p_to_the_runner(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from carb_lib.app.cli import app

    seen = {}

    def fake(profile, **kw):
        seen.update(kw, profile=profile)
        return {}

    monkeypatch.setattr(R, "run_profile", fake)
    res = CliRunner().invoke(app, ["reproduce", "--profile", "quick", "-p", "q_low=0.25",
                                   "--parameter", "ks=[5]", "--run-dir", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert seen["overrides"] == {"q_low": 0.25, "ks": [5]} and seen["profile"] == "quick"
    res = CliRunner().invoke(app, ["reproduce", "-p", "oops"])
    assert res.exit_code == 1 and "expected name=value" in res.output


@pytest.mark.slow
def test_a_run_with_a_changed_parameter_leaves_the_checkout_untouched(tmp_path):
    """Notebook 01 (quick) with -p q_low=0.25 and no --out-root: every figure and table goes
    into its run folder, summary.json records the override with the commit, and git sees no
    change in the checkout."""
    before = _git("status", "--porcelain", "--untracked-files=all")
    run_dir = tmp_path / "runs" / "quick-q_low"
    overrides = {"q_low": 0.25, "data_paths": ["data/cpu_epyc_2c/design/rows.parquet"], "n_boot": 10}
    summary = run_profile("quick", only=["01_char"], run_dir=run_dir, overrides=overrides)
    assert _git("status", "--porcelain", "--untracked-files=all") == before
    rec = summary["01_characterization"]
    assert rec["synthetic"] is False
    meta = json.loads((run_dir / "summary.json").read_text())["_run"]
    assert meta["commit"] == _git("rev-parse", "HEAD").strip()
    assert meta["overrides"] == overrides and meta["shipped_results"] is False
    params = meta["parameters"]["01_characterization"]
    assert rec["platforms"] == ["cpu_epyc_2c"]  # the measured file asked for only
    assert params["q_low"] == 0.25 and params["results_dir"] == str((run_dir / "results").resolve())
    assert (run_dir / "results/characterization/scaling.csv").is_file()
    assert (run_dir / "results/claims.csv").is_file()
    assert list((run_dir / "figures").glob("01_scaling_*.png"))
    executed = nbformat.read(str(run_dir / "01_characterization.ipynb"), as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert "q_low = 0.25" in injected[0].source


# ---------------------------------------------------------------------------- the run list
def test_defaults_are_written_once_and_given_to_the_notebooks_that_have_them(tmp_path):
    spec = {"defaults": {"quick": False, "synthetic_demo": False, "n_check": 7},
            "profiles": {"p": {"defaults": {"quick": True},
                               "notebooks": [
                                   {"notebook": "notebooks/00_design_space.ipynb"},
                                   {"notebook": "notebooks/01_characterization.ipynb",
                                    "parameters": {"quick": False, "n_boot": 5}}]}}}
    nb00, nb01 = load_runs("p", _runs_file(tmp_path, spec))
    assert nb00.parameters == {"quick": True, "n_check": 7}  # no synthetic_demo in 00
    assert nb01.parameters == {"quick": False, "synthetic_demo": False, "n_boot": 5}
    spec["defaults"] = [1]
    with pytest.raises(ReproduceError, match="'defaults' must be a mapping"):
        load_runs("p", _runs_file(tmp_path, spec))


def test_shipped_profiles_write_shared_values_once_and_no_output_folder():
    spec = yaml.safe_load((REPO / "papermill_runs.yaml").read_text())
    assert {"quick", "full", "gpu"} <= set(spec["profiles"])
    text = (REPO / "papermill_runs.yaml").read_text()
    assert "fig_dir" not in text.split("defaults:")[1] and "results_dir:" not in text
    for profile in ("quick", "full"):
        assert spec["profiles"][profile]["defaults"]["quick"] is (profile == "quick")
        for entry in spec["profiles"][profile]["notebooks"]:
            assert "quick" not in entry.get("parameters", {}), entry["notebook"]


def test_platforms_and_each_expand_over_the_catalogued_platforms(tmp_path, monkeypatch):
    """``{platforms: PATTERN}`` lists the catalogued platforms (a user catalog's included) whose
    name matches; ``each`` runs once per platform, ``{stem}`` is the platform, and a file of
    the catalog goes by its platform (and campaign), never by its role's file name."""
    user = tmp_path / "mine"
    (user / "gpu_a100" / "design").mkdir(parents=True)
    (user / "gpu_a100" / "design" / "rows.parquet").write_bytes(b"")
    (user / "catalog.yaml").write_text(
        "format: 1\ncampaigns:\n- platform: gpu_a100\n  campaign: design\n  device: cuda\n"
        "  files:\n  - {path: gpu_a100/design/rows.parquet, role: rows, families: [resnet]}\n")
    monkeypatch.setenv("CARB_CATALOG", str(user / "catalog.yaml"))
    spec = {"profiles": {"gpu": [
        {"notebook": "notebooks/05_cross_family.ipynb", "each": "source_dataset",
         "parameters": {"source_dataset": {"platforms": "gpu_*"}, "target_dataset": "{stem}"}},
        {"notebook": "notebooks/04_screening.ipynb", "each": "dataset",
         "parameters": {"dataset": {"platforms": "tpu_*"}}},
        {"notebook": "notebooks/04_screening.ipynb", "each": "dataset",
         "parameters": {"dataset": ["data/cpu_epyc_zen3_2c/zoo/rows.parquet",
                                    str(user / "gpu_a100" / "design" / "rows.parquet"),
                                    "cpu_xeon_gnr_2c/steady_kept", "runs/x.parquet"]}}]}}
    runs = load_runs("gpu", _runs_file(tmp_path, spec))
    assert [r.name for r in runs] == [
        "05_cross_family-gpu_a100", "05_cross_family-gpu_nvidia_h200",  # 04 on tpu_*: none
        "04_screening-cpu_epyc_zen3_2c_zoo", "04_screening-gpu_a100",
        "04_screening-cpu_xeon_gnr_2c_steady_kept", "04_screening-x"]
    assert runs[1].parameters == {"source_dataset": "gpu_nvidia_h200",
                                  "target_dataset": "gpu_nvidia_h200"}
    assert runs[1].subdir == "gpu_nvidia_h200"


def test_globs_and_each_expand_over_the_files_found(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("gpu_a100", "gpu_h100", "cpu_x"):
        (data / f"{name}.parquet").write_bytes(b"")
    pattern = str(data / "*gpu*.parquet")
    spec = {"profiles": {"gpu": [
        {"notebook": "notebooks/01_characterization.ipynb",
         "parameters": {"data_paths": {"glob": pattern}}},
        {"notebook": "notebooks/05_cross_family.ipynb", "each": "source_dataset",
         "parameters": {"source_dataset": {"glob": pattern},
                        "target_dataset": "data/new_families/{stem}.parquet"}},
        {"notebook": "notebooks/04_screening.ipynb", "each": "dataset",
         "parameters": {"dataset": {"glob": str(tmp_path / "none*.parquet")}}}]}}
    runs = load_runs("gpu", _runs_file(tmp_path, spec))
    assert [r.name for r in runs] == ["01_characterization", "05_cross_family-gpu_a100",
                                      "05_cross_family-gpu_h100"]  # 04: no file, skipped
    assert runs[0].parameters["data_paths"] == [str(data / "gpu_a100.parquet"),
                                                str(data / "gpu_h100.parquet")]
    assert runs[2].parameters == {"source_dataset": str(data / "gpu_h100.parquet"),
                                  "target_dataset": "data/new_families/gpu_h100.parquet"}
    assert runs[2].subdir == "gpu_h100"
    spec["profiles"]["gpu"] = [{"notebook": "notebooks/04_screening.ipynb", "each": "dataset",
                                "parameters": {"dataset": "data/x.parquet"}}]
    with pytest.raises(ReproduceError, match="'each: dataset' needs"):
        load_runs("gpu", _runs_file(tmp_path, spec))


#: The role each notebook reads a data parameter as (carb_lib.dataset.catalog.resolve).
DATA_ROLES = {"dataset": ("rows", "resnet"), "source_dataset": ("rows", "resnet"),
              "target_dataset": ("rows", "!resnet"), "source_reference": ("reference", "resnet"),
              "target_reference": ("reference", "!resnet"), "target_audit": ("audit", "!resnet"),
              "kernel_bench": ("kernels", None), "reference": ("reference", "resnet"),
              "cache_probe": ("cache_probe", None)}


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_the_study_profiles_name_platforms_and_campaigns_not_paths(profile):
    from carb_lib.dataset.catalog import load_catalog, resolve

    known = set(load_catalog().platforms())
    runs = load_runs(profile)
    named = 0
    for run in runs:
        for key, value in run.parameters.items():
            values = value if isinstance(value, list) else [value]
            assert not any(isinstance(v, str) and v.endswith((".parquet", ".csv"))
                           for v in values), (run.name, key, value)
            if key in DATA_ROLES:
                role, family = DATA_ROLES[key]
                for v in values:
                    assert v.split("/")[0] in known, (run.name, key, v)
                    found = resolve(v, role, family=family)
                    named += 1
                    # the files every study run needs exist; the H200's optional ones are absent
                    if found is None:
                        assert run.name == "05_cross_family-gpu_nvidia_h200" and key in (
                            "target_reference", "target_audit", "kernel_bench"), (run.name, key)
                    else:
                        assert (REPO / found).is_file(), (run.name, key, found)
            if key == "platforms":
                assert set(value) <= known
    assert named >= (4 if profile == "quick" else 14)


def test_the_gpu_profile_reruns_every_notebook_reading_measured_rows_on_gpu_files():
    spec = yaml.safe_load((REPO / "papermill_runs.yaml").read_text())
    entries = {Path(e["notebook"]).stem: e for e in spec["profiles"]["gpu"]["notebooks"]}
    assert set(entries) == {"01_characterization", "02_transfer", "03_carb", "04_screening",
                            "05_cross_family"}
    listed = {name: [v for v in e["parameters"].values() if isinstance(v, dict)]
              for name, e in entries.items()}
    for name in ("01_characterization", "03_carb", "04_screening", "05_cross_family"):
        assert listed[name] == [{"platforms": "gpu_*"}], name
    # no data path: every other value names the platform ({stem}) or is not data
    for e in entries.values():
        assert not any(isinstance(v, str) and v.startswith("data/")
                       for v in e.get("parameters", {}).values())
    for e in entries.values():
        assert set(e.get("parameters", {})) <= set(notebook_parameters(REPO / e["notebook"]))


# ---------------------------------------------------------------------------- plain kernel
def _papermill_from_notebooks(nb: str, out: Path, params: dict, monkeypatch
                              ) -> nbformat.NotebookNode:
    """Execute ``nb`` as Jupyter would start it: a plain python3 kernel in notebooks/ (the
    explorers static, as in any papermill run: a kernel without a front-end has no widgets)."""
    import papermill as pm

    for key, value in R.RUN_ENV.items():
        monkeypatch.setenv(key, value)
    return pm.execute_notebook(str(REPO / nb), str(out), parameters=params,
                               kernel_name="python3", cwd=str(REPO / "notebooks"),
                               progress_bar=False)


@pytest.mark.slow
def test_a_plain_kernel_started_in_notebooks_reads_data(tmp_path, monkeypatch):
    """Jupyter starts a kernel in the notebook's folder: notebook 01 still finds data/ (the
    measured files, not the SYNTHETIC demo), given as a user writes it, relative to the
    repository root. One file at 5 resamples: few enough that a median can fall outside its
    bootstrap interval, which the effects figure draws."""
    from carb_lib.app.record import read_glued

    out = tmp_path / "01.ipynb"
    _papermill_from_notebooks("notebooks/01_characterization.ipynb", out, {
        "quick": True, "n_boot": 5, "data_paths": ["data/cpu_epyc_zen3_2c/design/rows.parquet"],
        "fig_dir": str(tmp_path / "figures"),
        "results_dir": str(tmp_path / "results")}, monkeypatch)
    rec = read_glued(out)
    assert rec["synthetic"] is False
    assert rec["platforms"] == ["cpu_epyc_zen3_2c"]
    assert (tmp_path / "results/characterization/scaling.csv").is_file()


@pytest.mark.slow
def test_missing_data_stops_a_notebook_with_one_line(tmp_path, monkeypatch):
    from papermill.exceptions import PapermillExecutionError

    out = tmp_path / "03.ipynb"
    with pytest.raises(PapermillExecutionError) as info:
        _papermill_from_notebooks("notebooks/03_carb.ipynb", out, {
            "dataset": "data/nope.parquet", "fig_dir": str(tmp_path / "f"),
            "results_dir": str(tmp_path / "r")}, monkeypatch)
    assert info.value.ename == "MissingDataError"
    assert "data/nope.parquet does not exist" in info.value.evalue
    assert "synthetic_demo=True" in info.value.evalue
    errors = [o for c in nbformat.read(str(out), as_version=4).cells if c.cell_type == "code"
              for o in c.outputs if o.output_type == "error"]
    assert len(errors) == 1 and len(errors[0].traceback) == 1  # one line, no traceback
    assert not (tmp_path / "r").exists()


def test_the_root_is_found_from_a_subfolder_and_absent_elsewhere(tmp_path, monkeypatch):
    from carb_lib.app.lab import (
        MissingDataError,
        NotebookSetupError,
        enter_repo_root,
        require_files,
    )

    monkeypatch.chdir(REPO / "notebooks")
    assert enter_repo_root() == REPO.resolve() and Path.cwd() == REPO.resolve()
    with pytest.raises(NotebookSetupError, match="no CARB checkout above"):
        enter_repo_root(tmp_path)
    with pytest.raises(MissingDataError, match="no measured data"):
        require_files([], "measured data")
    assert require_files("pyproject.toml") == [Path("pyproject.toml")]


def test_claims_of_runs_over_several_files_join_the_run_table(tmp_path):
    from carb_lib.core.claims import write_claims

    results = tmp_path / "out/results"
    row = {"claim_id": "carb_r2_latency_ms", "claim": "c", "paper_value": 0.992,
           "our_value": 0.99, "n": 100, "testable": True, "reason": "r"}
    write_claims(results, "01_characterization", [{**row, "platform": "gpu_a", "claim_id": "fp16_memory_ratio"}])
    write_claims(results / "gpu_a", "03_carb", [{**row, "platform": "gpu_a"}])
    write_claims(results / "gpu_b", "03_carb", [{**row, "platform": "gpu_b"}])
    run = tmp_path / "run"
    run.mkdir()
    copied = R._collect_claims(results, run)
    assert [p.name for p in copied] == ["claims_vs_paper.csv"]
    import pandas as pd

    table = pd.read_csv(results / "claims.csv")
    # each run's rows named by its label (the notebook and the file's stem)
    assert sorted(table["source"]) == ["01_characterization", "03_carb-gpu_a", "03_carb-gpu_b"]
    assert sorted(table["platform"]) == ["gpu_a", "gpu_a", "gpu_b"]
    assert len(pd.read_csv(run / "claims_vs_paper.csv")) == 3


# ---------------------------------------------------------------------------- a failing notebook
def _tiny_notebook(path: Path, source: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(source)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, str(path))
    return path


def test_a_failing_notebook_still_leaves_the_index_and_summary_of_those_that_ran(tmp_path):
    good = _tiny_notebook(tmp_path / "a_good.ipynb",
                          "from carb_lib.app.record import glue\nglue('answer', 42)")
    bad = _tiny_notebook(tmp_path / "b_bad.ipynb", "raise ValueError('too few rows of family x')")
    after = _tiny_notebook(tmp_path / "c_after.ipynb", "y = 2")
    runs = _runs_file(tmp_path, {"profiles": {"t": [{"notebook": str(p)}
                                                     for p in (good, bad, after)]}})
    run_dir = tmp_path / "run"
    with pytest.raises(ReproduceError) as info:
        run_profile("t", runs_file=runs, run_dir=run_dir)
    message = str(info.value)
    assert "b_bad" in message and "too few rows of family x" in message
    assert "not run: c_after" in message and "index.html" in message
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["a_good"] == {"answer": 42}
    assert summary["_run"]["failed"]["notebook"] == "b_bad"
    assert summary["_run"]["failed"]["not_run"] == ["c_after"]
    pages = json.loads((run_dir / "pages.json").read_text())
    assert [p["name"] for p in pages] == ["a_good"]
    index = (run_dir / "index.html").read_text()
    assert "a_good.html" in index and "Notebook b_bad failed" in index
    assert "too few rows of family x" in index
    assert not (run_dir / "c_after.ipynb").exists()


# ---------------------------------------------------------------------------- what the terminal shows
def test_the_kernel_output_goes_to_its_log_and_the_run_ends_with_one_closing_line(
        tmp_path, capfd, caplog):
    """The kernel's own log (ipykernel's warning about TCP without encryption) and what code
    writes to the kernel's file descriptors stay out of the terminal: they go to
    <notebook>.kernel.log; the cell's own output is in the notebook. The run's last line names
    the count, the wall time and the index."""
    import logging

    nb = _tiny_notebook(tmp_path / "a_noise.ipynb",
                        "import os\nos.write(2, b'LIBNOISE on fd 2\\n')\n"
                        "os.write(1, b'LIBNOISE on fd 1\\n')\nprint('printed by the cell')")
    runs = _runs_file(tmp_path, {"profiles": {"t": [{"notebook": str(nb)}]}})
    caplog.set_level(logging.INFO, logger="carb.reproduce")
    run_profile("t", runs_file=runs, run_dir=tmp_path / "run")
    terminal = "".join(capfd.readouterr())
    assert "LIBNOISE" not in terminal and "IPKernelApp" not in terminal
    assert "without encryption" not in terminal
    log = (tmp_path / "run" / f"a_noise{R.KERNEL_LOG}").read_text()
    assert "LIBNOISE on fd 2" in log and "LIBNOISE on fd 1" in log
    executed = nbformat.read(str(tmp_path / "run" / "a_noise.ipynb"), as_version=4)
    shown = "".join(o.get("text", "") for o in executed.cells[-1].outputs)
    assert "printed by the cell" in shown
    last = caplog.records[-1].getMessage()
    assert re.fullmatch(r"reproduce: 1 notebook ran, none failed, in \d+ s; index: "
                        + re.escape(str(tmp_path / "run" / "index.html")), last), last


def test_a_kernel_that_dies_is_named_with_its_log(tmp_path, caplog):
    import logging

    good = _tiny_notebook(tmp_path / "a_good.ipynb", "y = 2")
    dies = _tiny_notebook(tmp_path / "b_dies.ipynb", "import os\nos._exit(3)")
    after = _tiny_notebook(tmp_path / "c_after.ipynb", "y = 2")
    runs = _runs_file(tmp_path, {"profiles": {"t": [{"notebook": str(p)}
                                                     for p in (good, dies, after)]}})
    caplog.set_level(logging.INFO, logger="carb.reproduce")
    with pytest.raises(ReproduceError) as info:
        run_profile("t", runs_file=runs, run_dir=tmp_path / "run")
    message = " ".join(str(info.value).split())
    assert "b_dies.ipynb could not run: Kernel died" in message
    assert f"(the kernel's own output is in {tmp_path / 'run' / 'b_dies.kernel.log'})" in message
    assert "IPKernelApp" not in message  # the kernel's routine warning is not its error
    last = caplog.records[-1].getMessage()
    assert re.fullmatch(r"reproduce: 1 notebook ran, 1 failed \(b_dies\), 1 not run, in \d+ s; "
                        r"index: .*/run/index\.html", last), last


def test_a_kernel_that_cannot_start_shows_its_error(tmp_path, monkeypatch):
    """The kernel's stderr is in its log, and its last line in the one-line error."""
    import sys

    spec = tmp_path / "jupyter" / "kernels" / "broken"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-c", "import sys; sys.exit('kernel boom: no such library')",
                 "{connection_file}"],
        "display_name": "broken", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    nb = _tiny_notebook(tmp_path / "a.ipynb", "y = 2")
    runs = _runs_file(tmp_path, {"profiles": {"t": [{"notebook": str(nb)}]}})
    with pytest.raises(ReproduceError, match=r"a\.ipynb could not run: .*the kernel's last output "
                       r"line: 'kernel boom: no such library' \(the kernel's own output is in "):
        run_profile("t", runs_file=runs, run_dir=tmp_path / "run", kernel_name="broken")


def test_closing_line_counts_and_times():
    assert R.closing_line(8, 1503.4, "/x/index.html") == \
        "reproduce: 8 notebooks ran, none failed, in 25 min 3 s; index: /x/index.html"
    assert R.closing_line(0, 4.2, "/x/index.html", {"notebook": "00_a", "not_run": []}) == \
        "reproduce: 0 notebooks ran, 1 failed (00_a), in 4 s; index: /x/index.html"
    assert R.closing_line(1, 7300, R.REPO_ROOT / "runs/q/index.html",
                          {"notebook": "b", "not_run": ["c", "d"]}) == \
        "reproduce: 1 notebook ran, 1 failed (b), 2 not run, in 2 h 1 min; index: runs/q/index.html"
