"""HTML pages of executed notebooks, the run index and publishing (carb_lib.reproduce)."""

from __future__ import annotations

import base64
import io
import json

import nbformat
import pytest

from carb_lib.reproduce import ReproduceError, publish_run, shrink_images, write_html, write_index


def _png(width: int, height: int) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def _executed(path, width=1600):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("fig")
    cell.outputs = [nbformat.v4.new_output("display_data", data={
        "image/png": _png(width, width // 2), "text/plain": "<Figure>"})]
    nb.cells = [nbformat.v4.new_markdown_cell("# A title"), cell]
    nbformat.write(nb, str(path))
    return path


def _width(b64: str) -> int:
    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(b64))).width


def test_page_is_self_contained_with_inline_images(tmp_path):
    page = write_html(_executed(tmp_path / "01_x.ipynb"), tmp_path / "01_x.html")
    text = page.read_text()
    assert "A title" in text and "data:image/png;base64," in text
    assert "<link rel=\"stylesheet\" href=" not in text  # CSS inline


def test_shrink_images_keeps_small_ones(tmp_path):
    nb = nbformat.read(str(_executed(tmp_path / "a.ipynb", width=1600)), as_version=4)
    assert shrink_images(nb, 800) == 1
    assert _width(nb.cells[1].outputs[0]["data"]["image/png"]) == 800
    assert shrink_images(nb, 800) == 0


def test_publish_run_writes_pages_index_and_enforces_the_size_limit(tmp_path):
    run = tmp_path / "runs" / "full-20260101T000000Z"
    run.mkdir(parents=True)
    for name in ("00_a", "01_b"):
        _executed(run / f"{name}.ipynb")
    (run / "summary.json").write_text(json.dumps({"00_a": {"x": 1.5}, "01_b": {}}))
    dest = tmp_path / "docs" / "run"
    written = publish_run(run, dest, max_image_width=400)
    assert sorted(p.name for p in written) == ["00_a.html", "01_b.html", "index.html"]
    index = (dest / "index.html").read_text()
    assert "href='00_a.html'" in index and "href='01_b.html'" in index
    assert "full-20260101T000000Z" in index and "<code>x</code>" in index
    big = (run / "00_a.html")
    assert not big.exists()  # publishing does not write into the run folder
    with pytest.raises(ReproduceError, match="MB"):
        publish_run(run, dest, max_image_width=400, max_mb=0.001)
    with pytest.raises(ReproduceError, match="no executed notebook"):
        publish_run(tmp_path, dest)


def test_index_lists_pages_and_values(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"nb": {"a/b": [1, 2]}}))
    out = write_index(tmp_path, [{"name": "nb", "page": "nb.html", "seconds": 3.0,
                                  "n_values": 1, "parameters": {"quick": True}}], profile="quick")
    text = out.read_text()
    assert "href='nb.html'" in text and "a/b" in text and "Profile <b>quick</b>" in text
