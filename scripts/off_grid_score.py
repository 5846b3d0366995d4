"""Pre-registration AI (session 34): issue 15's cell on fresh configs at resolutions off the
families' grid (40, 56, 80, 112 px), the default source with the kernel law alone beside it.

``results/measurement/PLATFORM_TAG/PREREGISTRATION.md`` says what is predicted. Reads
pre-registration AC's benchmark (``data/kernels/PLATFORM_session31_flushed[_sampler4].parquet``),
the source ResNet rows (session 30's kept rows), the sitting's new-family and reference rows.
Runs the cell (``offset``, k = 10, kernel law, default preset, 5 paired seeds) with the default
source and with the law alone (reported only) and writes ``score.txt`` and ``scores.csv`` beside
the pre-registration:

* AI0 (reading condition): the reference config's CV <= 5 %;
* AI1: peak memory zero-shot MAPE <= 0.1 % for each family (issue 15's bound: 5 %);
* AI2: latency Spearman (offset, k = 10) >= 0.95 for each family;
* AI3: efficientnet offset k = 10 latency MAPE <= 10 %;
* AI4: mobilenetv2 and vgg offset k = 10 latency MAPE <= 10 % each;
* AI5: efficientnet fp32 zero-shot median log residual at 40 px within 0.08 of that at 56 px.

``python scripts/off_grid_score.py cpu_xeon_gnr_2c``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from above_caps_score import both_sources  # noqa: E402
from denormal_sitting_score import _zero_shot, batch_residuals  # noqa: E402
from kept_heap_sitting_score import Judge, missing_file, write_score  # noqa: E402
from paired_heap_score import reference_stats  # noqa: E402
from source_corrector_score import per_seed  # noqa: E402

from carb_lib.dataset import read_dataset  # noqa: E402

REF_CV_MAX, MEMORY_PCT, RHO_MIN, TARGET_PCT, STEP_MAX = 0.05, 0.1, 0.95, 10.0, 0.08


def judge_cell(scores: pd.DataFrame, pred: pd.DataFrame, rows: pd.DataFrame, judge: Judge) -> None:
    """AI1-AI5 from the default source's scores and seed 0's predictions."""
    d = scores[scores["variant"] == "default"]
    mem = d[(d["target"] == "peak_mem_mib") & (d["model"] == "zero_shot")].groupby("family")[
        "mape_pct"].mean()
    judge("AI1", "peak memory zero-shot MAPE " + ", ".join(f"{f} {v:.4f} %" for f, v in mem.items())
          + f"; predicted <= {MEMORY_PCT} % each", bool((mem <= MEMORY_PCT).all()))
    rho = per_seed(scores, "spearman")["default"].mean()
    judge("AI2", "latency Spearman (offset, k = 10) " + ", ".join(f"{f} {v:.3f}" for f, v in
                                                                  rho.items())
          + f"; predicted >= {RHO_MIN} each", bool((rho >= RHO_MIN).all()))
    fam = per_seed(scores)["default"].agg(["mean", "std"])
    judge("AI3", f"efficientnet offset k = 10: {fam['efficientnet']['mean']:.2f} ± "
          f"{fam['efficientnet']['std']:.2f} %; predicted <= {TARGET_PCT:.0f} %",
          fam["efficientnet"]["mean"] <= TARGET_PCT)
    others = [f for f in fam.columns if f != "efficientnet"]
    judge("AI4", ", ".join(f"{f} {fam[f]['mean']:.2f} ± {fam[f]['std']:.2f} %" for f in others)
          + f"; predicted <= {TARGET_PCT:.0f} % each",
          all(fam[f]["mean"] <= TARGET_PCT for f in others))
    z = _zero_shot(pred, rows, by=("resolution",))
    e = z[(z["family"] == "efficientnet") & (z["precision"] == "fp32")]
    med = e.groupby("resolution")["r"].median()
    step = abs(med.get(40, np.nan) - med.get(56, np.nan))
    judge("AI5", f"efficientnet fp32 zero-shot median log residual at 40 px {med.get(40, np.nan):+.3f},"
          f" at 56 px {med.get(56, np.nan):+.3f}; predicted within {STEP_MAX}",
          bool(step <= STEP_MAX))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--tag", default="session34_off_grid")
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    p, tag = a.platform, a.tag
    out = Path(f"results/measurement/{p}_{tag}")
    files = {"v3 draw": Path(f"data/kernels/{p}_session31_flushed.parquet"),
             "v4 draw": Path(f"data/kernels/{p}_session31_flushed_sampler4.parquet"),
             "source rows": Path(f"data/other_cpus/{p}_session30_kept.parquet"),
             "new-family rows": Path(f"data/other_cpus/new_families/{p}_{tag}.parquet"),
             "reference": out / "reference.parquet"}
    if missing_file("off_grid_score", files):
        return 2
    lines = [f"# python scripts/off_grid_score.py {p} --tag {tag} --seeds {a.seeds}", ""]
    judge = Judge(lines)
    med, cv, n = reference_stats(files["reference"])
    judge("AI0", f"reference config: {n} runs, median {med:.2f} ms, CV {cv:.1%}; bound "
          f"{REF_CV_MAX:.0%}", cv <= REF_CV_MAX)
    tgt_rows = read_dataset(files["new-family rows"])
    scores, preds, tgt = both_sources(files, tgt_rows, a.seeds)
    judge_cell(scores, preds["default"], tgt, judge)
    lat = scores[scores["target"] == "latency_ms"]
    ok = tgt_rows[tgt_rows["status"].astype(str) == "ok"]
    lines += ["", judge.held_line(), "", "reported, not judged:",
              "rows (ok) per family, precision and resolution:",
              ok.groupby(["family", "precision", "resolution"]).size().unstack(fill_value=0)
              .to_string(), "",
              "latency MAPE % and within ±10 % (mean over seeds), default source and law alone:",
              lat.pivot_table(index=["family", "model"], columns="variant",
                              values=["mape_pct", "within_10pct"]).round(3).to_string(), "",
              "zero-shot median log residual (measured / predicted) by resolution and batch, "
              "default source:",
              batch_residuals(preds["default"], tgt, by=("resolution",)).round(3).to_string()]
    scores.to_csv(out / "scores.csv", index=False)
    write_score(out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
