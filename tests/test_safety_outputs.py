"""One rule for every output path (carb_lib.core.safe_io): never an input, never a foreign file
replaced without --force (then a .bak), written atomically, checked before any work starts.

SYNTHETIC data and tiny models; every command runs in-process through typer's CliRunner.
"""

from __future__ import annotations

import json
import warnings

import nbformat
import pandas as pd
import pytest
from carb_synthetic import make_carb_synthetic
from cli_helpers import one_line_error
from typer.testing import CliRunner

from carb_lib.app.cli import app
from carb_lib.core.safe_io import OutputError, check_output, same_file
from carb_lib.ensemble import PRESETS, CARBRegressor, load_model, save_model

runner = CliRunner()


@pytest.fixture(scope="module")
def data():
    return make_carb_synthetic(240, seed=2, energy=False, telemetry=False,
                               platform="synthetic_cpu")  # fmt: skip


@pytest.fixture(scope="module")
def model_file(data, tmp_path_factory):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        m = CARBRegressor(**PRESETS["test"]).fit(data)
    return save_model(m, tmp_path_factory.mktemp("model") / "m.joblib")


def _configs(data, path):
    data[["family", "block", "depth", "width", "early_downsample", "resolution", "batch",
          "precision", "num_classes"]].head(5).to_csv(path, index=False)  # fmt: skip
    return path


# ------------------------------------------------------------------ the rule itself
def test_check_output_rules(tmp_path):
    a = tmp_path / "a.csv"
    a.write_text("x\n1\n")
    with pytest.raises(OutputError, match="same file as --data"):
        check_output(tmp_path / "sub" / ".." / "a.csv", inputs=[("--data", a)])
    with pytest.raises(OutputError, match="already exists and is not an output of carb x"):
        check_output(a, command="carb x")
    assert check_output(a, force=True) is True  # replaced, with a backup
    assert check_output(a, own=lambda p: True) is False  # the command's own: no backup
    assert check_output(tmp_path / "new.csv") is False
    with pytest.raises(OutputError, match="is a folder"):
        check_output(tmp_path)
    with pytest.raises(OutputError, match="is a file, not a folder"):
        check_output(a / "x.csv")
    (tmp_path / "l.csv").symlink_to(a)
    assert same_file(tmp_path / "l.csv", a)


# ------------------------------------------------------------------------------ fit
def test_fit_refuses_its_own_data_as_out_and_leaves_it(tmp_path, data):
    d = tmp_path / "small.parquet"
    data.to_parquet(d)
    before = d.read_bytes()
    one_line_error(runner.invoke(app, ["fit", "--data", str(d), "--out", str(d), "--quick"]),
                   "same file as --data")
    assert d.read_bytes() == before and not (tmp_path / "small.parquet.json").exists()


def test_fit_refuses_a_foreign_out_unless_force_then_keeps_a_backup(tmp_path, data):
    d = tmp_path / "d.parquet"
    data.to_parquet(d)
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    one_line_error(runner.invoke(app, ["fit", "--data", str(d), "--out", str(notes), "--quick"]),
                   "notes.txt already exists", "--force")
    assert notes.read_text() == "my notes\n"
    res = runner.invoke(app, ["fit", "--data", str(d), "--out", str(notes), "--quick", "--force"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "notes.txt.bak").read_text() == "my notes\n"
    assert load_model(notes).platform_ == "synthetic_cpu"
    # a previous model of carb fit is replaced without --force (and without a backup)
    res = runner.invoke(app, ["fit", "--data", str(d), "--out", str(notes), "--quick"])
    assert res.exit_code == 0, res.output


def test_fit_refuses_a_foreign_file_where_the_metadata_goes(tmp_path, data):
    d = tmp_path / "d.parquet"
    data.to_parquet(d)
    (tmp_path / "m.joblib.json").write_text('{"mine": 1}')
    one_line_error(runner.invoke(app, ["fit", "--data", str(d), "--out",
                                       str(tmp_path / "m.joblib"), "--quick"]),
                   "m.joblib.json already exists")  # fmt: skip
    assert json.loads((tmp_path / "m.joblib.json").read_text()) == {"mine": 1}


def test_a_failed_save_leaves_the_previous_model_and_its_metadata(tmp_path, model_file,
                                                                   monkeypatch):
    import shutil

    import skops.io as sio

    path = tmp_path / "m.joblib"
    shutil.copy(model_file, path)
    shutil.copy(str(model_file) + ".json", str(path) + ".json")
    before, side = path.read_bytes(), (tmp_path / "m.joblib.json").read_bytes()
    model = load_model(path)

    def full_disk(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sio, "dumps", full_disk)
    with pytest.raises(OSError):
        save_model(model, path)
    assert path.read_bytes() == before and (tmp_path / "m.joblib.json").read_bytes() == side
    assert not list(tmp_path.glob(".tmp-*"))


# -------------------------------------------------------------------------- predict
def test_predict_refuses_configs_as_out_and_foreign_out(tmp_path, data, model_file):
    c = _configs(data, tmp_path / "c.csv")
    before = c.read_text()
    one_line_error(runner.invoke(app, ["predict", "--model", str(model_file), "--configs", str(c),
                                       "--out", str(c)]), "same file as --configs")  # fmt: skip
    assert c.read_text() == before
    other = tmp_path / "table.csv"
    other.write_text("a,b\n1,2\n")
    one_line_error(runner.invoke(app, ["predict", "--model", str(model_file), "--configs", str(c),
                                       "--out", str(other)]), "already exists")  # fmt: skip
    res = runner.invoke(app, ["predict", "--model", str(model_file), "--configs", str(c),
                              "--out", str(other), "--force"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (tmp_path / "table.csv.bak").read_text() == "a,b\n1,2\n"
    res = runner.invoke(app, ["predict", "--model", str(model_file), "--configs", str(c),
                              "--out", str(other)])  # its own output: replaced
    assert res.exit_code == 0, res.output


# --------------------------------------------------------------------------- screen
def test_screen_refuses_its_candidate_file_as_out(tmp_path, data, model_file):
    cands = _configs(data, tmp_path / "cands.csv")
    before = cands.read_text()
    one_line_error(runner.invoke(app, ["screen", "--model", str(model_file), "--candidates",
                                       str(cands), "--out", str(cands)]),
                   "same file as --candidates")  # fmt: skip
    assert cands.read_text() == before


def test_screen_replaces_its_own_shortlist_but_not_a_foreign_file(tmp_path, data, model_file):
    cands = _configs(data, tmp_path / "cands.csv")
    out = tmp_path / "short.csv"
    args = ["screen", "--model", str(model_file), "--candidates", str(cands), "--out", str(out),
            "--k", "2"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, args)  # a previous shortlist: replaced
    assert res.exit_code == 0, res.output
    foreign = tmp_path / "mine.csv"
    foreign.write_text("x\n1\n")
    one_line_error(runner.invoke(app, args[:-4] + ["--out", str(foreign)]), "already exists")
    assert foreign.read_text() == "x\n1\n"


# ------------------------------------------------------------------------- transfer
def test_transfer_refuses_an_input_as_out_and_a_foreign_out(tmp_path):
    q = tmp_path / "q.csv"
    q.write_text("depth\n18\n")
    base = ["transfer", "--source", str(tmp_path / "s.csv"), "--target-samples",
            str(tmp_path / "t.csv"), "--query", str(q)]
    one_line_error(runner.invoke(app, [*base, "--out", str(q)]), "same file as --query")
    one_line_error(runner.invoke(app, [*base, "--out", str(tmp_path / "s.csv")]),
                   "same file as --source")
    notes = tmp_path / "notes.csv"
    notes.write_text("a\n1\n")
    one_line_error(runner.invoke(app, [*base, "--out", str(notes)]), "already exists")
    assert q.read_text() == "depth\n18\n" and notes.read_text() == "a\n1\n"


# ---------------------------------------------------------------------------- audit
def test_audit_checks_out_before_measuring(tmp_path, data, monkeypatch):
    import carb_lib.measure.audit

    def never(*a, **k):
        raise AssertionError("measured before checking --out")

    monkeypatch.setattr(carb_lib.measure.audit, "audit", never)
    d = tmp_path / "d.parquet"
    data.to_parquet(d)
    blocker = tmp_path / "results.txt"
    blocker.write_text("x")
    one_line_error(runner.invoke(app, ["audit", str(d), "--out", str(blocker)]), "is a file")
    one_line_error(runner.invoke(app, ["audit", str(d), "--out", str(blocker / "sub")]),
                   "cannot create the folder")
    one_line_error(runner.invoke(app, ["audit", str(d), "--out", str(tmp_path)]),
                   "overlaps DATASET")


# -------------------------------------------------------------------------- publish
def _run(folder):
    folder.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A title")]
    nbformat.write(nb, str(folder / "00_a.ipynb"))
    (folder / "claims_vs_paper.csv").write_text(  # copied by publish into --dest
        "claim,paper (reported),ours,ours 95% CI,n,n counts,platform,verdict,why,claim_id,source\n"
        "a claim,1.0,1.0,,5,rows,p,supported,why,c1,00_a\n")
    return folder


def test_publish_refuses_a_dest_holding_user_files(tmp_path):
    run = _run(tmp_path / "runs" / "quick-1")
    dest = tmp_path / "thesis"
    dest.mkdir()
    (dest / "thesis.tex").write_text("\\chapter{One}")
    one_line_error(runner.invoke(app, ["publish", str(run), "--dest", str(dest)]),
                   "thesis.tex", "did not write")
    assert (dest / "thesis.tex").read_text() == "\\chapter{One}"


def test_publish_refuses_the_run_itself_or_a_folder_inside_it(tmp_path):
    run = _run(tmp_path / "runs" / "quick-1")
    for dest in (run, run / "pages", tmp_path / "runs"):
        one_line_error(runner.invoke(app, ["publish", str(run), "--dest", str(dest)]), "overlaps")
    assert (run / "00_a.ipynb").exists()


def test_publish_swaps_a_fresh_folder_and_a_failure_keeps_the_old_pages(tmp_path):
    run = _run(tmp_path / "runs" / "quick-1")
    dest = tmp_path / "docs" / "run"
    res = runner.invoke(app, ["publish", str(run), "--dest", str(dest)])
    assert res.exit_code == 0, res.output
    before = sorted(p.name for p in dest.iterdir())
    assert {"00_a.html", "index.html", "claims_vs_paper.csv"} <= set(before)
    res = runner.invoke(app, ["publish", str(run), "--dest", str(dest), "--max-mb", "0.000001"])
    assert res.exit_code == 1 and "MB" in res.output
    assert sorted(p.name for p in dest.iterdir()) == before  # the old pages, untouched
    res = runner.invoke(app, ["publish", str(run), "--dest", str(dest)])  # its own pages
    assert res.exit_code == 0, res.output
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(".")]


def test_predictions_keep_the_old_file_when_writing_fails(tmp_path, data, model_file,
                                                          monkeypatch):
    c = _configs(data, tmp_path / "c.csv")
    out = tmp_path / "p.parquet"
    assert runner.invoke(app, ["predict", "--model", str(model_file), "--configs", str(c),
                               "--out", str(out)]).exit_code == 0  # fmt: skip
    before = out.read_bytes()

    def full_disk(self, *a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full_disk)
    res = runner.invoke(app, ["predict", "--model", str(model_file), "--configs", str(c),
                              "--out", str(out)])  # fmt: skip
    assert res.exit_code == 1 and "No space left" in res.output
    assert out.read_bytes() == before
