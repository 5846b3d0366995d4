"""The HELP comparison chooses the few-shot method on the devices it does not score, and reports
every batch of the desktop GPUs (carb_lib.transfer.help_benchmark)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from carb_lib.transfer import help_benchmark as H


def _summary(scores):
    """``scores``: {(setting, method): spearman} -> a few-shot summary at k = 10."""
    kinds = {"gpu": "desktop_gpu", "cpu": "desktop_cpu", "ph": "mobile"}
    rows = []
    for (target, method), v in scores.items():
        platform = target.split("@")[0]
        rows.append({"target": target, "platform": platform,
                     "device_kind": kinds[platform.split("_")[0]], "method": method, "k": 10,
                     "spearman_mean": v})
    return pd.DataFrame(rows)


def _settings(summary):
    t = summary[["target", "platform", "device_kind"]].drop_duplicates()
    return t.rename(columns={"target": "setting"}).assign(
        batch=t["target"].str.rpartition("@b")[2].astype(int))


def test_the_method_is_chosen_on_the_other_devices_not_on_the_scored_one():
    # ridge is best on gpu_a (scored) but blend is best on the other devices: blend is chosen
    scores = {("gpu_a@b256", "blend"): 0.90, ("gpu_a@b256", "ridge"): 0.99,
              ("gpu_b@b256", "blend"): 0.95, ("gpu_b@b256", "ridge"): 0.80,
              ("cpu_c@b1", "blend"): 0.95, ("cpu_c@b1", "ridge"): 0.85}
    ch = H.heldout_choice(_summary(scores)).set_index("target")
    assert ch.at["gpu_a@b256", "chosen_method"] == "blend"
    assert ch.at["gpu_a@b256", "spearman_chosen"] == 0.90
    # for gpu_b the others are gpu_a and cpu_c: ridge 0.92 against blend 0.925
    assert ch.at["gpu_b@b256", "chosen_method"] == "blend"
    scores[("cpu_c@b1", "ridge")] = 0.99
    ch = H.heldout_choice(_summary(scores)).set_index("target")
    assert ch.at["gpu_b@b256", "chosen_method"] == "ridge"
    assert ch.at["gpu_b@b256", "spearman_chosen"] == 0.80


def test_the_comparison_reports_each_gpu_batch_with_help_only_at_its_own_batch():
    scores = {}
    for dev, v in (("gpu_a", 0.9), ("gpu_b", 0.8)):
        for b, dv in ((1, -0.1), (32, -0.05), (256, 0.0)):
            scores[(f"{dev}@b{b}", "blend")] = v + dv
            scores[(f"{dev}@b{b}", "flops")] = 0.5
    scores[("cpu_c@b1", "blend")] = 0.7
    scores[("cpu_c@b1", "flops")] = 0.5
    summ = _summary(scores)
    cmp = H.help_comparison(summ, _settings(summ)).set_index("group")
    assert cmp.at["desktop GPU", "batch"] == 256
    assert np.isclose(cmp.at["desktop GPU", "ours"], 0.85)
    assert np.isclose(cmp.at["desktop GPU, batch 1", "ours"], 0.75)
    assert np.isnan(cmp.at["desktop GPU, batch 1", "help_reported"])
    assert np.isclose(cmp.at["desktop GPU, batch 32", "ours"], 0.80)
    assert "desktop GPU, batch 256" not in cmp.index  # the device-kind row holds it
    assert np.isclose(cmp.at["mean over devices", "ours"], (0.9 + 0.8 + 0.7) / 3)
    assert np.isclose(cmp.at["mean over settings, every batch", "ours"],
                      summ.loc[summ["method"] == "blend", "spearman_mean"].mean())
    assert cmp.at["mean over devices", "help_reported"] == 0.932
