"""Few-shot by refitting: does adding the k rows of a new family to the source help? (session 24)

A candidate few-shot method for notebook 05 (development, the Zen 3 rows only): instead of
recalibrating the ResNet-only source's predictions on the k = 10 rows (``offset``), refit the
source model (kernel law, ``feature_set="shared"``, the default preset) on the ResNet rows plus
the k rows, each repeated ``r`` times (``--repeats``), alone and followed by ``offset`` on the
same k rows. The split, the k rows and the seeds are notebook 05's (``cross_family_evaluation``).
Prints latency MAPE % on held-out architectures, mean and sd over ``--seeds`` seeds.

``python scripts/few_shot_refit_check.py data/cpu_epyc_zen3_2c.parquet
data/new_families/cpu_epyc_zen3_2c.parquet data/kernels/cpu_epyc_zen3_2c.parquet --out
results/cross_family/siblings/refit_cpu_epyc_zen3_2c``
"""

from __future__ import annotations

import argparse
import io
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib.ensemble import preset
from carb_lib.evaluation.cross_family import kernel_law_rows
from carb_lib.evaluation.models import fit_quiet
from carb_lib.evaluation.splits import grouped_split
from carb_lib.metrics import regression_metrics

K = 10


def _offset(y_k: np.ndarray, p_k: np.ndarray) -> float:
    return float(np.exp(np.median(np.log(y_k / p_k))))


def refit_scores(src: pd.DataFrame, tgt: pd.DataFrame, repeats: list[int],
                 seeds: int) -> pd.DataFrame:
    out = []
    for seed in range(seeds):
        params = {**preset("default", targets=("latency_ms",), random_state=seed),
                  "latency_law": "kernel", "feature_set": "shared"}
        base = fit_quiet(params, src)
        for fam in sorted(tgt["family"].astype(str).unique()):
            rows_f = tgt[tgt["family"] == fam].reset_index(drop=True)
            split = grouped_split(rows_f, (0.7, 0.0, 0.3), random_state=seed).to_numpy()
            pool = rows_f[split == "train"].reset_index(drop=True)
            test = rows_f[split == "test"].reset_index(drop=True)
            rng = np.random.default_rng([seed, len(fam), sum(map(ord, fam))])  # notebook 05's
            sample = pool.iloc[np.sort(rng.choice(len(pool), size=K, replace=False))]
            y, y_k = test["latency_ms"].to_numpy(float), sample["latency_ms"].to_numpy(float)

            def score(method: str, model, scale: bool, seed=seed, fam=fam, y=y, y_k=y_k, test=test,
                      sample=sample) -> None:
                p = np.asarray(model.predict(test)["latency_ms"], float)
                if scale:
                    p = p * _offset(y_k, np.asarray(model.predict(sample)["latency_ms"], float))
                out.append({"seed": seed, "family": fam, "method": method,
                            "mape_pct": regression_metrics(y, p).mape_pct})

            score("offset", base, True)
            for r in repeats:
                m = fit_quiet(params, pd.concat([src] + [sample] * r, ignore_index=True))
                score(f"refit x{r}", m, False)
                score(f"refit x{r} + offset", m, True)
            print(f"seed {seed} {fam}", flush=True)
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("target", type=Path)
    ap.add_argument("bench", type=Path, nargs="+")
    ap.add_argument("--repeats", default="1,10,50")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    src, tgt = kernel_law_rows(a.bench, a.source, a.target)
    d = refit_scores(src, tgt, [int(r) for r in a.repeats.split(",")], a.seeds)
    t = d.groupby(["method", "family"], sort=False)["mape_pct"].agg(["mean", "std"]).unstack()
    buf = io.StringIO()
    buf.write(f"# python scripts/few_shot_refit_check.py {a.source} {a.target} "
              f"{' '.join(map(str, a.bench))} --repeats {a.repeats} --seeds {a.seeds} "
              f"--out {a.out}\nlatency MAPE %, held-out architectures, k = {K}, mean / sd over "
              f"{a.seeds} seeds\n\n")
    buf.write(t.round(2).to_string() + "\n")
    a.out.mkdir(parents=True, exist_ok=True)
    d.to_csv(a.out / "scores.csv", index=False)
    (a.out / "check.txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
