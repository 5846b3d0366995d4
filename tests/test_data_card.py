"""The data card (data/README.md) is short and its table is what scripts/data_card_stats.py
prints from the files in data/ (one row per file of network rows, none missing)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CARD = ROOT / "data" / "README.md"
BEGIN, END = "<!-- data-card-table: begin -->", "<!-- data-card-table: end -->"


def test_data_card_is_short_and_states_the_licence():
    text = CARD.read_text()
    assert len(text.splitlines()) <= 300
    assert "CC-BY-4.0" in text and "data/external/LICENSE-HELP" in text


def test_data_card_table_is_what_the_script_prints():
    text = CARD.read_text()
    table = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip()
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "data_card_stats.py"), "--table",
                        "data"], capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert table == r.stdout.strip(), "data/README.md's table is stale: rerun the script"
    listed = {line.split("`")[1] for line in table.splitlines()[2:]}
    on_disk = {p.relative_to(ROOT / "data").as_posix()
               for p in (ROOT / "data").rglob("*.parquet")
               if p.relative_to(ROOT / "data").parts[0] != "external"
               and p.name.split(".")[0].split("_")[0] in ("rows", "noise", "passes")}
    assert listed == on_disk
