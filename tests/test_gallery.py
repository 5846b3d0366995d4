"""docs/gallery.md shows every figure `make reproduce` writes (results/MANIFEST.txt), each with a
caption and the notebook that draws it, and nothing else from figures/."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _reproduce_pngs() -> list[str]:
    text = (REPO / "results" / "MANIFEST.txt").read_text()
    section = text.split("\n[make reproduce]\n")[1].split("\n[")[0]
    return [ln.strip() for ln in section.splitlines()
            if ln.strip().startswith("figures/") and ln.strip().endswith(".png")]


def test_gallery_shows_every_reproduce_figure_with_caption_and_notebook():
    gallery = (REPO / "docs" / "gallery.md").read_text()
    images = re.findall(r"!\[[^\]]*\]\(\.\./(figures/[^)]+\.png)\)", gallery)
    pngs = _reproduce_pngs()
    assert pngs and sorted(images) == sorted(pngs)
    notebooks = re.findall(r"\]\(\.\./(notebooks/[^)]+\.ipynb)\)", gallery)
    assert notebooks and all((REPO / nb).is_file() for nb in notebooks)
    for png in pngs:  # under the heading of the notebook with its number, a caption after it
        stem = Path(png).stem
        block = gallery.split(f"![{stem}](../{png})")[1].split("\n### ")[0]
        assert len(block.strip()) > 40, f"{stem}: no caption"
        above = gallery.split(f"![{stem}]")[0]
        assert above.rfind(f"(../notebooks/{stem[:2]}_") > above.rfind("\n## ["), stem
    readme = (REPO / "README.md").read_text()
    assert "(docs/gallery.md)" in readme
