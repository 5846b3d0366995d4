"""carb_lib.claims: the shared claims table (merge by (claim_id, platform), atomic write)."""

from __future__ import annotations

import pandas as pd
import pytest

from carb_lib import claims, scaling
from carb_lib import evaluation as ev


def _row(cid, platform, value, **extra):
    return {"claim_id": cid, "claim": f"claim {cid}", "paper_value": 1.0, "our_value": value,
            "platform": platform, "n": 3, "testable": True, "reason": "r", **extra}


def test_one_implementation_everywhere():
    assert scaling.merge_claims is claims.merge_claims
    assert ev.merge_claims is claims.merge_claims
    assert ev.CLAIM_COLUMNS == claims.CLAIM_COLUMNS
    assert scaling.CLAIM_COLUMNS == claims.COLUMN_ORDER
    assert set(claims.COLUMN_ORDER) == set(claims.CLAIM_COLUMNS + claims.OPTIONAL_CLAIM_COLUMNS)


def test_other_rows_survive_and_same_key_is_replaced(tmp_path):
    path = tmp_path / "results" / "claims.csv"  # folder created
    claims.merge_claims(path, [_row("transfer_x", "h200", 0.5, source="02_transfer"),
                               _row("a", "p1", 1.0), _row("a", "p2", 2.0)])
    merged = claims.merge_claims(path, pd.DataFrame([_row("a", "p1", 3.0), _row("b", "p1", 4.0)]))
    back = pd.read_csv(path)
    pd.testing.assert_frame_equal(back, merged, check_dtype=False)
    got = back.set_index(["claim_id", "platform"])["our_value"].to_dict()
    assert got == {("transfer_x", "h200"): 0.5, ("a", "p1"): 3.0, ("a", "p2"): 2.0,
                   ("b", "p1"): 4.0}
    assert not back.duplicated(["claim_id", "platform"]).any()
    # extra columns of other notebooks are kept; rows without them get NaN
    assert back.set_index("claim_id").at["transfer_x", "source"] == "02_transfer"
    assert list(back.columns[:4]) == ["claim_id", "claim", "paper_value", "our_value"]
    assert list(back[["claim_id", "platform"]].itertuples(index=False, name=None)) == sorted(got)


def test_missing_columns_added_and_missing_platform_is_one_key(tmp_path):
    path = tmp_path / "claims.csv"
    claims.merge_claims(path, [{"claim_id": "a", "platform": None, "our_value": 1.0}])
    merged = claims.merge_claims(path, [{"claim_id": "a", "platform": None, "our_value": 2.0}])
    assert list(merged.columns) == claims.CLAIM_COLUMNS
    assert len(merged) == 1 and merged["our_value"].iloc[0] == 2.0


def test_last_row_of_a_key_wins_within_one_call(tmp_path):
    merged = claims.merge_claims(tmp_path / "c.csv", [_row("a", "p", 1.0), _row("a", "p", 2.0)])
    assert merged["our_value"].tolist() == [2.0]


def test_empty_file_counts_as_absent(tmp_path):
    path = tmp_path / "claims.csv"
    path.write_text("")
    assert len(claims.merge_claims(path, [_row("a", "p", 1.0)])) == 1


def test_bad_rows_and_swapped_arguments(tmp_path):
    path = tmp_path / "claims.csv"
    with pytest.raises(KeyError, match="platform"):
        claims.merge_claims(path, [{"claim_id": "a", "our_value": 1.0}])
    with pytest.raises(TypeError, match=r"\(path, rows\)"):
        claims.merge_claims([_row("a", "p", 1.0)], path)
    with pytest.raises(TypeError, match=r"\(path, rows\)"):
        claims.merge_claims(pd.DataFrame([_row("a", "p", 1.0)]), path)
    assert not path.exists()


def test_atomic_write_leaves_no_partial_file(tmp_path, monkeypatch):
    path = tmp_path / "claims.csv"
    claims.merge_claims(path, [_row("a", "p", 1.0)])
    before = path.read_bytes()

    def broken_to_csv(self, target, *args, **kwargs):
        target.write(b"claim_id,cla")  # a partial write to the (temporary) file, then the failure
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", broken_to_csv)
    with pytest.raises(OSError, match="disk full"):
        claims.merge_claims(path, [_row("b", "p", 2.0)])
    assert path.read_bytes() == before  # the old table is intact
    assert [p.name for p in tmp_path.iterdir()] == ["claims.csv"]  # no temporary file left
