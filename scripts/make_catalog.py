"""Write ``data/catalog.yaml`` once from the files of ``data/`` and the data card's facts.

Usage: ``python scripts/make_catalog.py [DATA_DIR]``. The catalog is the source afterwards
(``carb_lib.dataset.catalog``): this script recorded how the first catalog was derived from the
folder layout and file names of the time (a campaign is a platform and the rest of a file's
name, ``design`` where the name is the platform alone; a role is the folder: ``audit/``,
``reference/``, ``rss/``, ``kernels/``, ``noise/``, ``passes/``, ``gpu_checks/``). Do not rerun
it over an edited catalog; edit the catalog.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data_card_stats import NOT_CAMPAIGNS, card_fields  # noqa: E402

#: Folders of network rows whose campaign is named by the file name alone (the design space).
DESIGN_FOLDERS = ("", "new_families", "other_cpus", "other_cpus/new_families")
#: Folders of network rows whose campaign is the folder (and the rest of the file name).
NAMED_FOLDERS = {"zoo": "zoo", "field": "field", "heap_interleaved": "heap_interleaved",
                 "other_cpus/probe_nets": "probe_nets", "passes": "passes", "noise": "noise"}
ROLE_OF_FOLDER = {"passes": "passes", "noise": "noise"}
NOTES = {
    "README.md": ("card", "the data card (this catalog generates its table)"),
    "external/README.md": ("card", "the card of data measured by others (HELP)"),
    "external/LICENSE-HELP": ("licence", "HELP's licence, kept beside its rows"),
    "external/help_nb201.parquet": ("external", "NAS-Bench-201 latencies of HELP (another "
                                                "project's devices), carb_lib.transfer.data"),
}


def _platforms(data: Path) -> list[str]:
    names = set()
    for f in data.rglob("*.parquet"):
        rel = f.relative_to(data)
        if rel.parts[0] in NOT_CAMPAIGNS:
            continue
        names.update(pd.read_parquet(f, columns=["platform"])["platform"].astype(str).unique())
    return sorted(names, key=len, reverse=True)


def _split(stem: str, platforms: list[str]) -> tuple[str, str]:
    for p in platforms:
        if stem == p or stem.startswith(p + "_"):
            return p, stem[len(p) + 1:]
    raise SystemExit(f"{stem}: names no known platform")


def _campaign_of_rows(sub: str, stem: str, platforms: list[str]) -> tuple[str, str, str, str]:
    """(platform, campaign, role, note) of a network-rows file ``<sub>/<stem>.parquet``."""
    plat, rest = _split(stem, platforms)
    if sub in DESIGN_FOLDERS:
        return plat, rest or "design", "rows", ""
    name = NAMED_FOLDERS[sub]
    role = ROLE_OF_FOLDER.get(sub, "rows")
    if sub == "passes":  # every pass of the passes campaign, and its re-measurements
        return plat, "passes", role, rest
    if sub in ("noise", "heap_interleaved"):
        return plat, name, role, rest
    return plat, name + (f"_{rest}" if rest else ""), role, ""


def _protocol(fields: list[dict], frames: list[pd.DataFrame]) -> dict:
    versions = sorted({f["protocol"] for f in fields})
    heaps = sorted({f["heap"] for f in fields})
    threads = sorted({int(t) for d in frames if "threads" in d for t in d["threads"].dropna()})
    gpu = any(str(d["platform"].iloc[0]).startswith("gpu") for d in frames)
    if gpu:
        w = sorted({float(f"{d.loc[d['status'] == 'ok', 'window_s'].min():.1g}")
                    for d in frames if (d["status"] == "ok").any()})
        windows = ", ".join(f"{v:g} s" for v in w) + " windows (energy counter)"
    elif versions == ["v1"]:
        windows = "fixed iteration count, no detector"
    elif all(v == "v2, passes" for v in versions):
        windows = "one window per pass, the fastest pass kept"
    else:
        windows = "detector-checked, at least 2 inferences and 0.1 s, 3 agreeing"
    return {"version": " / ".join(versions), "threads": threads[0] if len(threads) == 1 else
            threads, "heap": heaps[0] if len(heaps) == 1 else "both", "windows": windows}


def build(data: Path) -> dict:
    platforms = _platforms(data)
    campaigns: dict[tuple[str, str], dict] = {}
    other = []
    rows_key = {}  # "<sub>/<stem>" of a rows file -> its campaign key and families
    frames: dict[tuple[str, str], list] = {}
    files = sorted(p.relative_to(data).as_posix() for p in data.rglob("*")
                   if p.is_file() and p.name != "catalog.yaml")
    # network rows first: their campaign names the others
    for rel in files:
        parts = rel.split("/")
        if parts[0] in NOT_CAMPAIGNS or parts[0] in ("gpu_checks",) or rel in NOTES \
                or not rel.endswith(".parquet"):
            continue
        sub, stem = "/".join(parts[:-1]), Path(parts[-1]).stem
        plat, camp, role, note = _campaign_of_rows(sub, stem, platforms)
        df = pd.read_parquet(data / rel)
        fields = card_fields(data / rel, data)
        c = campaigns.setdefault((plat, camp), {"files": []})
        entry = {"path": rel, "role": role, "families": fields["families"].split(", ")}
        if note:
            entry["note"] = note
        entry["card"] = {k: fields[k] for k in ("cpu", "ok_rows", "protocol", "heap",
                                                 "reference_cv", "code", "measured")}
        c["files"].append(entry)
        frames.setdefault((plat, camp), []).append((fields, df))
        rows_key[rel] = ((plat, camp), entry["families"])
    for rel in files:
        parts = rel.split("/")
        if rel in NOTES:
            role, note = NOTES[rel]
            other.append({"path": rel, "role": role, "note": note})
            continue
        if parts[0] in ("audit", "reference", "rss"):
            inner = "/".join(parts[1:])
            if inner in rows_key:
                key, fams = rows_key[inner]
                entry = {"path": rel, "role": parts[0], "families": fams}
            else:  # a re-measurement on another VM of a campaign's rows
                base = next(k for k in rows_key if inner.startswith(k[:-len(".parquet")] + "_"))
                key, fams = rows_key[base]
                entry = {"path": rel, "role": parts[0], "families": fams,
                         "note": inner[len(base) - len(".parquet") + 1:-len(".parquet")]
                         + f" (of {base})"}
            campaigns[key]["files"].append(entry)
        elif parts[0] == "kernels":
            name = parts[-1]
            if name.endswith(".anchors.parquet"):
                stem, role = name[:-len(".anchors.parquet")], "anchors"
            elif name.endswith("_cache_probe.csv"):
                stem, role = name[:-len("_cache_probe.csv")], "cache_probe"
            else:
                stem, role = name[:-len(".parquet")], "kernels"
            plat, rest = _split(stem, platforms)
            campaigns.setdefault((plat, rest or "design"), {"files": []})["files"].append(
                {"path": rel, "role": role})
        elif parts[0] == "gpu_checks":
            stem = Path(parts[-1]).stem
            plat, rest = _split(stem, platforms)
            campaigns[(plat, "design")]["files"].append(
                {"path": rel, "role": "gpu_check", "note": rest})
    out = []
    for (plat, camp) in sorted(campaigns, key=lambda k: (k[0], k[1] != "design", k[1])):
        c = campaigns[(plat, camp)]
        got = frames.get((plat, camp), [])
        fams = sorted({f for e in c["files"] for f in e.get("families", [])})
        head = {"platform": plat, "campaign": camp,
                "device": "cuda" if plat.startswith("gpu") else "cpu"}
        dfs = [d for _, d in got]
        if not dfs:  # an operator benchmark of its own (another draw): its own file says
            kern = [e for e in c["files"] if e["role"] == "kernels"]
            dfs_k = [pd.read_parquet(data / e["path"]) for e in kern]
            ids = sorted({str(v) for d in dfs_k if "cpu_id" in d for v in d["cpu_id"].dropna()})
            threads = sorted({int(t) for d in dfs_k if "threads" in d for t in d["threads"]})
            t = pd.concat([pd.to_datetime(d["measured_at"].astype(str), utc=True,
                                          format="ISO8601") for d in dfs_k])
            head.update(cpu_id=ids[0] if len(ids) == 1 else ids, families=[],
                        protocol={"version": None, "threads": threads[0] if threads else None,
                                  "heap": None, "windows": None},
                        date=t.min().date().isoformat())
        else:
            ids = sorted({str(v) for d in dfs if "cpu_id" in d for v in d["cpu_id"].dropna()})
            t = pd.concat([pd.to_datetime(d["measured_at"].astype(str), utc=True,
                                          format="ISO8601") for d in dfs])
            days = sorted({t.min().date().isoformat(), t.max().date().isoformat()})
            head.update(cpu_id=ids[0] if len(ids) == 1 else ids, families=fams,
                        protocol=_protocol([f for f, _ in got], dfs),
                        date=" to ".join(days))
        head["files"] = sorted(c["files"], key=lambda e: e["path"])
        out.append(head)
    return {"format": 1, "campaigns": out, "other": other}


HEADER = """\
# CARB data catalog: every file under this folder, once, by platform, campaign and role.
# Paths are relative to this file's folder. The library looks files up here
# (carb_lib.dataset.catalog); a user catalog (carb --catalog PATH, or CARB_CATALOG) adds
# campaigns of its own. `card` holds the data card's facts of a file of rows (data/README.md's
# table is generated from them: carb_lib.dataset.catalog.card_table).
"""


def main() -> None:
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("data")
    class NoAliases(yaml.SafeDumper):
        def ignore_aliases(self, data):
            return True

    text = yaml.dump(build(data), Dumper=NoAliases, sort_keys=False, allow_unicode=True,
                     width=100)
    (data / "catalog.yaml").write_text(HEADER + text)
    print(f"wrote {data / 'catalog.yaml'}")


if __name__ == "__main__":
    main()
