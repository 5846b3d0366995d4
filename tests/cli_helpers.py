"""Helpers shared by the command-line tests (imported as ``from cli_helpers import ...``)."""

from __future__ import annotations


def one_line_error(res, *fragments: str) -> str:
    """Assert that a ``CliRunner`` result is one ``error: ...`` line (exit 1) holding every
    fragment; return the line."""
    assert res.exit_code == 1, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]
