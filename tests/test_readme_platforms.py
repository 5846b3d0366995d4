"""The README's per-CPU block (carb_lib.app.readme_platforms) counts the targets from the file."""

from __future__ import annotations

import pandas as pd

from carb_lib.app.readme_platforms import platforms_block, platforms_splits_block


def _summary(tmp_path, ratio_a, r2_a):
    rows = []
    for p, ratio, r2 in (("cpu_a", ratio_a, r2_a), ("cpu_b", 2.0, 0.90)):
        for split in ("random", "batch_small"):
            for law, mape in (("auto", 10.0), ("roofline", 12.0)):
                rows.append({"platform": p, "split": split, "law": law, "target": "latency_ms",
                             "mape_pct_mean": mape, "mape_pct_sd": 0.5, "r2_mean": r2,
                             "n_seeds": 2, "noise_mape_pct": mape / ratio,
                             "mape_over_noise": ratio})
                rows.append({"platform": p, "split": split, "law": law,
                             "target": "peak_mem_mib", "mape_pct_mean": 0.0, "r2_mean": 1.0,
                             "n_seeds": 2})
    (tmp_path / "carb").mkdir()
    pd.DataFrame(rows).to_csv(tmp_path / "carb" / "platforms.csv", index=False)
    return tmp_path


def test_the_block_counts_each_target_per_platform(tmp_path):
    text = platforms_block(_summary(tmp_path, 1.2, 0.96))
    assert "on **1 of 2** CPUs; small-batch R² at least 0.95 on **1 of 2** CPUs" in text
    assert "| `cpu_a` | 8.3 % | **10.0** ± 0.5 / 12.0 % | 1.20 | **0.960** / 0.960 |" in text


def test_a_missed_target_is_counted_missed(tmp_path):
    text = platforms_block(_summary(tmp_path, 1.6, 0.94))
    assert "on **0 of 2** CPUs; small-batch R² at least 0.95 on **0 of 2** CPUs" in text


def test_no_report_says_how_to_make_one(tmp_path):
    assert "make reproduce" in platforms_block(tmp_path)
    assert "make reproduce" in platforms_splits_block(tmp_path)
    assert "| batch_small | 10.0 / 12.0 | 10.0 / 12.0 |" in platforms_splits_block(
        _summary(tmp_path, 1.2, 0.96))
