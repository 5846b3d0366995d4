"""Faults of a sweep of the command line, each checked through typer's CliRunner or the Python
API: the one output rule (own files, numbered backups, the checkout's shipped folders, whole
sets), campaign folders that keep their identity, results that cannot lie, a user network that
ends the process, and errors as promised (one line, exit code 1).

Rows are SYNTHETIC; nothing is measured (a refused command stops before measuring)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import test_fault_sweep_2 as sweep2
from cli_helpers import one_line_error
from typer.testing import CliRunner

from carb_lib.app.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
CONFIG = sweep2.CONFIG


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# ------------------------------------------------------------------ shared tiny model
data, model_file, _fit, _ok = sweep2.data, sweep2.model_file, sweep2._fit, sweep2._ok


@pytest.fixture(scope="module")
def ok_rows(data):
    return _ok(data)


@pytest.fixture
def cands(tmp_path, ok_rows):
    f = tmp_path / "c.csv"
    ok_rows[CONFIG].head(20).to_csv(f, index=False)
    return f


# ===================================================================== the output rule
@pytest.mark.parametrize("command", [["zoo", "list"], ["zoo", "predict", "--model", "M"],
                                     ["zoo", "configs"], ["zoo", "screen", "--model", "M"]])
def test_zoo_commands_refuse_to_replace_a_users_file(tmp_path, command):
    mine = tmp_path / "mine.csv"
    mine.write_text("my,own\n1,2\n")
    args = [str(tmp_path / "missing.skops") if a == "M" else a for a in command]
    one_line_error(runner.invoke(app, [*args, "--out", str(mine)]),
                   f"--out {mine} already exists", "--force")
    assert mine.read_text() == "my,own\n1,2\n" and listing(tmp_path) == ["mine.csv"]


def test_force_keeps_numbered_backups_and_never_overwrites_one(tmp_path):
    mine = tmp_path / "list.csv"
    for text in ("first,own\n", "second,own\n"):
        mine.write_text(text)
        res = runner.invoke(app, ["zoo", "list", "--out", str(mine), "--force"])
        assert res.exit_code == 0, res.output
    assert (tmp_path / "list.csv.bak").read_text() == "first,own\n"
    assert (tmp_path / "list.csv.bak.1").read_text() == "second,own\n"
    res = runner.invoke(app, ["zoo", "list", "--out", str(mine)])  # its own output: replaced
    assert res.exit_code == 0 and listing(tmp_path) == ["list.csv", "list.csv.bak",
                                                        "list.csv.bak.1"]


def test_screen_refuses_to_write_into_the_checkouts_results_or_figures(model_file, cands):
    out = ROOT / "results" / "screening" / "paper_style_shortlist.csv"
    files = [out, out.with_name("paper_style_shortlist_front.csv"),
             out.with_name("paper_style_shortlist_summary.json")]
    before = [f.read_bytes() for f in files]
    folder = listing(out.parent)
    for extra in ([], ["--force"]):
        one_line_error(runner.invoke(app, ["screen", "--model", str(model_file), "--candidates",
                                           str(cands), "--out", str(out), *extra]),
                       "inside the checkout's results/")
    assert [f.read_bytes() for f in files] == before and listing(out.parent) == folder
    figures = listing(ROOT / "figures")
    one_line_error(runner.invoke(app, ["screen", "--model", str(model_file), "--candidates",
                                       str(cands), "--out", str(cands.parent / "s.csv"),
                                       "--fig-dir", str(ROOT / "figures")]),
                   "--fig-dir", "inside the checkout's figures/")
    assert listing(ROOT / "figures") == figures and not (cands.parent / "s.csv").exists()


def test_publish_refuses_a_dest_holding_the_users_own_html(tmp_path):
    from carb_lib.core.safe_io import OutputError, check_publish_dest

    run, dest = tmp_path / "run", tmp_path / "pages"
    run.mkdir()
    dest.mkdir()
    (dest / "notes.html").write_text("<p>mine</p>")
    with pytest.raises(OutputError, match="notes.html"):
        check_publish_dest(dest, run)
    # pages an earlier publish listed in its pages.json are its own
    (dest / "pages.json").write_text(json.dumps([{"name": "notes", "page": "notes.html"}]))
    (dest / "index.html").write_text("<p>index</p>")
    check_publish_dest(dest, run)


# ============================================================== merge: campaign folders
@pytest.fixture
def parts_folder(tmp_path):
    from test_safety_merge import parts, syn_rows

    from carb_lib.families.space import paper_grid

    return parts(tmp_path / "parts", syn_rows(paper_grid().iloc[:4]))


@pytest.mark.parametrize("option", ["OUT", "--reference-out"])
def test_merge_refuses_an_output_inside_the_parts_folder(tmp_path, parts_folder, option):
    from carb_lib.dataset.schema import read_dataset

    before = listing(parts_folder)
    inside = parts_folder / "merged.parquet"
    args = ([str(inside)] if option == "OUT" else
            [str(tmp_path / "d.parquet"), "--reference-out", str(inside)])
    one_line_error(runner.invoke(app, ["merge", str(parts_folder), *args]),
                   f"{option} {inside} is inside the campaign folder")
    assert listing(parts_folder) == before and not (tmp_path / "d.parquet").exists()
    res = runner.invoke(app, ["merge", str(parts_folder), str(tmp_path / "d.parquet")])
    assert res.exit_code == 0, res.output
    assert len(read_dataset(tmp_path / "d.parquet")) == 4  # one row per config, no more


def test_merge_with_a_reference_out_it_cannot_write_writes_nothing(tmp_path, parts_folder):
    ref = tmp_path / "ref.parquet"
    pd.DataFrame({"mine": [1, 2]}).to_parquet(ref)  # the user's table, not reference rows
    one_line_error(runner.invoke(app, ["merge", str(parts_folder), str(tmp_path / "d.parquet"),
                                       "--reference-out", str(ref)]),
                   f"--reference-out {ref} already exists")
    assert not (tmp_path / "d.parquet").exists() and list(pd.read_parquet(ref)) == ["mine"]


def test_a_part_with_columns_a_dataset_lacks_is_named_not_an_internal_error(tmp_path):
    from test_safety_merge import syn_rows

    from carb_lib.families.space import paper_grid

    folder = tmp_path / "parts"
    folder.mkdir()
    pd.DataFrame(syn_rows(paper_grid().iloc[:2])).assign(colour="red").to_parquet(
        folder / "results-x-000000.parquet")
    one_line_error(runner.invoke(app, ["merge", str(folder), str(tmp_path / "d.parquet")]),
                   "results-x-000000.parquet", "['colour']")
    assert not (tmp_path / "d.parquet").exists()


# ============================================================ profile: folder identity
@pytest.fixture
def torch_threads():
    import torch

    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


FAST = '{"cpu_warmup_iters": 1, "cpu_min_iters": 2, "cpu_min_window_s": 0.01}'


def test_a_refused_resume_leaves_protocol_json_as_it_was(tmp_path, torch_threads):
    from carb_lib.measure.profiling import Protocol

    out = tmp_path / "camp"
    out.mkdir()
    saved = {**Protocol(threads=1, **json.loads(FAST)).to_dict(), "threads": 1}
    (out / "protocol.json").write_text(json.dumps(saved, indent=1) + "\n")
    before = (out / "protocol.json").read_bytes()
    res = runner.invoke(app, ["profile", "--out", str(out), "--threads", "1", "--n-sample", "1",
                              "--no-progress", "--protocol", '{"cpu_min_window_s": 0.5}'])
    one_line_error(res, "cpu_min_window_s=0.01", "cpu_min_window_s=0.5")
    assert (out / "protocol.json").read_bytes() == before and listing(out) == ["protocol.json"]


def test_a_protocol_field_added_since_the_campaign_started_does_not_refuse_its_resume(tmp_path):
    from carb_lib.measure.campaign_folder import check_campaign_folder

    (tmp_path / "protocol.json").write_text(json.dumps({"n_windows": 3, "threads": 1}))
    now = {"n_windows": 3, "threads": 1, "a_new_field": True}
    check_campaign_folder(tmp_path, now, platform=None, threads=1, cpu=True)
    with pytest.raises(ValueError, match="n_windows=3"):
        check_campaign_folder(tmp_path, {**now, "n_windows": 5}, platform=None, threads=1,
                              cpu=True)


def test_rows_of_another_thread_count_are_refused_under_any_platform_name(tmp_path,
                                                                          torch_threads):
    out = tmp_path / "camp"
    out.mkdir()
    pd.DataFrame({"platform": ["cpu_a_1t"] * 2, "config_id": ["a", "b"], "status": ["ok"] * 2,
                  "threads": [1, 1]}).to_parquet(out / "results-old-000000.parquet")
    res = runner.invoke(app, ["profile", "--out", str(out), "--platform", "cpu_b_2t",
                              "--threads", "2", "--n-sample", "1", "--no-progress"])
    one_line_error(res, "timed with 1 thread(s)", "would time with 2", "'cpu_a_1t'")
    assert listing(out) == ["results-old-000000.parquet"]  # no protocol.json, no part


def test_profile_refuses_an_out_inside_the_checkouts_data(torch_threads):
    before = listing(ROOT / "data")
    one_line_error(runner.invoke(app, ["profile", "--out", str(ROOT / "data"), "--n-sample",
                                       "1", "--threads", "1", "--no-progress"]),
                   "inside the checkout's data/")
    assert listing(ROOT / "data") == before


def test_more_threads_than_the_process_may_use_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    one_line_error(runner.invoke(app, ["profile", "--out", str(tmp_path / "c"), "--threads", "3",
                                       "--n-sample", "1", "--no-progress"]),
                   "--threads 3", "may use 2 CPU(s)")
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("option, fragment", [(["--shard", "5/4"], "--shard '5/4'"),
                                              (["--device", "tpu"], "--device tpu")])
def test_a_bad_shard_or_device_creates_no_out_folder(tmp_path, option, fragment, torch_threads):
    one_line_error(runner.invoke(app, ["profile", "--out", str(tmp_path / "c"), "--n-sample", "1",
                                       "--threads", "1", "--protocol", FAST, *option]), fragment)
    assert not (tmp_path / "c").exists()


# ================================================================== results that lie
@pytest.fixture(scope="module")
def zoo_cache(tmp_path_factory):
    from carb_lib.families import zoo

    folder = tmp_path_factory.mktemp("cache")
    table = zoo.zoo_candidates("resnet18", (1, 2), ("fp32",), (32,), cache_dir=folder).table
    return folder, table


@pytest.mark.parametrize("damage", ["features x1000", "negative flops", "a key twice"])
def test_a_damaged_zoo_cache_row_is_rebuilt_not_trusted(zoo_cache, tmp_path, damage, caplog):
    import shutil

    from carb_lib.families import zoo

    folder, want = zoo_cache
    shutil.copy(zoo.cache_path(folder), zoo.cache_path(tmp_path))
    cache = pd.read_parquet(zoo.cache_path(tmp_path))
    if damage == "features x1000":
        cache.loc[0, ["flops", "params"]] *= 1000
    elif damage == "negative flops":
        cache.loc[0, "flops"] = -cache.loc[0, "flops"]
    else:
        cache = pd.concat([cache, cache.iloc[[0]].assign(flops=1.0)], ignore_index=True)
    cache.to_parquet(zoo.cache_path(tmp_path))
    got = zoo.zoo_candidates("resnet18", (1, 2), ("fp32",), (32,), cache_dir=tmp_path).table
    pd.testing.assert_frame_equal(got, want)
    assert "fail their check" in caplog.text


def test_an_edited_or_swapped_model_sidecar_is_refused(tmp_path, ok_rows):
    from carb_lib.ensemble import ModelFileError, load_model, save_model

    a = save_model(_fit(ok_rows), tmp_path / "a.skops")
    b = save_model(_fit(ok_rows, n_estimators_et=10), tmp_path / "b.skops")
    side_a, side_b = (tmp_path / "a.skops.json").read_text(), (tmp_path / "b.skops.json").read_text()
    (tmp_path / "a.skops.json").write_text(side_b)
    with pytest.raises(ModelFileError, match="describes another model file"):
        load_model(a)
    meta = json.loads(side_a)
    meta.pop("model_sha256")
    meta["platform"] = meta["platform"] + "_edited"
    (tmp_path / "a.skops.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="'platform'"):
        load_model(a)
    (tmp_path / "a.skops.json").write_text(side_a)
    assert load_model(a).platform_ == load_model(b).platform_ == "synthetic_cpu"


@pytest.mark.parametrize("order", [["latency_ms<=10", "latency_ms<=5"],
                                   ["latency_ms<=5", "latency_ms<=10"]])
def test_the_tightest_of_two_budgets_on_one_target_is_the_lower(order):
    from carb_lib.screening import tightest_budget

    report = pd.DataFrame({"budget": order, "metric": "latency_ms",
                           "limit": [float(b.split("<=")[1]) for b in order], "n_fail": 100,
                           "min_upper": 20.0}).set_index("budget")
    assert tightest_budget(report) == "latency_ms<=5"


def test_a_budget_given_twice_is_refused_before_anything_is_written(model_file, cands):
    out = cands.parent / "s" / "s.csv"
    one_line_error(runner.invoke(app, ["screen", "--model", str(model_file), "--candidates",
                                       str(cands), "--out", str(out), "--budget",
                                       "latency_ms<=10", "--budget", "latency_ms<=10"]),
                   "'latency_ms<=10' is given twice")
    assert not out.parent.exists()


@pytest.mark.parametrize("value, fragment", [(-5.0, "is negative"), ("fast", "not a number")])
def test_screen_measured_that_cannot_be_scored_writes_nothing_and_names_its_row(
        model_file, cands, ok_rows, value, fragment):
    meas = ok_rows.head(10).copy()
    meas["latency_ms"] = meas["latency_ms"].astype(object)
    meas.loc[0, "status"] = "error"  # row 0 is not the bad one
    meas.loc[1, "latency_ms"] = value
    f = cands.parent / "meas.csv"
    meas.to_csv(f, index=False)
    out = cands.parent / "s" / "s.csv"
    one_line_error(runner.invoke(app, ["screen", "--model", str(model_file), "--candidates",
                                       str(cands), "--out", str(out), "--k", "2",
                                       "--measured", str(f)]),
                   f"--measured {f}", "row 1", "'latency_ms'", fragment)
    assert not out.parent.exists()


# ============================================================ a network that ends CARB
NETS = '''
import os
import sys

import torch


def exits():
    sys.exit(0)


def hard_exits():
    os._exit(0)


def forward_exits():
    class Net(torch.nn.Module):
        def forward(self, x):
            sys.exit(3)

    return Net()
'''


@pytest.mark.parametrize("factory, fragment", [("exits", "sys.exit(0)"),
                                               ("hard_exits", "os._exit(0)"),
                                               ("forward_exits", "sys.exit(3)")])
def test_a_network_that_calls_exit_fails_predict_with_one_line(tmp_path, model_file, factory,
                                                               fragment):
    (tmp_path / "nets.py").write_text(NETS)
    res = runner.invoke(app, ["predict", "--model", str(model_file), "--module",
                              f"{tmp_path / 'nets.py'}:{factory}", "--input-shape", "3,16,16",
                              "--out", str(tmp_path / "p.csv")])
    one_line_error(res, f"--module {tmp_path / 'nets.py'}:{factory}", fragment)
    assert not (tmp_path / "p.csv").exists()


# ==================================================================== errors as promised
@pytest.mark.parametrize("command", [["screen", "--candidates", "C"], ["zoo", "predict"],
                                     ["zoo", "screen"]])
def test_coverage_1_is_one_error_line(model_file, cands, command):
    args = [str(cands) if a == "C" else a for a in command]
    one_line_error(runner.invoke(app, [*args, "--model", str(model_file), "--out",
                                       str(cands.parent / "s.csv"), "--coverage", "1"]),
                   "--coverage must be in (0, 1)")
    assert not (cands.parent / "s.csv").exists()


def test_an_n_extended_beyond_memory_is_one_error_line(model_file, tmp_path, monkeypatch):
    import importlib

    screen_mod = importlib.import_module("carb_lib.screening.screen")
    monkeypatch.setattr(screen_mod, "_available_memory", lambda: 2**30)
    one_line_error(runner.invoke(app, ["screen", "--model", str(model_file), "--candidates",
                                       "extended", "--n-extended", "1000000000", "--out",
                                       str(tmp_path / "s.csv")]),
                   "--n-extended 1000000000", "GiB", "--cluster")
    assert listing(tmp_path) == []


@pytest.mark.parametrize("args, fragment", [
    (["profile", "--bogus"], "No such option: --bogus"),
    (["screen", "--model", "m", "--k", "many"], "'--k'"),
    (["zoo", "list", "--out"], "'--out' requires an argument"),
])
def test_command_line_parse_errors_are_one_line_with_exit_code_1(args, fragment):
    one_line_error(runner.invoke(app, args), fragment)


def test_a_closed_pipe_ends_quietly():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "carb_lib.app.cli", "zoo", "list"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    proc.stdout.close()  # the reader goes away before the first line
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert err == "", err


def test_the_profilers_notes_are_kept_off_the_terminal(capfd):
    import torch

    from carb_lib.measure.counters import cpu_peak_memory_bytes

    net = torch.nn.Conv2d(3, 4, 3)
    cpu_peak_memory_bytes(net, torch.ones(1, 3, 8, 8))
    os.write(2, b"")
    err = capfd.readouterr().err
    assert "USDT:" not in err and "profiler_start" not in err


# ======================================= found by the command-line sweep (benchmarks/fault_sweep.py)
@pytest.mark.parametrize("resolution", ["7", "2000"])
def test_a_zoo_resolution_outside_8_to_1024_px_is_refused_before_anything_is_written(
        tmp_path, resolution):
    out = tmp_path / "zc.csv"
    one_line_error(runner.invoke(app, ["zoo", "configs", "--networks", "resnet18",
                                       "--resolutions", resolution, "--out", str(out),
                                       "--cache-dir", str(tmp_path / "cache")]),
                   f"--resolutions [{resolution}]", "8..1024 px")
    assert listing(tmp_path) == []  # no config list, no cache row


def test_a_screen_fig_dir_that_is_a_file_is_refused_before_the_shortlist_is_written(
        model_file, cands, tmp_path):
    (tmp_path / "figs").write_text("my notes\n")
    out = tmp_path / "s.csv"
    one_line_error(runner.invoke(app, ["screen", "--model", str(model_file), "--candidates",
                                       str(cands), "--no-quality", "--out", str(out),
                                       "--fig-dir", str(tmp_path / "figs")]),
                   "--fig-dir", "is a file")
    assert listing(tmp_path) == ["c.csv", "figs"]  # no shortlist, _front or _summary.json


@pytest.mark.parametrize("extra, fragment", [([], "--rank-by ranks --model's predictions"),
                                             (["--model-b", "B"], "--rank-by 'nope'")])
def test_screen_refuses_a_rank_by_it_would_ignore_or_not_know(model_file, cands, tmp_path,
                                                              extra, fragment):
    extra = [str(model_file) if a == "B" else a for a in extra]
    one_line_error(runner.invoke(app, ["screen", "--model", str(model_file), "--candidates",
                                       str(cands), "--no-quality", "--out",
                                       str(tmp_path / "s.csv"), "--rank-by", "nope", *extra]),
                   fragment)
    assert listing(tmp_path) == ["c.csv"]


@pytest.mark.parametrize("command", [
    ["profile", "--out", "OUT", "--n-sample", "1", "--threads", "1", "--no-progress"],
    ["noise", "--out", "OUT", "--n-configs", "1", "--repeats", "2", "--threads", "1"],
    ["kernels", "--out", "OUT/k.parquet", "--n", "1", "--no-anchors", "--no-cache-probe"]])
@pytest.mark.parametrize("name", ["", "a/b", "../x"])
def test_a_platform_name_that_cannot_name_a_file_is_refused(tmp_path, command, name,
                                                            torch_threads):
    args = [a.replace("OUT", str(tmp_path / "o")) for a in command]
    one_line_error(runner.invoke(app, [*args, "--platform", name]), f"--platform {name!r}")
    assert listing(tmp_path) == []  # nothing measured, no folder made


def test_an_infinite_profile_timeout_is_refused_like_json_infinity(tmp_path):
    one_line_error(runner.invoke(app, ["profile", "--out", str(tmp_path / "c"), "--threads", "1",
                                       "--n-sample", "1", "--timeout-s", "inf"]),
                   "--timeout-s must be a finite number")
    assert listing(tmp_path) == []


def test_noise_refuses_a_nan_spread_gap(tmp_path):
    one_line_error(runner.invoke(app, ["noise", "--out", str(tmp_path / "n"), "--n-configs", "1",
                                       "--repeats", "2", "--threads", "1", "--spread-gap-s",
                                       "nan"]), "--spread-gap-s must be >= 0 seconds, got nan")
    assert listing(tmp_path) == []


@pytest.mark.parametrize("area", ["results", "figures"])
def test_kernels_refuses_an_out_inside_the_checkouts_results_or_figures(area):
    out = ROOT / area / "carb_sweep_k.parquet"
    one_line_error(runner.invoke(app, ["kernels", "--out", str(out), "--n", "1", "--threads",
                                       "1", "--no-anchors", "--no-cache-probe"]),
                   f"inside the checkout's {area}/", "carb kernels does not write")
    assert not out.exists()


def test_kernels_refuses_an_out_folder_it_cannot_write_before_timing(tmp_path, monkeypatch):
    from carb_lib.kernels import operators

    folder = tmp_path / "ro"
    folder.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == folder
                        else real_access(p, mode, **kw))
    monkeypatch.setattr(operators, "sample_kernels", lambda *a, **k: pytest.fail("timed"))
    one_line_error(runner.invoke(app, ["kernels", "--out", str(folder / "k.parquet"), "--n", "1",
                                       "--threads", "1", "--no-anchors", "--no-cache-probe"]),
                   f"--out {folder / 'k.parquet'}", "is not writable")
    assert listing(tmp_path) == ["ro"]


@pytest.mark.parametrize("opt", ["out_root", "run_dir"])
def test_reproduce_refuses_a_file_as_its_output_folder_before_writing(tmp_path, opt):
    from carb_lib.app.reproduce import ReproduceError, run_profile

    afile = tmp_path / "afile"
    afile.write_text("mine")
    folders = {"out_root": tmp_path / "out", "run_dir": tmp_path / "run", opt: afile}
    with pytest.raises(ReproduceError, match="is a file, not a folder"):
        run_profile("quick", only=["00"], **folders)
    assert afile.read_text() == "mine" and sorted(tmp_path.iterdir()) == [afile]


def test_convert_help_replaces_its_own_output_and_refuses_a_foreign_file_without_force(tmp_path):
    from test_datasets import HELP_DIR

    from carb_lib.core.safe_io import OutputError
    from carb_lib.dataset.readers import convert_help

    out = tmp_path / "help.parquet"
    convert_help(HELP_DIR, out)
    first = out.read_bytes()
    convert_help(HELP_DIR, out)  # a previous conversion: replaced, no backup
    assert out.read_bytes() == first and not list(tmp_path.glob("*.bak*"))
    (tmp_path / "LICENSE-HELP").write_text("my own notes")
    with pytest.raises(OutputError, match="LICENSE-HELP already exists"):
        convert_help(HELP_DIR, out)
    assert (tmp_path / "LICENSE-HELP").read_text() == "my own notes"  # nothing written
    convert_help(HELP_DIR, out, force=True)
    assert (tmp_path / "LICENSE-HELP.bak").read_text() == "my own notes"
    assert (tmp_path / "LICENSE-HELP").read_text() == (HELP_DIR / "LICENSE").read_text()


def test_zoo_rss_refuses_a_table_it_did_not_write_before_probing(tmp_path):
    from typer.testing import CliRunner

    from carb_lib.app.cli import app

    configs = tmp_path / "configs.csv"
    pd.DataFrame({"config_id": ["a"], "family": ["resnet"]}).to_csv(configs, index=False)
    mine = tmp_path / "mine.csv"
    pd.DataFrame({"config_id": ["x"], "latency_ms": [1.0]}).to_csv(mine, index=False)
    before = mine.read_bytes()
    res = CliRunner().invoke(app, ["zoo", "rss", "--configs", str(configs), "--out", str(mine)])
    assert res.exit_code != 0 and "already exists and is not an output of carb zoo rss" in \
        one_line_error(res)
    assert mine.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == \
        ["configs.csv", "mine.csv"]
