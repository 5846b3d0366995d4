"""Print the numbers of the data card (data/README.md): its table, or one file's details.

Usage: ``python scripts/data_card_stats.py --table [DATA_DIR]`` prints the card's table, one row
per file of measured network rows (platform, CPU model string, families, ok rows, protocol, heap,
reference-config CV, code version, dates); ``python scripts/data_card_stats.py --write-catalog
[DATA_DIR]`` wrote the first ``data/catalog.yaml`` from the folder layout and file names of the
time (a campaign is a platform and the rest of a file's name, ``design`` where the name is the
platform alone; a role is the folder); the catalog is the source afterwards; ``python
scripts/data_card_stats.py
data/<platform>.parquet [--reference R.parquet] [--noise DIR]`` prints one file's details:
counts by status and precision, measurement window, latency spread within the window, drift of
the reference config, noise floors from ``carb noise`` output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from carb_lib.dataset.schema import read_dataset
from carb_lib.measure.campaign import drift_summary
from carb_lib.measure.devices import UNKNOWN_CPU

#: Folders of ``data/`` without campaign rows of their own: operators, another project's data,
#: the re-measurements and per-config RSS probes kept beside a campaign's file (same relative
#: path under them).
NOT_CAMPAIGNS = ("external", "kernels", "reference", "audit", "rss")


def _protocol(df: pd.DataFrame) -> str:
    if "latency_passes" in df and df["latency_passes"].notna().any():
        return "v2, passes"
    if "quality" in df and df["quality"].notna().any():
        return "v2"
    return "v1"


def card_fields(path: Path, data_dir: Path) -> dict:
    """The data card's facts of the measured file ``path``: platform, CPU model string,
    families, ok rows, protocol, heap, reference CV, code version and measurement dates (the
    strings of the card's table; ``ok_rows`` an int)."""
    df = pd.read_parquet(path)
    ok = df[df["status"] == "ok"]
    rel = path.relative_to(data_dir)
    heap = ("kept" if df["heap_kept"].fillna(False).all() else "default"
            if not df["heap_kept"].fillna(False).any() else "both") if "heap_kept" in df \
        else "default"
    ref_cv = ""
    ref = data_dir / "reference" / rel
    if ref.exists():
        r = pd.read_parquet(ref)["latency_ms"].dropna()
        ref_cv = f"{100 * r.std() / r.mean():.1f} %" if len(r) > 1 else ""
    commits = sorted(df["git_commit"].dropna().astype(str).str[:7].unique()) \
        if "git_commit" in df else []
    dirty = "git_dirty" in df and bool(df["git_dirty"].fillna(False).any())
    code = ", ".join(commits) + (" (dirty)" if dirty else "") if commits else "before git ids"
    t = pd.to_datetime(df["measured_at"].astype(str), utc=True, format="ISO8601")
    days = sorted({t.min().date().isoformat(), t.max().date().isoformat()})
    ids = sorted(df["cpu_id"].dropna().astype(str).unique()) if "cpu_id" in df else []
    device = str(df["device_name"].dropna().iloc[0]) \
        if "device_name" in df and df["device_name"].notna().any() else ""
    # a campaign that did not record its CPU model: its cpu_id says unknown, its device name stays
    cpu = (f"{device} (`cpu_id` unknown)" if device else "unknown") if ids == [UNKNOWN_CPU] \
        else ", ".join(ids) if ids else device
    return {"platform": ", ".join(sorted(df["platform"].unique())), "cpu": cpu,
            "families": ", ".join(sorted(df["family"].astype(str).unique())),
            "ok_rows": int(len(ok)), "protocol": _protocol(df), "heap": heap,
            "reference_cv": ref_cv, "code": code, "measured": " to ".join(days)}


def card_row(path: Path, data_dir: Path) -> str:
    """One Markdown row of the data card's table for the measured file ``path``."""
    f = card_fields(path, data_dir)
    cpu = f["cpu"].replace("|", "\\|")
    return (f"| `{path.relative_to(data_dir).as_posix()}` | {f['platform']} | {cpu} | "
            f"{f['families']} | {f['ok_rows']:,} | {f['protocol']} | {f['heap']} | "
            f"{f['reference_cv']} | {f['code']} | {f['measured']} |")


def card_table(data_dir: Path = Path("data")) -> str:
    """The data card's table: one row per parquet file of measured network rows under
    ``data_dir`` (by glob), outside :data:`NOT_CAMPAIGNS`."""
    files = [f for f in sorted(data_dir.rglob("*.parquet"))
             if f.relative_to(data_dir).parts[0] not in NOT_CAMPAIGNS]
    head = ("| file | platform | CPU model string (`cpu_id`) | families | ok rows | protocol | "
            "heap | reference CV | code version | measured (UTC) |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    return "\n".join([head, *(card_row(f, data_dir) for f in files)])


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


def _campaign_protocol(fields: list[dict], frames: list[pd.DataFrame]) -> dict:
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


def build_catalog(data: Path) -> dict:
    """The first catalog of ``data`` (``--write-catalog``): campaigns from the folder layout and
    file names of the time, each rows file with its card facts (:func:`card_fields`)."""
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
                        protocol=_campaign_protocol([f for f, _ in got], dfs),
                        date=" to ".join(days))
        head["files"] = sorted(c["files"], key=lambda e: e["path"])
        out.append(head)
    return {"format": 1, "campaigns": out, "other": other}


CATALOG_HEADER = """\
# CARB data catalog: every file under this folder, once, by platform, campaign and role.
# Paths are relative to this file's folder. The library looks files up here
# (carb_lib.dataset.catalog); a user catalog (carb --catalog PATH, or CARB_CATALOG) adds
# campaigns of its own. `card` holds the data card's facts of a file of rows (data/README.md's
# table is generated from them: carb_lib.dataset.catalog.card_table).
"""


def write_catalog(data: Path) -> Path:
    """Write ``<data>/catalog.yaml`` from :func:`build_catalog` (once: the catalog is the source
    afterwards; do not overwrite an edited one)."""
    import yaml

    class NoAliases(yaml.SafeDumper):
        def ignore_aliases(self, data):
            return True

    text = yaml.dump(build_catalog(data), Dumper=NoAliases, sort_keys=False, allow_unicode=True,
                     width=100)
    (data / "catalog.yaml").write_text(CATALOG_HEADER + text)
    return data / "catalog.yaml"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--write-catalog":
        print(f"wrote {write_catalog(Path(sys.argv[2]) if len(sys.argv) > 2 else Path('data'))}")
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--table":
        print(card_table(Path(sys.argv[2]) if len(sys.argv) > 2 else Path("data")))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path, help="a measured file, or --table [DATA_DIR]")
    ap.add_argument("--reference", type=Path, default=None)
    ap.add_argument("--noise", type=Path, default=None, help="folder with noise_summary.csv")
    a = ap.parse_args()
    df = read_dataset(a.dataset)
    print(f"rows: {len(df)}; platforms: {sorted(df['platform'].unique())}")
    print(f"measured from {df['measured_at'].min()} to {df['measured_at'].max()}")
    for col in ("device_name", "torch_version", "host", "threads"):
        print(f"{col}: {sorted(map(str, df[col].dropna().unique()))}")
    print("\ncounts by status and precision:\n")
    print(pd.crosstab(df["status"], df["precision"], margins=True).to_string())
    err = df[df["status"] != "ok"]
    if len(err):
        print("\nnon-ok reasons (first 80 chars):\n")
        print(err["error"].astype(str).str[:80].value_counts().head(10).to_string())
    ok = df[df["status"] == "ok"]
    q = ok[["latency_ms", "peak_mem_mib", "latency_cv", "n_iters", "window_s"]].describe(
        percentiles=[0.1, 0.5, 0.9]).T
    print("\nok rows, distribution:\n")
    print(q.to_string(float_format=lambda v: f"{v:.4g}"))
    print("\nmedian within-window latency CV by precision:",
          ok.groupby("precision")["latency_cv"].median().round(4).to_dict())
    print("energy_reason:", ok["energy_reason"].dropna().unique()[:2])
    if "quality" in ok.columns and ok["quality"].notna().any():
        print("\nquality of ok rows (interference detector):\n")
        print(pd.crosstab(ok["quality"], ok["precision"], margins=True).to_string())
        w = ok[["n_windows", "n_rejected", "latency_window_cv", "cpu_share", "other_busy",
                "load_1m"]].astype(float)
        print("\nwindows per row, detector readings (median, p90):")
        print(w.quantile([0.5, 0.9]).T.to_string(float_format=lambda v: f"{v:.4g}"))
        reasons = ok["rejected_by"].astype(str).str.extract(
            r"share=(\d+),other=(\d+),spread=(\d+)").astype(float).sum()
        print("windows not used, by reason (share, other load, spread):", reasons.tolist())
        t = pd.to_datetime(ok["measured_at"].astype(str), utc=True, format="ISO8601")
        span_min = (t.max() - t.min()).total_seconds() / 60
        print(f"throughput: {len(df) / span_min:.1f} rows/min over {span_min:.1f} min")
        for col in ("git_commit", "git_dirty", "carb_version", "mkldnn_enabled"):
            if col in df:
                print(f"{col}: {sorted(map(str, df[col].dropna().unique()))}")
    if a.reference is not None and a.reference.exists():
        ref = pd.read_parquet(a.reference)
        print("\nreference config drift:", {k: round(v, 4) if isinstance(v, float) else v
                                            for k, v in drift_summary(ref).items()})
    if a.noise is not None and (a.noise / "noise_summary.csv").exists():
        print("\nnoise floor (CV across repeats):\n")
        print(pd.read_csv(a.noise / "noise_summary.csv").to_string(index=False,
                                                                  float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
