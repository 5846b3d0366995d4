"""Print the numbers of a measured dataset's data-card section as Markdown.

Usage: ``python scripts/data_card_stats.py data/<platform>.parquet [--reference R.parquet]
[--noise DIR]``: counts by status and precision, measurement window, latency spread within the
window, drift of the reference config, noise floors from ``carb noise`` output.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from carb_lib.campaign import drift_summary
from carb_lib.dataset import read_dataset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path)
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
