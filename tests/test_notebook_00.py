"""Run notebook 00 through the reproduce runner (quick profile) and check what it records."""

import pytest

from carb_lib.app.reproduce import ReproduceError, load_runs, run_profile


@pytest.mark.slow
def test_notebook_00_quick(tmp_path):
    summary = run_profile("quick", only=["00_design"], run_dir=tmp_path / "runs",
                          out_root=tmp_path / "out")
    rec = summary["00_design_space"]
    assert rec["n_configs"] == 17_280 and rec["n_unique_config_ids"] == 17_280
    assert 8.1 < rec["resnet50_gflops"] < 8.3
    assert rec["resnet50_params"] == 25_557_032
    assert rec["n_checked"] >= 20 and rec["n_mismatch"] == 0
    assert (tmp_path / "out/figures/00_static_features.png").exists()
    assert (tmp_path / "out/figures/00_analytic_vs_measured.pdf").exists()
    assert (tmp_path / "runs/00_design_space.ipynb").exists()
    assert (tmp_path / "runs/summary.json").exists()


def test_every_profile_entry_is_a_parameterized_notebook(repo_root):
    import nbformat

    # the same notebooks (the full profile runs 03-05 on the shipped GPU rows as well)
    quick = {r.notebook for r in load_runs("quick")}
    full = {r.notebook for r in load_runs("full")}
    assert quick == full, "quick and full profiles must list the same notebooks"
    for run in load_runs("full"):
        nb = nbformat.read(str(repo_root / run.notebook), as_version=4)
        tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(tagged) == 1, f"{run.notebook} needs exactly one cell tagged 'parameters'"


def test_bad_profile_and_failing_notebook(tmp_path):
    with pytest.raises(ReproduceError, match="profile 'nope'"):
        load_runs("nope")
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell("raise ValueError('boom')")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    bad = tmp_path / "bad.ipynb"
    nbformat.write(nb, bad)
    runs = tmp_path / "runs.yaml"
    runs.write_text(f"profiles:\n  quick:\n    - notebook: {bad}\n      parameters: {{x: 2}}\n")
    with pytest.raises(ReproduceError, match=r"failed in cell 2 .*raise ValueError.*ValueError: boom"):
        run_profile("quick", runs_file=runs, run_dir=tmp_path / "r")
