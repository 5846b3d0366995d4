"""Pre-registration AB (session 30): the same ResNet configs timed with the default heap and with
the heap kept, interleaved slice by slice (``scripts/heap_interleaved.sh``), judged config by
config. ``results/measurement/PLATFORM_TAG/PREREGISTRATION.md`` says what is predicted:

* AB1: configs that map nothing past 32 MiB ("none"): median kept / default latency ratio
  within [0.97, 1.03] (keeping the heap changes nothing where nothing faults).
* AB2: the same in each batch tier of the vocabulary (``b<=4``, ``b<=16``, ``b<=128``,
  ``b>128``; :func:`carb_lib.audit.batch_tiers`): within [0.95, 1.05].
* AB3: configs whose expected fault time (MiB mapped past 32 MiB per call, allocator
  ``--variant``, times the fault cost fitted on ``--ops`` by ``KernelModel(faults=VARIANT)``) is
  >= 10 % of their default latency ("large"): median ratio over that of "none" <= 0.92.
* AB4: the kept arm's rows fault >= 100 times per call in <= 1 %; the default arm's "large"
  rows in >= 50 % (the control: the faults are there to remove).
* AB5: peak memory identical between the arms in >= 99 % of configs.

Reported, not judged: each arm's reference config (median, CV), the share of "none" configs
within +-10 % of each other once their median ratio is divided out, and the ratio by slice.
Writes ``score.txt`` and ``paired.csv`` under the sitting's folder.

``python scripts/heap_interleaved_score.py cpu_xeon_gnr_2c``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kept_heap_sitting_score import (  # noqa: E402
    FAULTS,
    LARGE_SHARE,
    Judge,
    memory_identical,
    missing_file,
    paired_rows,
    write_score,
)
from paired_heap_score import reference_stats  # noqa: E402

from carb_lib.audit import batch_tiers  # noqa: E402
from carb_lib.dataset import read_dataset  # noqa: E402
from carb_lib.families._alloc import parse_variant  # noqa: E402
from carb_lib.kernels import KernelModel, read_bench  # noqa: E402

#: AB1 and AB2: how far the "none" configs' median ratio may stray from 1, overall and per tier.
NONE_BAND, TIER_BAND = 0.03, 0.05


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--tag", default="session30_interleaved")
    ap.add_argument("--ops", type=Path, default=None,
                    help="operators with the default heap, for the fault cost (default "
                         "data/kernels/PLATFORM_session30_default.parquet)")
    ap.add_argument("--variant", default="16+fp16", help="this CPU's allocator variant")
    a = ap.parse_args(argv)
    p = a.platform
    res = Path(f"results/measurement/{p}_{a.tag}")
    ops_path = a.ops or Path(f"data/kernels/{p}_session30_default.parquet")
    files = {"default rows": res / "default.parquet", "kept rows": res / "kept.parquet",
             "default reference": res / "default_reference.parquet",
             "kept reference": res / "kept_reference.parquet", "list": res / "list.parquet",
             "operators": ops_path}
    if missing_file("heap_interleaved_score", files):
        return 2
    variant = parse_variant(a.variant)
    cost = KernelModel(faults=variant).fit(read_bench(ops_path)).fault_ms_per_mib_
    d_rows, k_rows = read_dataset(files["default rows"]), read_dataset(files["kept rows"])
    pr = paired_rows(k_rows, d_rows, variant, cost).rename(columns=lambda c: c.replace(
        "_before", "_default"))
    lst = pd.read_parquet(files["list"], columns=["config_id", "slice"])
    pr = pr.merge(lst, on="config_id", how="left")
    pr["tier"] = batch_tiers(pr["batch"].to_numpy())
    none = pr["group"] == "none"
    lines = [f"# python scripts/heap_interleaved_score.py {p} --tag {a.tag}",
             f"{len(lst):,} configs listed; {len(d_rows):,} default and {len(k_rows):,} kept rows; "
             f"{len(pr):,} paired ok; fault cost fitted on {ops_path}: {cost:.3f} ms per MiB", ""]
    for arm in ("default", "kept"):
        m, cv, n = reference_stats(files[f"{arm} reference"])
        lines.append(f"reference config, {arm} arm: median {m:.2f} ms, CV {cv:.1%} ({n} timings)")
    lines.append("")
    judge = Judge(lines)

    c = float(pr.loc[none, "ratio"].median())
    judge("AB1", f"'none' ({int(none.sum()):,} configs): median kept / default {c:.3f} "
          f"(bound {1 - NONE_BAND:.2f}-{1 + NONE_BAND:.2f})", abs(c - 1) <= NONE_BAND)
    tiers = pr.loc[none].groupby("tier")["ratio"].agg(["size", "median"])
    judge("AB2", "by batch tier: " + ", ".join(
        f"{t} {tiers.loc[t, 'median']:.3f} ({int(tiers.loc[t, 'size'])})" for t in tiers.index)
        + f" (bound {1 - TIER_BAND:.2f}-{1 + TIER_BAND:.2f} each)",
        bool(len(tiers) and (abs(tiers["median"] - 1) <= TIER_BAND).all()))
    by = pr.assign(norm=pr["ratio"] / c).groupby("group")["norm"].agg(["size", "median"])
    large = float(by.loc["large", "median"]) if "large" in by.index else float("nan")
    judge("AB3", "of 'none': " + ", ".join(
        f"{g} {by.loc[g, 'median']:.3f} ({int(by.loc[g, 'size'])})" for g in by.index)
        + f" (bound: large <= 0.92; large = expected fault time >= {LARGE_SHARE:.0%})",
        bool(large <= 0.92))
    k_f = k_rows["minor_faults_per_call"]
    k_share = float((k_f >= FAULTS).sum() / max(int(k_f.notna().sum()), 1))
    big = pr["group"] == "large"
    d_share = float((pr.loc[big, "minor_faults_per_call_default"] >= FAULTS).mean()) \
        if big.any() else float("nan")
    judge("AB4", f"kept rows faulting >= {FAULTS} per call: {k_share:.2%} (bound <= 1 %); "
          f"default 'large' rows: {d_share:.0%} of {int(big.sum())} (bound >= 50 %)",
          k_share <= 0.01 and bool(d_share >= 0.5))
    same = memory_identical(pr, "peak_mem_mib_kept", "peak_mem_mib_default")
    judge("AB5", f"peak memory identical in {same:.2%} of {len(pr):,} configs (bound >= 99 %)",
          same >= 0.99)
    agree = float((np.abs(np.log(pr.loc[none, "ratio"] / c)) <= np.log(1.1)).mean())
    by_slice = pr.loc[none].groupby("slice")["ratio"].median()
    lines += ["", f"not judged: 'none' configs within +-10 % once {c:.3f} is divided out: "
              f"{agree:.1%}; median ratio by slice: "
              + " ".join(f"{v:.3f}" for v in by_slice.to_numpy()),
              judge.held_line()]
    pr.to_csv(res / "paired.csv", index=False)
    write_score(res, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
