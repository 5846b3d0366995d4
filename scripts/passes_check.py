"""Does the fastest of several passes on a noisy host give back what a quiet host measured?

Reads a passes campaign (``carb profile --passes``: OUT/pass0/, pass1/, ..., or their rows in
one Parquet file with a ``pass`` column, as ``scripts/passes_campaign.sh`` keeps them) and rows of the
same configs measured earlier on a quiet host (``--quiet``, one or more datasets). For the
configs in both it prints the ratio passes / quiet (median, and the share within ±5 / ±10 %
once that median is divided out) for three estimates from the same passes: the **fastest pass**
(what ``carb merge`` keeps), the **median of the passes**, and **the first pass alone** (one
window on a noisy host, as a single-pass campaign with one window would give). Then the halves
check (:func:`carb_lib.passes.pass_agreement`) on all configs and per family.

Usage (session 23)::

    python scripts/passes_check.py runs/cpu_epyc_zen5_2c_passes_parts \\
        --quiet data/other_cpus/new_families/cpu_epyc_zen5_2c.parquet \\
                data/other_cpus/cpu_epyc_zen5_2c.parquet \\
        --out results/measurement/passes_cpu_epyc_zen5_2c/check.txt
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib.passes import latency_matrix, latency_spread, pass_agreement, read_passes


def against(est: pd.Series, quiet: pd.Series) -> str:
    """One line: ratio est / quiet over the shared configs."""
    r = (est / quiet).dropna()
    med = float(r.median())
    lr = np.abs(np.log(r / med))
    raw = np.abs(np.log(r))
    return (f"n {len(r):3d}  median ratio {med:.3f}  after dividing it out: within 5 % "
            f"{100 * np.mean(lr < np.log(1.05)):5.1f} %, within 10 % "
            f"{100 * np.mean(lr < np.log(1.10)):5.1f} %, median |log| {100 * np.median(lr):4.1f} %"
            f"  (raw: within 10 % {100 * np.mean(raw < np.log(1.10)):5.1f} %)")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("passes", type=Path)
    ap.add_argument("--quiet", type=Path, nargs="+", required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    frames = read_passes(a.passes)  # pass folders, or their rows in one table
    if not frames:
        raise SystemExit(f"passes_check: no pass folders in {a.passes}")
    lat = latency_matrix(frames)
    fam = pd.concat(frames).drop_duplicates("config_id").set_index("config_id")["family"]
    quiet = pd.concat([pd.read_parquet(q) for q in a.quiet], ignore_index=True)
    quiet = quiet[quiet["status"] == "ok"].drop_duplicates("config_id").set_index("config_id")
    shared = lat.index.intersection(quiet.index)
    q = quiet.loc[shared, "latency_ms"].astype(float)
    sub = lat.loc[shared]
    lines = [f"# scripts/passes_check.py {a.passes}, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} "
             f"UTC; {lat.shape[1]} passes, {len(lat)} configs; {len(shared)} measured before in "
             f"{', '.join(map(str, a.quiet))}"]  # fmt: skip
    lines.append("\n## the re-measured configs against their earlier rows (--quiet)")
    for name, est in (("fastest pass  ", sub.min(axis=1)), ("median of passes", sub.median(axis=1)),
                      ("first pass alone", sub.iloc[:, 0])):  # fmt: skip
        lines.append(f"{name:16s} {against(est, q)}")
    k = 1
    while k < sub.shape[1]:
        lines.append(f"fastest of {k:<5d}   {against(sub.iloc[:, :k].min(axis=1), q)}")
        k *= 2
    lines.append("fastest pass, by family:")
    for f, ids in pd.Series(shared, index=shared).groupby(fam.loc[shared]):
        lines.append(f"  {f:12s} {against(sub.loc[ids.index].min(axis=1), q.loc[ids.index])}")
    lines.append("\n## halves check (fastest of the first half of the passes against the second)")
    agree = pass_agreement(frames)
    lines.append(f"all configs: {agree.summary() if agree else 'one pass: no halves'}")
    for k in range(2, len(frames), 2):
        s = pass_agreement(frames[:k])
        lines.append(f"  with the first {k} passes only: median |log ratio| "
                     f"{100 * s.median_abs_log_ratio:4.1f} %, within 10 % {100 * s.within_10:5.1f} %")
    if (s := pass_agreement(frames, interleaved=True)) is not None:  # the host's drift cancels
        lines.append(f"  even against odd passes: median |log ratio| "
                     f"{100 * s.median_abs_log_ratio:4.1f} %, within 10 % {100 * s.within_10:5.1f} %")
    fresh = lat.index.difference(quiet.index)
    for f in sorted(set(fam.loc[fresh])) if agree else []:
        ids = set(fam.loc[fresh][fam.loc[fresh] == f].index)
        part = [fr[fr["config_id"].isin(ids)] for fr in frames]
        s = pass_agreement(part)
        lines.append(f"  fresh {f:12s} n {s.n_configs:3d}: median |log ratio| "
                     f"{100 * s.median_abs_log_ratio:4.1f} %, within 5 % {100 * s.within_5:5.1f} "
                     f"%, within 10 % {100 * s.within_10:5.1f} %")  # fmt: skip
    spread = latency_spread(lat).dropna()
    lines.append(f"\nlatency_pass_spread (median of passes / fastest - 1): median "
                 f"{100 * spread.median():.1f} %, p90 {100 * spread.quantile(0.9):.1f} %")  # fmt: skip
    mem = pd.DataFrame({p: f[f["status"] == "ok"].drop_duplicates("config_id")
                        .set_index("config_id")["peak_mem_mib"] for p, f in enumerate(frames)})
    same = (mem.max(axis=1) == mem.min(axis=1)).sum()
    lines.append(f"peak memory identical in every pass: {same} of {len(mem)} configs")
    text = "\n".join(lines) + "\n"
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
