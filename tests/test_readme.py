"""README.md and docs/: generated tables written from results/ (carb_lib.app.readme) that cannot
drift, a Python example that runs, pages of a readable length, a status line on the first screen
and relative links that resolve."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from carb_lib.app import readme

#: Longest README, longest docs page (lines), and where the status line must be.
README_MAX_LINES = 250
DOCS_MAX_LINES = 420
STATUS_WITHIN = 25
#: Generated lines the README may hold (its blocks together).
README_MAX_GENERATED = 60


def test_readme_tables_match_results(repo_root):
    from carb_lib.app.cli import app

    stale = readme.stale_blocks(repo_root / "README.md", repo_root / "results", command=app)
    assert stale == [], f"README blocks {stale} differ from results/: run `carb readme`"


@pytest.fixture
def copy(tmp_path, repo_root):
    shutil.copytree(repo_root / "results", tmp_path / "results",
                    ignore=shutil.ignore_patterns("*.parquet", "noise"))
    shutil.copy(repo_root / "README.md", tmp_path / "README.md")
    (tmp_path / "docs").mkdir()
    for page in (repo_root / "docs").glob("*.md"):
        shutil.copy(page, tmp_path / "docs" / page.name)
    return tmp_path


def test_a_changed_result_makes_the_readme_stale_until_rewritten(copy):
    path = copy / "results/benchmarks/static_features.csv"
    df = pd.read_csv(path)
    big = df["n_configs"].idxmax()
    df.loc[big, "configs_per_s"] = 3.456e6
    df.loc[big, "repeats"] = 7
    df.to_csv(path, index=False)
    assert readme.stale_blocks(copy / "README.md", copy / "results") == ["static-features-bench"]
    assert readme.update_readme(copy / "README.md", copy / "results") is True
    text = (copy / "docs/families.md").read_text()
    assert "**3.46 M configs/s**" in text and "median of 7 repeats" in text
    assert readme.stale_blocks(copy / "README.md", copy / "results") == []
    assert readme.update_readme(copy / "README.md", copy / "results") is False


def test_transfer_sentence_compares_medians_with_medians(copy):
    pw = pd.read_csv(copy / "results/transfer/pairwise.csv")
    text = readme.transfer_summary(copy / "results")
    sp = pw[pw["kind"] == "specific"]
    assert f"median MAPE {sp['mape_pct'].median():.1f} %" in text
    assert f"median Spearman {sp['spearman'].median():.2f}" in text
    assert "mean" not in text


def test_missing_block_or_file_is_an_error(copy):
    text = (copy / "README.md").read_text()
    with pytest.raises(readme.ReadmeError, match="missing \\['screening'\\]"):
        readme.render(text.replace("<!-- carb:screening -->", "").replace(
            "<!-- /carb:screening -->", ""), copy / "results", expect={"screening"})
    with pytest.raises(readme.ReadmeError, match="unknown \\['nonsense'\\]"):
        readme.render("<!-- carb:nonsense -->\n<!-- /carb:nonsense -->", copy / "results")
    # a block on no page at all
    for page in [copy / "README.md", *(copy / "docs").glob("*.md")]:
        page.write_text(page.read_text().replace("<!-- carb:allocator -->", "").replace(
            "<!-- /carb:allocator -->", ""))
    with pytest.raises(readme.ReadmeError, match="missing \\['allocator'\\]"):
        readme.stale_blocks(copy / "README.md", copy / "results")
    (copy / "results/screening/scenarios.csv").unlink()
    with pytest.raises(readme.ReadmeError, match="scenarios.csv does not exist"):
        readme.render(text, copy / "results")


def test_re_measurement_noise_table_is_rendered_when_written(copy):
    rel = next(p for p in (copy / "results/carb").iterdir()
               if (p / "protocol_summary.csv").exists())
    (rel / "remeasurement_noise.csv").unlink(missing_ok=True)
    assert "Against the re-measurement noise" not in readme.carb_metrics(copy / "results")
    pd.DataFrame([{
        "platform": rel.name, "kind": "random", "model": "carb", "target": "latency_ms",
        "subset": "all", "n_audit": 200, "r2_remeasure": 0.98, "mape_pct_remeasure": 13.98,
        "within_10pct_remeasure": 0.495, "spearman_remeasure": 0.99, "r2_mean": 0.95,
        "r2_sd": 0.01, "mape_pct_mean": 14.95, "mape_pct_sd": 0.9, "within_10pct_mean": 0.426,
        "within_10pct_sd": 0.03, "spearman_mean": 0.98, "spearman_sd": 0.001, "runs": 5,
        "mape_ratio": 14.95 / 13.98}]).to_csv(rel / "remeasurement_noise.csv", index=False)
    text = readme.carb_metrics(copy / "results")
    assert "Against the re-measurement noise" in text
    assert ("| latency | all | 200 | 13.98 | 14.95 ± 0.90 | 1.07 | 49.5 % | 42.6 ± 3.0 % | "
            "0.9800 | 0.9500 ± 0.0100 |") in text
    assert f"carb/{rel.name}/remeasurement_noise.csv" in text


def test_cross_family_table_shows_the_re_measurement_when_audited(copy):
    path = copy / "results/cross_family/remeasurement_noise.csv"
    path.unlink(missing_ok=True)
    assert "re-measured" not in readme.cross_family(copy / "results")
    pd.DataFrame([
        {"family": "vgg", "target": "latency_ms", "subset": "all", "n": 50, "mape_pct": 12.345,
         "within_10pct": 0.5, "r2": 0.9, "spearman": 0.9876},
        {"family": "vgg", "target": "latency_ms", "subset": "clean", "n": 20, "mape_pct": 5.0,
         "within_10pct": 0.8, "r2": 0.95, "spearman": 0.99},
    ]).to_csv(path, index=False)
    text = readme.cross_family(copy / "results")
    lines = {ln.split(" | ")[1]: ln for ln in text.splitlines() if ln.startswith("| vgg |")}
    assert lines["latency MAPE %"].endswith("| 12.3 (50) |")
    assert lines["latency Spearman"].endswith("| 0.988 |")
    assert lines["memory MAPE %"].endswith("| – |")  # no memory row in this audit
    assert "cross_family/remeasurement_noise.csv" in text


def test_cross_family_laws_block_puts_the_kernel_law_beside_the_roofline(copy):
    c = pd.read_csv(copy / "results/cross_family/law_comparison.csv")
    k = pd.read_csv(copy / "results/cross_family/issue_targets_kernel_law.csv")
    text = readme.cross_family_laws(copy / "results")
    # the judged method's k = 10 cells are bold (offset), blend's beside them are not
    r = c[(c["family"] == "efficientnet") & (c["model"] == "offset") & (c["k"] == 10)].iloc[0]
    assert (f"| efficientnet | offset, k=10 | {r['roofline_mape_pct']:.1f} → "
            f"**{r['kernel_mape_pct']:.1f}** |") in text
    assert (f"{r['roofline_spearman']:.3f} → **{r['kernel_spearman']:.3f} ± "
            f"{r['kernel_spearman_sd']:.3f}**") in text
    b = c[(c["family"] == "efficientnet") & (c["model"] == "blend") & (c["k"] == 10)].iloc[0]
    assert (f"| efficientnet | blend, k=10 | {b['roofline_mape_pct']:.1f} → "
            f"{b['kernel_mape_pct']:.1f} |") in text
    assert f"kernel law: **{int(k['met'].sum())} of {len(k)}**" in text
    (copy / "results/cross_family/law_comparison.csv").unlink()
    assert "Not computed" in readme.cross_family_laws(copy / "results")


def test_cross_family_table_follows_the_judged_method_and_names_its_source(copy):
    checks_path = copy / "results/cross_family/issue_targets.csv"
    checks = pd.read_csv(checks_path)
    judged = checks.loc[checks["k"] > 0, "model"].unique()
    assert list(judged) == ["offset"]  # notebook 05's few_shot_method
    text = readme.cross_family(copy / "results")
    header = text.splitlines()[0]
    assert "| offset, k=10 | offset, k=50 | blend, k=10 |" in header  # blend beside it
    assert "few-shot method `offset`" in text
    # a block of another results_dir reads its own folder and says so
    shutil.copytree(copy / "results/cross_family", copy / "results/other/cross_family")
    other = readme.cross_family(copy / "results", sub="other/")
    assert "`results/other/cross_family/summary.csv`" in other
    # two judged methods are refused, naming them
    checks.loc[checks["k"] > 0, "model"] = ["blend", "offset"] * int((checks["k"] > 0).sum() / 2)
    checks.to_csv(checks_path, index=False)
    with pytest.raises(readme.ReadmeError, match=r"judges 2 few-shot methods \(\['blend', 'offset'\]\)"):
        readme.cross_family(copy / "results")


# --------------------------------------------------------------------------- the pages themselves
def pages(root: Path) -> list[Path]:
    """README.md and every Markdown page of docs/ (the published HTML run under docs/run aside)."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_the_readme_python_example_runs(repo_root, monkeypatch, capsys):
    blocks = python_blocks((repo_root / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) == 1, "the README holds one Python example (the quick start)"
    assert len(blocks[0].strip().splitlines()) <= 12
    monkeypatch.chdir(repo_root)
    exec(compile(blocks[0], "README.md", "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    assert "latency_ms_lo" in out and "'shortlist': 5" in out and "config_id" in out


def test_page_lengths(repo_root):
    n = len((repo_root / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines (at most {README_MAX_LINES})"
    long = {p.name: len(p.read_text(encoding="utf-8").splitlines())
            for p in pages(repo_root)[1:]}
    long = {k: v for k, v in long.items() if v > DOCS_MAX_LINES}
    assert not long, f"docs pages over {DOCS_MAX_LINES} lines: {long}"


def test_the_status_line_is_on_the_first_screen(repo_root):
    head = (repo_root / "README.md").read_text(encoding="utf-8").splitlines()[:STATUS_WITHIN]
    status = [ln for ln in head if ln.startswith("**Status")]
    assert status, f"no line starting with **Status in the README's first {STATUS_WITHIN} lines"


def test_the_readme_generated_blocks_are_short(repo_root):
    text = (repo_root / "README.md").read_text(encoding="utf-8")
    n = sum(len(m.group("body").splitlines()) for m in readme.MARK.finditer(text))
    assert 0 < n <= README_MAX_GENERATED, f"README's generated blocks: {n} lines"


def test_the_cli_reference_names_every_command_and_option(repo_root):
    import typer

    from carb_lib.app.cli import app

    text = (repo_root / "docs/cli.md").read_text(encoding="utf-8")
    for name, cmd in typer.main.get_command(app).commands.items():
        assert f"### `carb {name}`" in text
        for p in cmd.params:
            if p.param_type_name == "option" and not getattr(p, "hidden", False) \
                    and p.name != "help":
                assert f"`{p.opts[0]}`" in text, f"carb {name} {p.opts[0]} not in docs/cli.md"


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return s.replace(" ", "-")


def broken_links(root: Path, files: list[Path]) -> list[str]:
    """``file: target`` for every relative link (and #anchor into a Markdown page) of ``files``
    that does not resolve under ``root``."""
    bad = []
    for page in files:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z][\w+.-]*:", target):  # https:, mailto:, ...
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                bad.append(f"{page.relative_to(root)}: {target}")
                continue
            if anchor and dest.suffix == ".md":
                heads = {_slug(h) for h in re.findall(r"^#+ (.+)$", dest.read_text(
                    encoding="utf-8"), re.M)}
                if anchor not in heads:
                    bad.append(f"{page.relative_to(root)}: {target} (no such heading)")
    return bad


def test_relative_links_resolve(repo_root):
    bad = broken_links(repo_root, pages(repo_root))
    assert not bad, "links to missing files: " + "; ".join(bad)


def test_the_link_check_finds_a_broken_link(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/a.md").write_text("# A page\n\n## Two words\n")
    page = tmp_path / "README.md"
    page.write_text("[ok](docs/a.md) [ok](docs/a.md#two-words) [web](https://x.org/y) "
                    "[gone](docs/gone.md) ![img](figures/none.png) [bad](docs/a.md#three)\n"
                    "```bash\n[not a link](nowhere.md)\n```\n")
    assert broken_links(tmp_path, [page]) == [
        "README.md: docs/gone.md", "README.md: figures/none.png",
        "README.md: docs/a.md#three (no such heading)"]


def test_readme_and_docs_call_the_second_measurement_re_measurement_noise_never_a_ceiling():
    """The re-measurement is noise a model can score below (about 1/sqrt(2) of it for a perfect
    model), not a ceiling: README.md, docs/ (not the published run's pages) and the results'
    markdown never say "ceiling"."""
    root = Path(__file__).resolve().parents[1]
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md")),
             *sorted((root / "results").glob("*.md"))]
    hits = [f"{p.relative_to(root)}:{i}" for p in pages
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if re.search(r"ceiling", line, re.IGNORECASE)]
    assert not hits, f"'ceiling' for the re-measurement noise in {hits}"
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert "re-measurement noise" in readme and "1/√2" in readme


def test_every_figure_the_readme_says_a_notebook_writes_exists(repo_root):
    """The third column of the README's notebook table names figures (``NN_name`` or
    ``NN_name_*``): each must match a file under figures/ (the published run's)."""
    import re

    text = (repo_root / "README.md").read_text()
    rows = [ln for ln in text.splitlines() if re.match(r"\| `\d\d_[a-z_]+` \|", ln)]
    assert len(rows) >= 8
    names = [n for row in rows for n in re.findall(r"`(\d\d_[a-z0-9_]+\*?)`",
                                                   row.split("|")[3])]
    assert names
    missing = [n for n in names if not list((repo_root / "figures").glob(f"{n.rstrip('*')}*"))]
    assert not missing, f"the README names figures no run writes: {missing}"


def test_the_small_batch_headline_puts_the_strict_kernel_law_in_bold(tmp_path):
    from carb_lib.app.readme import small_batch_headline

    (tmp_path / "carb/cpu_x").mkdir(parents=True)
    pd.DataFrame({"split": ["batch_small"] * 3, "law": ["roofline", "kernel", "kernel_strict"],
                  "r2": [0.8, 0.95, 0.82]}).to_csv(tmp_path / "carb/cpu_x/kernel_law_strict.csv",
                                                   index=False)
    line = small_batch_headline(tmp_path, "cpu_x", 0.8, 0.95)
    assert "kernel law **0.820** with no operator timed at a held-out batch" in line
    assert "(0.950 with operators timed at every batch)" in line
