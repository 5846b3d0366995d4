"""The one table reader/writer: suffixes, clear errors, atomic writes with a backup."""

from __future__ import annotations

import pandas as pd
import pytest

from carb_lib.core import tables
from carb_lib.core.tables import (
    MissingTableError,
    TableError,
    read_table,
    table_format,
    write_table,
)


def _df() -> pd.DataFrame:
    return pd.DataFrame({"config_id": ["0123456789012345", "00000000000000ab"], "x": [1.5, 2.0]})


@pytest.mark.parametrize(
    "name, fmt", [("a.csv", "csv"), ("a.CSV", "csv"), ("a.parquet", "parquet"), ("a.pq", "parquet")]
)
def test_table_format_by_suffix(name, fmt):
    assert table_format(name) == fmt


@pytest.mark.parametrize("name", ["a.json", "a.xlsx", "a", "a.csv.gz"])
def test_other_suffixes_are_refused(tmp_path, name):
    with pytest.raises(TableError, match=r"--in .*: unsupported suffix '.*'; use .csv or .parquet"):
        table_format(tmp_path / name, "--in")
    with pytest.raises(TableError, match="unsupported suffix"):
        write_table(_df(), tmp_path / name)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_roundtrip_keeps_values(tmp_path, suffix):
    path = write_table(_df(), tmp_path / "sub" / f"t{suffix}")
    back = read_table(path, text_columns=["config_id"])
    assert back["config_id"].tolist() == ["0123456789012345", "00000000000000ab"]
    assert back["x"].tolist() == [1.5, 2.0]
    assert sorted(p.name for p in path.parent.iterdir()) == [f"t{suffix}"]


def test_csv_ids_that_look_like_numbers_stay_text(tmp_path):
    path = write_table(_df().iloc[:1], tmp_path / "t.csv")
    assert read_table(path)["config_id"].iloc[0] == 123456789012345  # what pandas guesses
    assert read_table(path, text_columns=["config_id", "absent"])["config_id"].iloc[0] == (
        "0123456789012345")


def test_read_errors_name_the_file(tmp_path):
    with pytest.raises(MissingTableError, match=r"data .*nope.csv: no such file") as e:
        read_table(tmp_path / "nope.csv", "data")
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, ValueError)
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(TableError, match="is a folder"):
        read_table(tmp_path / "d.csv")
    _df().to_parquet(tmp_path / "p.csv")
    with pytest.raises(TableError, match="p.csv: cannot read as csv: it looks like a Parquet file named .csv; rename it"):
        read_table(tmp_path / "p.csv")
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(TableError, match="e.csv: cannot read as csv"):
        read_table(tmp_path / "e.csv")
    (tmp_path / "h.csv").write_text("a,b\n")
    with pytest.raises(TableError, match="h.csv: no rows"):
        read_table(tmp_path / "h.csv")
    assert list(read_table(tmp_path / "h.csv", allow_empty=True).columns) == ["a", "b"]
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    with pytest.raises(TableError, match="bad.parquet: cannot read as parquet"):
        read_table(tmp_path / "bad.parquet")


def test_write_refuses_a_folder(tmp_path):
    (tmp_path / "o.csv").mkdir()
    with pytest.raises(TableError, match="is a folder"):
        write_table(_df(), tmp_path / "o.csv")


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_backup_keeps_the_previous_version(tmp_path, suffix):
    path = tmp_path / f"t{suffix}"
    write_table(_df().iloc[:1], path)
    write_table(_df(), path, backup=True)
    assert len(read_table(path)) == 2
    bak = tables.backup_path(path)
    assert bak.name == f"t{suffix}.bak"
    assert len(pd.read_parquet(bak) if suffix == ".parquet" else pd.read_csv(bak)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, bak.name])


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = write_table(_df(), tmp_path / "t.parquet")
    before = path.read_bytes()

    def broken(fh):
        fh.write(b"half a file")
        raise RuntimeError("disk full (simulated)")

    with pytest.raises(RuntimeError, match="simulated"):
        tables.atomic_write(path, broken)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["t.parquet"]


def test_clean_temporary_files(tmp_path):
    (tmp_path / ".tmp-x.parquet.abc").write_text("left over")
    (tmp_path / "keep.parquet").write_text("data")
    removed = tables.clean_temporary_files(tmp_path)
    assert [p.name for p in removed] == [".tmp-x.parquet.abc"]
    assert [p.name for p in tmp_path.iterdir()] == ["keep.parquet"]


def test_dataset_reexports_the_same_writer():
    from carb_lib.dataset import schema as dataset

    assert dataset.atomic_write_parquet is tables.atomic_write_parquet
    assert dataset.backup_path is tables.backup_path
    assert dataset.clean_temporary_files is tables.clean_temporary_files
