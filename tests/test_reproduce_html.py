"""HTML pages of executed notebooks, the run index and publishing (carb_lib.app.reproduce)."""

from __future__ import annotations

import base64
import io
import json

import nbformat
import pytest

from carb_lib.app.reproduce import (
    ReproduceError,
    publish_run,
    shrink_images,
    write_html,
    write_index,
)


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
    assert "href='nb.html'" in text and "a/b" in text and "profile <b>quick</b>" in text


def test_pages_drop_progress_bars_and_recorded_value_printouts(tmp_path):
    from carb_lib.app.record import MIME
    from carb_lib.app.reproduce import clean_outputs, page_images

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("work()")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stderr",
                               text="fits: 100%|██████████| 5/5 [00:03<00:00,  1.6it/s]\n"),
        nbformat.v4.new_output("stream", name="stderr", text="UserWarning: kept\n"),
        nbformat.v4.new_output("display_data", data={
            MIME: {"name": "cpu/growth/latency_ms", "value": 12.1},
            "text/plain": "cpu/growth/latency_ms = 12.100678707574476"}),
        nbformat.v4.new_output("display_data", data={
            "application/vnd.jupyter.widget-view+json": {"model_id": "x"},
            "text/plain": " 40%|####      | 2/5 [00:01<00:02]"}),
        nbformat.v4.new_output("display_data", data={"image/png": _png(40, 20),
                                                     "text/plain": "<Figure>"}),
    ]
    nb.cells = [cell]
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, str(path))
    text = write_html(path, tmp_path / "n.html").read_text()
    assert "it/s" not in text and "12.1006787" not in text and "2/5 [00:01" not in text
    assert "UserWarning: kept" in text and page_images(tmp_path / "n.html") == 1
    assert clean_outputs(nbformat.read(str(path), as_version=4)) == 3


def test_publish_refuses_pages_with_fewer_images_than_saved_figures(tmp_path):
    run = tmp_path / "runs" / "full-x"
    run.mkdir(parents=True)
    _executed(run / "03_c.ipynb")  # one image
    pages = [{"name": "03_c", "page": "03_c.html", "images": 1,
              "figures_saved": ["03_a.png", "03_b.png"]}]
    (run / "pages.json").write_text(json.dumps(pages))
    with pytest.raises(ReproduceError, match=r"03_c \(1 of 2\)"):
        publish_run(run, tmp_path / "dest")
    pages[0]["figures_saved"] = ["03_a.png"]
    (run / "pages.json").write_text(json.dumps(pages))
    (run / "summary.json").write_text(json.dumps({"_run": {"commit": "abc123", "dirty": False,
                                                           "profile": "full"}, "03_c": {}}))
    (run / "claims_vs_paper.csv").write_text(
        "claim,paper (reported),ours,ours 95% CI,n,n counts,platform,verdict,why,claim_id,source\n"
        "CARB R2,0.992,0.959,\"[0.94, 0.98]\",477,measured rows,cpu,contradicted,band,c,03_c\n")
    publish_run(run, tmp_path / "dest")
    index = (tmp_path / "dest/index.html").read_text()
    assert index.index("abc123") < index.index("claims against ours") \
        < index.index("href='03_c.html'")
    assert "1 contradicted" in index and "<tr class='contradicted'>" in index and (tmp_path / "dest/claims_vs_paper.csv").exists()


# ---------------------------------------------------------------------------- rounded values
def test_display_value_rounds_to_four_significant_digits_and_keeps_integers():
    from carb_lib.app.reproduce_html import display_value

    assert display_value(12.100678707574476) == "12.1"
    assert display_value(0.95921234) == "0.9592" and display_value(-0.000123456) == "-0.0001235"
    assert display_value(17280.0) == "17280" and display_value(25_557_032) == "25557032"
    assert display_value(123456.78) == "123457" and display_value(9999.6) == "10000"
    assert display_value(8.178432) == "8.178" and display_value(1 / 3) == "0.3333"
    assert display_value(float("nan")) == "NaN" and display_value(True) == "true"
    assert display_value(None) == "null" and display_value("cpu_a") == '"cpu_a"'
    assert display_value([0.123456, 2, {"r2": 0.987654321}]) == '[0.1235, 2, {"r2": 0.9877}]'


def test_index_shows_rounded_values_and_summary_keeps_full_precision(tmp_path):
    values = {"nb": {"r2": 0.9592131415926, "n": 477, "latency_ms": [12.100678707574476, 3.0]}}
    (tmp_path / "summary.json").write_text(json.dumps(values))
    text = write_index(tmp_path, [{"name": "nb", "page": "nb.html"}]).read_text()
    assert "<td>0.9592</td>" in text and "<td>477</td>" in text and "<td>[12.1, 3]</td>" in text
    assert "0.95921" not in text and "12.10067" not in text
    assert json.loads((tmp_path / "summary.json").read_text()) == values


# ---------------------------------------------------------------------------- alt texts
def _image_output(color):
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (30, 20), color).save(buf, format="PNG")
    return nbformat.v4.new_output("display_data", data={
        "image/png": base64.b64encode(buf.getvalue()).decode(), "text/plain": "<Figure>"})


def test_every_image_gets_an_alt_text_from_the_headings_above_it(tmp_path):
    from bs4 import BeautifulSoup

    from carb_lib.app.reproduce_html import NBCONVERT_ALT

    nb = nbformat.v4.new_notebook()
    first = nbformat.v4.new_code_cell("plot()", execution_count=1)
    first.outputs = [_image_output((1, 2, 3))]
    pair = nbformat.v4.new_code_cell("for p in ps: show(p)", execution_count=2)
    pair.outputs = [_image_output((200, 0, 0)), _image_output((0, 200, 0))]
    later = nbformat.v4.new_code_cell("plot()", execution_count=3)
    later.outputs = [_image_output((0, 0, 200))]
    nb.cells = [first,
                nbformat.v4.new_markdown_cell("# 01 — Workload characterization\n\nIntro."),
                nbformat.v4.new_markdown_cell("## Scaling with the `workload`\n"
                                              "![a drawn diagram](data:image/png;base64,"
                                              + _image_output((9, 9, 9))["data"]["image/png"]
                                              + ")"),
                pair,
                nbformat.v4.new_markdown_cell("### **Energy** vs [latency](https://x.org)"),
                later]
    path = tmp_path / "01_x.ipynb"
    nbformat.write(nb, str(path))
    page = write_html(path, tmp_path / "01_x.html").read_text()
    alts = [img.get("alt") for img in BeautifulSoup(page, "html.parser").find_all("img")]
    assert alts == [
        "Output of cell [1]",
        "a drawn diagram",  # a markdown image keeps its own text
        "Scaling with the workload, in 01 — Workload characterization, figure 1 of 2",
        "Scaling with the workload, in 01 — Workload characterization, figure 2 of 2",
        "Energy vs latency, in 01 — Workload characterization",
    ]
    assert NBCONVERT_ALT not in page
