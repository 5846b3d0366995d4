"""Print the numbers of the data card (data/README.md): its table, or one file's details.

Usage: ``python scripts/data_card_stats.py --table [DATA_DIR]`` prints the card's table, one row
per file of measured network rows (``<platform>/<campaign>/{rows,noise,passes}[_<part>].parquet``:
platform, CPU model string, families, ok rows, protocol, heap, reference-config CV, code
version, dates); ``python scripts/data_card_stats.py FILE [--reference R.parquet] [--noise DIR]``
prints one file's details:
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

#: The roles (a file name's first word) of files of network rows: the card's table lists them.
CARD_ROLES = ("rows", "noise", "passes")


def card_role(path: Path) -> str | None:
    """The role a file of ``data/<platform>/<campaign>/`` holds by its name (None: not a file of
    network rows, or ``data/external/``)."""
    role = path.name.split(".")[0].split("_")[0]
    return role if role in CARD_ROLES and path.parent.parent.parent.name != "external" else None


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
    heap = ("kept" if df["heap_kept"].fillna(False).all() else "default"
            if not df["heap_kept"].fillna(False).any() else "both") if "heap_kept" in df \
        else "default"
    ref_cv = ""
    # the reference rows of a rows file sit beside it: rows[_part] -> reference[_part]
    ref = path.with_name("reference" + path.name[len("rows"):]) \
        if path.name.startswith("rows") else None
    if ref is not None and ref.exists():
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
    ``data_dir`` (by glob: :func:`card_role`)."""
    files = [f for f in sorted(data_dir.rglob("*.parquet"))
             if f.relative_to(data_dir).parts[0] != "external" and card_role(f)]
    head = ("| file | platform | CPU model string (`cpu_id`) | families | ok rows | protocol | "
            "heap | reference CV | code version | measured (UTC) |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    return "\n".join([head, *(card_row(f, data_dir) for f in files)])


def main() -> None:
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
