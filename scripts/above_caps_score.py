"""Pre-registration AF (session 32): issue 15's cell on fresh configs above the campaigns' caps,
with the default source and the kernel law alone.

``results/measurement/PLATFORM_TAG/PREREGISTRATION.md`` says what is predicted. Reads
pre-registration AC's benchmark (``data/kernels/PLATFORM_session31_flushed[_sampler4].parquet``,
as timed), the source ResNet rows (``--source``, session 30's kept rows), the sitting's
new-family rows and reference rows, and the validation choice
(``results/cross_family/source_law_check/choice.txt``, ``scripts/source_law_check.py``). Runs the
cell (``offset``, k = 10, kernel law, default preset, 5 paired seeds) with the default source and
with the law alone (``source_law_check.LAW_ALONE``) and writes ``score.txt`` and ``scores.csv``
beside the pre-registration:

* AF0 (reading condition): the reference config's CV <= 5 %;
* AF1: peak memory zero-shot MAPE <= 5 % for each family;
* AF2: efficientnet, law alone below default (mean over seeds) and ahead on >= 4 of 5 seeds;
* AF3: efficientnet <= 10 % with the source the validation chose;
* AF4: mobilenetv2 and vgg <= 10 % with the chosen source, latency Spearman >= 0.95 for all three;
* AF5: the mean-over-families gap (law alone - default) has the validation's sign.

``python scripts/above_caps_score.py cpu_xeon_gnr_2c``
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from denormal_sitting_score import batch_residuals, kernel_rows, offset_cell  # noqa: E402
from kept_heap_sitting_score import Judge, missing_file, write_score  # noqa: E402
from paired_heap_score import reference_stats  # noqa: E402
from source_corrector_score import per_seed  # noqa: E402
from source_law_check import LAW_ALONE  # noqa: E402

from carb_lib import kernels  # noqa: E402
from carb_lib.dataset import read_dataset  # noqa: E402

#: The two sources compared: name -> ``source_params``.
VARIANTS: dict[str, dict | None] = {"default": None, "law alone": LAW_ALONE}
REF_CV_MAX, TARGET_PCT, MEMORY_PCT, RHO_MIN = 0.05, 10.0, 5.0, 0.95


def validation_choice(text: str) -> tuple[str, float]:
    """The source the validation chose (``"law alone"`` or ``"default"``) and its mean paired
    gap (law alone - default), read from ``choice.txt``."""
    gap = re.search(r"set x seed units: ([+-][0-9.]+)", text)
    rule = re.search(r"^rule .*: (.*)$", text, flags=re.M)
    if gap is None or rule is None:
        raise SystemExit("above_caps_score: the validation choice file has no gap or rule line")
    return ("default" if rule.group(1).strip() == "keep the default" else "law alone",
            float(gap.group(1)))


def judge_cell(scores: pd.DataFrame, chosen: str, val_gap: float, lines: list[str],
               judge: Judge) -> None:
    """AF1-AF5 from the paired scores of both sources."""
    mem = scores[(scores["target"] == "peak_mem_mib") & (scores["model"] == "zero_shot")
                 & (scores["variant"] == "default")].groupby("family")["mape_pct"].mean()
    judge("AF1", "peak memory zero-shot MAPE " + ", ".join(f"{f} {v:.3f} %" for f, v in
                                                         mem.items())
          + f"; predicted <= {MEMORY_PCT:.0f} % each", bool((mem <= MEMORY_PCT).all()))
    mape, rho = per_seed(scores), per_seed(scores, "spearman")
    eff = mape.xs("efficientnet", axis=1, level="family")
    d = eff["law alone"] - eff["default"]
    judge("AF2", f"efficientnet: default {eff['default'].mean():.2f} ± {eff['default'].std():.2f}"
          f" %, law alone {eff['law alone'].mean():.2f} ± {eff['law alone'].std():.2f} %; per-seed "
          f"gap {', '.join(f'{v:+.2f}' for v in d)}; predicted law alone lower, on >= 4 of "
          f"{len(d)} seeds", d.mean() < 0 and int((d < 0).sum()) >= 4)
    fam = mape[chosen].agg(["mean", "std"])
    judge("AF3", f"efficientnet with the chosen source ({chosen}): {fam['efficientnet']['mean']:.2f}"
          f" ± {fam['efficientnet']['std']:.2f} %; predicted <= {TARGET_PCT:.0f} %",
          fam["efficientnet"]["mean"] <= TARGET_PCT)
    others = [f for f in fam.columns if f != "efficientnet"]
    r = rho[chosen].mean()
    judge("AF4", ", ".join(f"{f} {fam[f]['mean']:.2f} ± {fam[f]['std']:.2f} %" for f in others)
          + "; Spearman " + ", ".join(f"{f} {v:.3f}" for f, v in r.items())
          + f" ({chosen}); predicted <= {TARGET_PCT:.0f} % each, Spearman >= {RHO_MIN} each",
          all(fam[f]["mean"] <= TARGET_PCT for f in others) and bool((r >= RHO_MIN).all()))
    gap = mape["law alone"].mean(axis=1) - mape["default"].mean(axis=1)
    judge("AF5", f"mean over families, law alone - default: {gap.mean():+.2f} ± "
          f"{gap.std(ddof=1) / np.sqrt(len(gap)):.2f} (SE); validation {val_gap:+.3f}; predicted "
          "the same sign", np.sign(gap.mean()) == np.sign(val_gap))


def both_sources(files: dict[str, Path], tgt_rows: pd.DataFrame, seeds: int):
    """The cell with each source of :data:`VARIANTS`: ``files`` names the ``"v3 draw"`` and
    ``"v4 draw"`` of the operator benchmark and the ``"source rows"``. Returns the scores of
    both (column ``variant``), each one's predictions by name, and the target rows with the
    kernel law's input."""
    src, tgt = kernel_rows(kernels.read_bench([str(files["v3 draw"]), str(files["v4 draw"])]),
                           read_dataset(files["source rows"]), tgt_rows)
    parts, preds = [], {}
    for name, params in VARIANTS.items():
        print(f"source {name}: cross-family evaluation, {seeds} seeds", flush=True)
        res = offset_cell(src, tgt, seeds, source_params=params)
        parts.append(res.scores.assign(variant=name))
        preds[name] = res.predictions
    return pd.concat(parts, ignore_index=True), preds, tgt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--tag", default="session32_above_caps")
    ap.add_argument("--bench-tag", default="session31_flushed", help="AC's operator benchmark")
    ap.add_argument("--source", type=Path, default=None,
                    help="ResNet source rows (default data/other_cpus/PLATFORM_session30_kept.parquet)")
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    p, tag = a.platform, a.tag
    out = Path(f"results/measurement/{p}_{tag}")
    files = {"v3 draw": Path(f"data/kernels/{p}_{a.bench_tag}.parquet"),
             "v4 draw": Path(f"data/kernels/{p}_{a.bench_tag}_sampler4.parquet"),
             "source rows": a.source or Path(f"data/other_cpus/{p}_session30_kept.parquet"),
             "new-family rows": Path(f"data/other_cpus/new_families/{p}_{tag}.parquet"),
             "reference": out / "reference.parquet",
             "validation choice": Path("results/cross_family/source_law_check/choice.txt")}
    if missing_file("above_caps_score", files):
        return 2
    chosen, val_gap = validation_choice(files["validation choice"].read_text())
    lines = [f"# python scripts/above_caps_score.py {p} --tag {tag} --bench-tag {a.bench_tag} "
             f"--source {files['source rows']} --seeds {a.seeds}", ""]
    judge = Judge(lines)
    med, cv, n = reference_stats(files["reference"])
    judge("AF0", f"reference config: {n} runs, median {med:.2f} ms, CV {cv:.1%}; bound "
          f"{REF_CV_MAX:.0%}", cv <= REF_CV_MAX)
    tgt_rows = read_dataset(files["new-family rows"])
    scores, preds, tgt = both_sources(files, tgt_rows, a.seeds)
    judge_cell(scores, chosen, val_gap, lines, judge)
    lat = scores[scores["target"] == "latency_ms"]
    ok = tgt_rows[tgt_rows["status"].astype(str) == "ok"]
    lines += ["", judge.held_line(), "", "reported, not judged:",
              "rows (ok) per family and precision, with their whole-batch GFLOP range:",
              ok.assign(gflop=ok["flops"] / 1e9).groupby(["family", "precision"])["gflop"]
              .agg(["size", "min", "max"]).round(3).to_string(), "",
              "latency MAPE % and within ±10 % (mean over seeds):",
              lat.pivot_table(index=["family", "model"], columns="variant",
                              values=["mape_pct", "within_10pct"]).round(3).to_string(), "",
              "zero-shot median log residual (measured / predicted) by resolution and batch, "
              "default source:", batch_residuals(preds["default"], tgt, by=("resolution",)).round(3).to_string()]
    scores.to_csv(out / "scores.csv", index=False)
    write_score(out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
