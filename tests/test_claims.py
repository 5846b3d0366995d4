"""carb_lib.core.claims: one set of claim columns for every notebook."""

from __future__ import annotations

from carb_lib import evaluation as ev
from carb_lib.characterize import scaling
from carb_lib.core import claims


def test_one_implementation_everywhere():
    assert ev.CLAIM_COLUMNS == claims.CLAIM_COLUMNS
    assert scaling.CLAIM_COLUMNS == claims.COLUMN_ORDER
    assert set(claims.COLUMN_ORDER) == set(claims.CLAIM_COLUMNS + claims.OPTIONAL_CLAIM_COLUMNS)
