"""Score pre-registration I (``results/cross_family/siblings/PREREGISTRATION.md``).

Reads ``DIR/<data set>/summary.csv`` of ``scripts/sibling_source_check.py`` for the six blind
data sets and judges predictions I1-I7 as they were written before the first run; writes
``DIR/scores.txt``. ``python scripts/sibling_source_score.py results/cross_family/siblings``
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pandas as pd

DATA_SETS = ("cpu_epyc_zen5_2c", "cpu_epyc_zen5_2c_rest", "cpu_epyc_zen5_2c_passes",
             "cpu_xeon_gnr_2c", "cpu_xeon_gnr_2c_rest", "cpu_xeon_emr_2c")
ALL_SIBLINGS = {"efficientnet": "resnet+mobilenetv2+vgg", "mobilenetv2": "resnet+efficientnet+vgg",
                "vgg": "resnet+efficientnet+mobilenetv2"}


def cell(s: pd.DataFrame, family: str, source: str, model: str, col: str) -> float:
    hit = s[(s["family"] == family) & (s["source"] == source) & (s["model"] == model)]
    if len(hit) != 1:
        raise ValueError(f"{family} / {source} / {model}: {len(hit)} rows in the summary")
    return float(hit[col].iloc[0])


def per_data_set(s: pd.DataFrame) -> dict[str, float]:
    e, m, v = "efficientnet", "mobilenetv2", "vgg"
    return {
        "eff_gain": cell(s, e, ALL_SIBLINGS[e], "offset", "gain_pts_mean"),
        "eff_mbv2_minus_vgg": (cell(s, e, "resnet+mobilenetv2", "offset", "mape_pct_mean")
                               - cell(s, e, "resnet+vgg", "offset", "mape_pct_mean")),
        "mbv2_gain": cell(s, m, ALL_SIBLINGS[m], "offset", "gain_pts_mean"),
        "vgg_gain": cell(s, v, ALL_SIBLINGS[v], "offset", "gain_pts_mean"),
        "eff_sib_mape": cell(s, e, ALL_SIBLINGS[e], "offset", "mape_pct_mean"),
        "eff_own_mape": cell(s, e, "resnet", "own_model", "mape_pct_mean"),
        "eff_base_mape": cell(s, e, "resnet", "offset", "mape_pct_mean"),
        "mbv2_sib_mape": cell(s, m, ALL_SIBLINGS[m], "offset", "mape_pct_mean"),
        "mbv2_base_mape": cell(s, m, "resnet", "offset", "mape_pct_mean"),
        "eff_sib_spearman": cell(s, e, ALL_SIBLINGS[e], "offset", "spearman_mean"),
        "eff_base_spearman": cell(s, e, "resnet", "offset", "spearman_mean"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", type=Path)
    args = ap.parse_args()
    t = pd.DataFrame({d: per_data_set(pd.read_csv(args.dir / d / "summary.csv"))
                      for d in DATA_SETS}).T
    n = len(t)
    checks = [
        ("I1", "efficientnet, all siblings, offset k=10: gain > 0 on >= 5 of 6 and >= 2 points on"
               " >= 4 of 6", (t.eff_gain > 0).sum() >= 5 and (t.eff_gain >= 2).sum() >= 4,
         f"gain > 0 on {(t.eff_gain > 0).sum()}, >= 2 on {(t.eff_gain >= 2).sum()} of {n}"),
        ("I2", "efficientnet, offset k=10: +mobilenetv2 alone >= 1.5 points below +vgg alone on"
               " >= 4 of 6", (t.eff_mbv2_minus_vgg <= -1.5).sum() >= 4,
         f"on {(t.eff_mbv2_minus_vgg <= -1.5).sum()} of {n}"),
        ("I3", "mobilenetv2, all siblings, offset k=10: gain > 0 on >= 4 of 6",
         (t.mbv2_gain > 0).sum() >= 4, f"on {(t.mbv2_gain > 0).sum()} of {n}"),
        ("I4", "vgg, all siblings, offset k=10: gain >= -1 point on all 6",
         bool((t.vgg_gain >= -1).all()), f"on {(t.vgg_gain >= -1).sum()} of {n}"),
        ("I5", "efficientnet, all siblings, offset k=10: MAPE <= own model + 3 points on >= 4 of 6",
         (t.eff_sib_mape <= t.eff_own_mape + 3).sum() >= 4,
         f"on {(t.eff_sib_mape <= t.eff_own_mape + 3).sum()} of {n}"),
        ("I6", "efficientnet, all siblings: Spearman >= the ResNet-only source's on >= 5 of 6",
         (t.eff_sib_spearman >= t.eff_base_spearman).sum() >= 5,
         f"on {(t.eff_sib_spearman >= t.eff_base_spearman).sum()} of {n}"),
        ("I7", "efficientnet, all siblings, offset k=10: MAPE <= 10 % on at most 2 of 6",
         (t.eff_sib_mape <= 10).sum() <= 2, f"on {(t.eff_sib_mape <= 10).sum()} of {n}"),
    ]
    buf = io.StringIO()
    buf.write(f"# python scripts/sibling_source_score.py {args.dir}\n")
    buf.write("per data set (MAPE %, points, Spearman; offset with k = 10 rows):\n")
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        buf.write(t.round(3).to_string() + "\n\n")
    for key, text, held, detail in checks:
        buf.write(f"{key} {'HELD' if held else 'MISSED'}: {text} ({detail})\n")
    (args.dir / "scores.txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
