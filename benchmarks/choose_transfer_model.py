"""Choose the preset of the transfer model ``carb fit`` stores, on held-out design families.

The transfer model (``shared`` features: no family encoding) predicts rows of families the fit
did not hold (:mod:`carb_lib.ensemble.routing`). Here it is chosen where that is the question
and the answer is measured: on every CPU with ResNet rows and rows of the new design families
(MobileNetV2, VGG, EfficientNet; notebook 05's rows), each candidate is fitted on the CPU's
ResNet rows as ``carb fit`` fits them (the latency law ``auto`` chooses, the kernel law where
the platform has an operator benchmark) and scored on every new-family row: median APE, share
within +-10 % and Spearman of latency, per family. No zoo or field row is read. The fitted
model of the default path (``--feature-set static``) cannot predict a design family it did not
hold (it encodes families), so it is no candidate here.

Writes ``results/benchmarks/transfer_model_choice.csv`` (one row per platform, family and
candidate) and prints the median over platforms and families per candidate. Run on a quiet
machine: ``python benchmarks/choose_transfer_model.py`` (a few minutes on 2 cores).
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "benchmarks" / "transfer_model_choice.csv"
#: Candidates: (name, preset) of the shared-feature model.
CANDIDATES: tuple[tuple[str, str], ...] = (("shared_default", "default"), ("shared_fast", "fast"))
#: Per platform: ResNet rows, new-family rows.
PAIRS: dict[str, tuple[str, str]] = {
    p: (f"data/{p}/design/rows.parquet", f"data/{p}/design/rows_new_families.parquet")
    for p in ("cpu_epyc_zen3_2c", "cpu_epyc_zen5_2c", "cpu_xeon_emr_2c", "cpu_xeon_gnr_2c")
}


def main() -> None:
    from carb_lib.core.vocab import EXTRA_STATIC_FEATURES
    from carb_lib.dataset.features import fill_static_features
    from carb_lib.dataset.schema import read_dataset
    from carb_lib.ensemble import PRESETS, CARBRegressor
    from carb_lib.ensemble.latency_default import choose_latency_law
    from carb_lib.evaluation import prepare_dataset
    from carb_lib.kernels.law import read_bench
    from carb_lib.transfer.cpus import _score

    out = []
    for plat, (src_file, new_file) in PAIRS.items():
        src = read_dataset(ROOT / src_file)
        src = src[src["status"].eq("ok")]
        new = read_dataset(ROOT / new_file)
        new = new[new["status"].eq("ok")]
        choice = choose_latency_law(src, plat, campaign=Path(src_file).stem)
        law = ({"latency_law": "kernel", "kernel_bench": read_bench(choice.kernel_bench)}
               if choice.law == "kernel" else {"latency_law": "roofline"})
        train = fill_static_features(prepare_dataset(src, plat), EXTRA_STATIC_FEATURES)
        test = fill_static_features(prepare_dataset(new, plat), EXTRA_STATIC_FEATURES)
        for name, preset in CANDIDATES:
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # as carb fit: the preset, its latency law replaced by the one chosen
                m = CARBRegressor(feature_set="shared",
                                  **{**PRESETS[preset], "n_jobs": 2, **law}).fit(train)
                pred = m.predict(test)["latency_ms"].to_numpy(float)
            fit_s = time.perf_counter() - t0
            y = test["latency_ms"].to_numpy(float)
            for fam in sorted(test["family"].astype(str).unique()):
                sel = test["family"].astype(str).eq(fam).to_numpy()
                out.append({"platform": plat, "family": fam, "candidate": name,
                            "preset": preset, "latency_law": choice.law, "n": int(sel.sum()),
                            **_score(y[sel], pred[sel]), "fit_s": fit_s})
            print(f"{plat} {name}: {fit_s:.0f} s", flush=True)
    res = pd.DataFrame(out)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    res.to_csv(OUT, index=False)
    summ = res.groupby("candidate")[["median_ape_pct", "within_10pct", "spearman"]].median()
    print(summ.round(3).to_string())
    best = summ["median_ape_pct"].idxmin()
    print(f"lowest median APE over platforms and families: {best}")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
