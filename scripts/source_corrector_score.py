"""Pre-registration AD (session 31): a cross-family source without the small-batch corrector.

``results/measurement/PLATFORM_session31_corrector/PREREGISTRATION.md`` says what is predicted.
Reads pre-registration AC's benchmark (``data/kernels/PLATFORM_TAG[_sampler4].parquet``, as timed),
the source ResNet rows (``--source``) and AC's new-family rows, runs issue 15's cross-family cell
with the default source and with ``source_params={"regime_shrink": 0.0}`` (seeds paired), and
writes ``score.txt`` and ``scores.csv`` beside the pre-registration:

* AD1: offset k = 10 latency MAPE, mean over families and seeds: no corrector below default;
* AD2: the per-seed gap (mean over families) below zero on >= 3 of 5 seeds;
* AD3: efficientnet, no corrector: above 10 %;
* AD4: no corrector: mobilenetv2 and vgg <= 10 %, Spearman >= 0.95 for all three.

``python scripts/source_corrector_score.py cpu_xeon_gnr_2c``
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from denormal_sitting_score import (  # noqa: E402
    kernel_rows,
    offset_cell,
    sitting_args,
    sitting_files,
)
from kept_heap_sitting_score import Judge, missing_file, write_score  # noqa: E402

from carb_lib import kernels  # noqa: E402
from carb_lib.dataset import read_dataset  # noqa: E402

#: The two sources compared: name -> ``source_params``.
VARIANTS: dict[str, dict | None] = {"default": None, "no corrector": {"regime_shrink": 0.0}}


def per_seed(scores: pd.DataFrame, col: str = "mape_pct") -> pd.DataFrame:
    """``offset`` k = 10 latency ``col`` per seed (rows) and variant x family (columns)."""
    s = scores[(scores["target"] == "latency_ms") & (scores["model"] == "offset")]
    return s.pivot_table(index="seed", columns=["variant", "family"], values=col)


def judge_scores(scores: pd.DataFrame, lines: list[str]) -> Judge:
    """The four predictions from the paired scores of both variants."""
    judge = Judge(lines)
    mape, rho = per_seed(scores), per_seed(scores, "spearman")
    gap = mape["no corrector"].mean(axis=1) - mape["default"].mean(axis=1)
    d, n = mape["default"].to_numpy().mean(), mape["no corrector"].to_numpy().mean()
    judge("AD1", f"mean over families and seeds: default {d:.2f} %, no corrector {n:.2f} %; "
          "predicted no corrector lower", n < d)
    judge("AD2", f"per-seed gap {', '.join(f'{v:+.2f}' for v in gap)} (mean {gap.mean():+.2f} ± "
          f"{gap.std(ddof=1) / np.sqrt(len(gap)):.2f} SE); predicted < 0 on >= 3 of "
          f"{len(gap)}", int((gap < 0).sum()) >= 3)
    fam = mape["no corrector"].agg(["mean", "std"])
    eff = fam["efficientnet"]
    judge("AD3", f"efficientnet, no corrector {eff['mean']:.2f} ± {eff['std']:.2f} % (default "
          f"{mape['default']['efficientnet'].mean():.2f}); predicted > 10 %", eff["mean"] > 10)
    r = rho["no corrector"].mean()
    others = [f for f in fam.columns if f != "efficientnet"]
    judge("AD4", ", ".join(f"{f} {fam[f]['mean']:.2f} ± {fam[f]['std']:.2f} %" for f in others)
          + "; Spearman " + ", ".join(f"{f} {v:.3f}" for f, v in r.items())
          + "; predicted <= 10 % each, Spearman >= 0.95 each",
          all(fam[f]["mean"] <= 10 for f in others) and bool((r >= 0.95).all()))
    return judge


def main(argv: list[str] | None = None) -> int:
    a = sitting_args(__doc__, argv)
    p, tag = a.platform, a.tag
    out = Path(f"results/measurement/{p}_session31_corrector")
    files = sitting_files(a)
    if missing_file("source_corrector_score", files):
        return 2
    src, tgt = kernel_rows(kernels.read_bench([str(files["v3 draw"]), str(files["v4 draw"])]),
                           read_dataset(files["source rows"]),
                           read_dataset(files["new-family rows"]))
    parts = []
    for name, params in VARIANTS.items():
        print(f"source {name}: cross-family evaluation, {a.seeds} seeds", flush=True)
        res = offset_cell(src, tgt, a.seeds, source_params=params)
        parts.append(res.scores.assign(variant=name))
    scores = pd.concat(parts, ignore_index=True)
    lines = [f"# python scripts/source_corrector_score.py {p} --tag {tag} --source "
             f"{files['source rows']} --seeds {a.seeds}", ""]
    judge = judge_scores(scores, lines)
    zs = scores[(scores["target"] == "latency_ms") & (scores["model"] == "zero_shot")]
    lines += ["", judge.held_line(), "", "reported, not judged: zero-shot latency MAPE % (mean "
              "over seeds):", zs.pivot_table(index="family", columns="variant",
                                            values="mape_pct").round(2).to_string()]
    out.mkdir(parents=True, exist_ok=True)
    scores.to_csv(out / "scores.csv", index=False)
    write_score(out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
