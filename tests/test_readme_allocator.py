"""The allocator block per platform and precision (carb_lib.app.readme_allocator) and the sums it
is written from (benchmarks/check_allocator.py's by_precision)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd
import pytest

from carb_lib.app.readme import BLOCKS
from carb_lib.app.readme_allocator import SOURCE, AllocatorBlockError, allocator_precision_block


def _write(tmp_path, rows):
    (tmp_path / "benchmarks").mkdir()
    pd.DataFrame(rows).to_csv(tmp_path / SOURCE, index=False)
    return tmp_path


ROWS = [
    {"platform": "cpu_a", "precision": "fp32", "files": 2, "rows": 100, "exact_rows": 100,
     "exact_share": 1.0, "max_rel_err_pct": 0.0},
    {"platform": "cpu_a", "precision": "fp16", "files": 2, "rows": 50, "exact_rows": 50,
     "exact_share": 1.0, "max_rel_err_pct": 0.0},
    {"platform": "cpu_b", "precision": "fp32", "files": 1, "rows": 10, "exact_rows": 10,
     "exact_share": 1.0, "max_rel_err_pct": 0.0},
    {"platform": "cpu_b", "precision": "fp16", "files": 1, "rows": 10_000,
     "exact_rows": 9_999, "exact_share": 0.9999, "max_rel_err_pct": 1.25},
]


def test_the_block_has_a_line_per_platform_and_precision_and_the_totals(tmp_path):
    text = allocator_precision_block(_write(tmp_path, ROWS))
    assert "| cpu_a | fp32 | 2 | 100 | 100 | 100 % | 0 % |" in text
    assert "| cpu_b | fp16 | 1 | 10,000 | 9,999 | 99.99 % | 1.25 % |" in text
    assert "| all | fp32 | 3 | 110 | 110 | 100 % | 0 % |" in text
    assert "| all | fp16 | 3 | 10,050 | 10,049 | 99.99 % | 1.25 % |" in text
    assert "results/benchmarks/allocator_exact_by_precision.csv" in text


def test_a_share_short_of_all_rows_never_reads_100_percent(tmp_path):
    rows = [dict(ROWS[3], rows=100_000, exact_rows=99_999, exact_share=0.99999)]
    text = allocator_precision_block(_write(tmp_path, rows))
    assert "| cpu_b | fp16 | 1 | 100,000 | 99,999 | 99.99 % |" in text


def test_a_missing_file_or_column_is_one_clear_error(tmp_path):
    with pytest.raises(AllocatorBlockError, match="make bench"):
        allocator_precision_block(tmp_path)
    with pytest.raises(AllocatorBlockError, match="'max_rel_err_pct'"):
        allocator_precision_block(_write(tmp_path, [{k: v for k, v in ROWS[0].items()
                                                     if k != "max_rel_err_pct"}]))


def test_the_block_is_registered_and_placed_in_memory_md():
    assert BLOCKS["allocator-precision"] is allocator_precision_block
    page = (Path(__file__).resolve().parents[1] / "docs" / "memory.md").read_text()
    assert "<!-- carb:allocator-precision -->" in page


def _check_allocator():
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("check_allocator",
                                                  root / "benchmarks" / "check_allocator.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_by_precision_sums_the_files_of_each_platform():
    mod = _check_allocator()
    files = pd.DataFrame([
        {"platform": "cpu_x", "rows_fp32": 10, "exact_fp32": 10, "rows_fp16": 4,
         "exact_fp16": 3, "max_rel_err_pct_fp32": 0.0, "max_rel_err_pct_fp16": 2.0},
        {"platform": "cpu_x", "rows_fp32": 5, "exact_fp32": 5, "rows_fp16": 0,
         "exact_fp16": 0, "max_rel_err_pct_fp32": 0.0, "max_rel_err_pct_fp16": float("nan")},
        {"platform": "cpu_y", "rows_fp32": 3, "exact_fp32": 2, "rows_fp16": 0,
         "exact_fp16": 0, "max_rel_err_pct_fp32": 0.5, "max_rel_err_pct_fp16": float("nan")},
    ])
    t = mod.by_precision(files)
    assert t[["platform", "precision"]].values.tolist() == [
        ["cpu_x", "fp32"], ["cpu_x", "fp16"], ["cpu_y", "fp32"]]
    x16 = t.iloc[1]
    assert (x16["files"], x16["rows"], x16["exact_rows"]) == (1, 4, 3)
    assert x16["exact_share"] == pytest.approx(0.75) and x16["max_rel_err_pct"] == 2.0
    x32 = t.iloc[0]
    assert (x32["files"], x32["rows"], x32["exact_rows"], x32["exact_share"]) == (2, 15, 15, 1.0)
    assert t.iloc[2]["exact_share"] == pytest.approx(2 / 3)


def test_a_config_re_measured_in_several_files_counts_as_one_pair_exact_only_if_every_row_is():
    mod = _check_allocator()
    rows = pd.DataFrame([
        # c1 stored and re-measured, both exact; c2 stored exact, re-measured one byte off
        ("cpu_x", "c1", "fp32", True), ("cpu_x", "c1", "fp32", True),
        ("cpu_x", "c2", "fp32", True), ("cpu_x", "c2", "fp32", False),
        ("cpu_x", "c3", "fp16", True), ("cpu_y", "c1", "fp32", True),
    ], columns=["platform", "config_id", "precision", "exact"])
    t = mod.distinct_pairs(rows).set_index(["platform", "precision"])
    assert (t.at[("cpu_x", "fp32"), "pairs"], t.at[("cpu_x", "fp32"), "exact_pairs"]) == (2, 1)
    assert (t.at[("cpu_x", "fp16"), "pairs"], t.at[("cpu_y", "fp32"), "pairs"]) == (1, 1)


def test_the_headline_counts_distinct_pairs_when_the_check_wrote_them(tmp_path):
    from carb_lib.app.readme import alloc_headline

    alloc = pd.DataFrame({"rows": [6, 4], "exact_rows": [5, 4], "max_rel_err_pct": [1.5, 0.0]})
    (tmp_path / "benchmarks").mkdir()
    prec = pd.DataFrame({"platform": ["cpu_x"], "precision": ["fp32"], "files": [2],
                         "rows": [10], "exact_rows": [9], "exact_share": [0.9],
                         "max_rel_err_pct": [1.5]})
    prec.to_csv(tmp_path / "benchmarks/allocator_exact_by_precision.csv", index=False)
    assert "**9 of 10** measured rows (2 files" in alloc_headline(alloc, 9, 10, tmp_path)
    prec.assign(pairs=[7], exact_pairs=[6]).to_csv(
        tmp_path / "benchmarks/allocator_exact_by_precision.csv", index=False)
    line = alloc_headline(alloc, 9, 10, tmp_path)
    assert "**6 of 7** distinct (platform, config) pairs (10 measured rows in 2 files" in line

