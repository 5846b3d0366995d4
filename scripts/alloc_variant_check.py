"""Peak memory on a CPU whose oneDNN runs fp16 convs, with and without the ``16+fp16`` variant.

The allocator model's ``16+fp16`` variant (``carb_lib.families._alloc``) was added in session 14
for the Intel Xeon (AVX512-FP16). This script fits the default CARB memory model on the Xeon's
ResNet rows (3 seeds of the stratified 70/15/15 split, test part) once with every allocator
variant and once with the variant removed (so the law can only learn 8 or 16), and prints the
peak-memory MAPE and R^2 per precision.

``python scripts/alloc_variant_check.py data/other_cpus/cpu_xeon_emr_2c.parquet``
"""
import sys
import warnings

import numpy as np
import pandas as pd

from carb_lib import vocab
from carb_lib.dataset import read_dataset
from carb_lib.ensemble import preset
from carb_lib.evaluation.models import fit_quiet
from carb_lib.evaluation.splits import stratified_split
from carb_lib.metrics import regression_metrics

warnings.filterwarnings("ignore")
df = read_dataset(sys.argv[1] if len(sys.argv) > 1 else "data/other_cpus/cpu_xeon_emr_2c.parquet")
variant_col = vocab.ALLOC_FEATURES[vocab.FP16_ONEDNN_VARIANT]
print(f"# python scripts/alloc_variant_check.py {' '.join(sys.argv[1:])}")
for label in ("with 16+fp16", "without (8/16 only)"):
    if label.startswith("without"):
        vocab.ALLOC_FEATURES.pop(vocab.FP16_ONEDNN_VARIANT)
        df = df.drop(columns=[variant_col])
    res = []
    for seed in range(3):
        split = stratified_split(df, random_state=seed).to_numpy()
        tr, te = df[split == "train"], df[split == "test"]
        m = fit_quiet({**preset("default", targets=("peak_mem_mib",), random_state=seed)}, tr)
        p = m.predict(te)["peak_mem_mib"]
        for prec in ("fp32", "fp16"):
            sel = (te["precision"] == prec).to_numpy()
            r = regression_metrics(te["peak_mem_mib"].to_numpy()[sel], np.asarray(p)[sel])
            res.append((seed, prec, r["mape_pct"], r["r2"]))
        law = m.base_laws_["peak_mem_mib"] if hasattr(m, "base_laws_") else None
    r = pd.DataFrame(res, columns=["seed", "precision", "mape_pct", "r2"])
    print(label, "learned variant:", getattr(law, "alloc_block", "?"))
    print(r.groupby("precision")[["mape_pct", "r2"]].agg(["mean", "std"]).round(4).to_string())
