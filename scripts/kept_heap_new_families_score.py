"""Pre-registration Y (session 29): issue 15's cross-family test with a ResNet source and
new-family targets timed in one sitting with the heap kept.

``results/other_cpus/PLATFORM_TAG/PREREGISTRATION.md`` says what is predicted. Reads notebook
05's ``cross_family/issue_targets_kernel_law.csv`` under ``results/other_cpus/PLATFORM_TAG``, the
kept new-family rows and ``scripts/cross_family_residuals.py``'s ``residual_rows.parquet`` under
``results/cross_family/residuals/PLATFORM_TAG``; prints session 19's cells of the same configs
(``--before``) beside them:

* Y1: efficientnet, ``offset`` with k = 10, kernel law: latency MAPE stays above 10 %;
* Y2: mobilenetv2 and vgg, the same cell: <= 10 %;
* Y3: the other six of issue 15's nine targets met (Spearman >= 0.95, memory zero-shot <= 5 %);
* Y4: at most 1 % of the kept new-family rows fault >= 100 times per call;
* Y5: efficientnet's zero-shot mean log residual at batch <= 2 exceeds that at batch >= 8 by
  at least 0.05 (session 19: 0.085).

``python scripts/kept_heap_new_families_score.py cpu_xeon_gnr_2c``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from carb_lib.dataset import read_dataset

TARGETS = "cross_family/issue_targets_kernel_law.csv"


def batch_gap(residuals: pd.DataFrame, family: str) -> float:
    """Mean zero-shot log residual at batch <= 2 minus that at batch >= 8."""
    r = residuals.loc[residuals["family"].astype(str) == family]
    return float(r.loc[r["batch"] <= 2, "r"].mean() - r.loc[r["batch"] >= 8, "r"].mean())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--tag", default="session29_kept")
    ap.add_argument("--before", default="rest_sampler4",
                    help="session 19's results of the same configs: results/other_cpus/PLATFORM_BEFORE")
    a = ap.parse_args(argv)
    p = a.platform
    files = {"notebook 05 targets": Path(f"results/other_cpus/{p}_{a.tag}/{TARGETS}"),
             "session 19 targets": Path(f"results/other_cpus/{p}_{a.before}/{TARGETS}"),
             "kept new-family rows": Path(f"data/other_cpus/new_families/{p}_{a.tag}.parquet"),
             "residual rows": Path(f"results/cross_family/residuals/{p}_{a.tag}/"
                                   "residual_rows.parquet"),
             "session 19 residual rows": Path(f"results/cross_family/residuals/{p}_{a.before}/"
                                              "residual_rows.parquet")}
    for what, f in files.items():
        if not f.exists():
            print(f"kept_heap_new_families_score: no {what} file {f}", file=sys.stderr)
            return 2
    now = pd.read_csv(files["notebook 05 targets"])
    then = pd.read_csv(files["session 19 targets"])
    lines = [f"# python scripts/kept_heap_new_families_score.py {p} --tag {a.tag} --before "
             f"{a.before}", ""]
    verdicts: list[bool] = []

    def judge(name: str, text: str, ok: bool) -> None:
        verdicts.append(ok)
        lines.append(f"{name} {'HELD' if ok else 'MISSED'}: {text}")

    def lat(df: pd.DataFrame, fam: str) -> pd.Series:
        t = df.loc[(df["family"] == fam) & (df["target"] == "latency")
                   & (df["metric"] == "mape_pct")]
        return t.iloc[0]

    def show(fam: str) -> str:
        n, b = lat(now, fam), lat(then, fam)
        return f"{fam} {n['mean']:.2f} ± {n['sd']:.2f} % (session 19: {b['mean']:.2f} ± {b['sd']:.2f})"

    judge("Y1", f"{show('efficientnet')}; predicted > 10 %", lat(now, "efficientnet")["mean"] > 10)
    judge("Y2", f"{show('mobilenetv2')}, {show('vgg')}; predicted <= 10 % each",
          bool((lat(now, "mobilenetv2")["mean"] <= 10) and (lat(now, "vgg")["mean"] <= 10)))
    rest = now.loc[~((now["target"] == "latency") & (now["metric"] == "mape_pct"))]
    judge("Y3", ", ".join(f"{r.family} {r.target} {r.metric} {r.mean:.4g}"
                          for r in rest.itertuples()) + "; predicted all met",
          bool(rest["met"].astype(bool).all()))
    rows = read_dataset(files["kept new-family rows"])
    f = rows["minor_faults_per_call"]
    share = float((f >= 100).sum() / max(f.notna().sum(), 1))
    judge("Y4", f"{share:.2%} of {int(f.notna().sum()):,} kept rows fault >= 100 times per call "
          f"(median {f.median():.1f}); bound 1 %", share <= 0.01)
    gap = batch_gap(pd.read_parquet(files["residual rows"]), "efficientnet")
    gap_then = batch_gap(pd.read_parquet(files["session 19 residual rows"]), "efficientnet")
    judge("Y5", f"efficientnet zero-shot mean log residual, batch <= 2 minus batch >= 8: "
          f"{gap:+.3f} (session 19: {gap_then:+.3f}); predicted >= 0.05", gap >= 0.05)
    lines += ["", f"{sum(verdicts)} of {len(verdicts)} held"]
    text = "\n".join(lines) + "\n"
    out = files["notebook 05 targets"].parent.parent / "score.txt"
    out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
