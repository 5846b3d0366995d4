"""Field check of ``carb time``: fresh design candidates timed on this host against the sum of
their calls and the composition law fitted on this host.

1. A call cache in a temporary folder, and the composition law fitted with it on this host
   (:func:`carb_lib.kernels.composition.calibrate`: 40 design networks of the catalogued design
   campaigns, batches 1 and 16, each timed whole and by its calls, as ``carb time --fit-law``).
2. ``--n`` fresh candidates: fp32 rows of the paper's ResNet grid at batches 1 and 16, depth
   <= 50 and width <= 1 (a network forward of at most about a second), drawn with ``--seed``,
   none of the architectures and resolutions the law was fitted on.
3. :func:`carb_lib.kernels.replay.screen_times` with the law and a budget large enough to time
   every call (the sum ``predicted_ms`` and ``law_ms``), then each candidate timed whole now by
   the same harness (two warm-up calls, the median of three windows of at least 0.3 s; one
   thread, the heap kept).

Writes ``results/benchmarks/replay_field_<platform>.csv`` (one row per candidate) and
``replay_field_<platform>_summary.csv`` (per batch and both: median APE, share within ±10 %,
Spearman within the batch, median predicted / measured; the sum and the law; on the AMD EPYC
Zen 4: ``replay_field_cpu_epyc_zen4_2c.csv`` and ``replay_field_cpu_epyc_zen4_2c_summary.csv``).
One run per CPU kind, reported as it comes (``--score-only`` rescores the rows written).

``python benchmarks/replay_field.py`` (about 10 min on 2 cores; nothing else heavy meanwhile).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import _once  # noqa: E402 - benchmarks/, the script's folder
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ARCH = ["block", "depth", "width", "early_downsample", "resolution"]


def fresh_candidates(n: int, seed: int, fitted: pd.DataFrame) -> pd.DataFrame:
    """``n`` fp32 paper-grid rows at batches 1 and 16 (half each), depth <= 50, width <= 1,
    none of whose architecture and resolution the law was fitted on."""
    from carb_lib.families.resnet import paper_grid

    g = paper_grid()
    g = g[g["precision"].eq("fp32") & g["batch"].isin([1, 16]) & (g["depth"] <= 50)
          & (g["width"] <= 1.0)]
    seen = fitted[fitted["family"].eq("resnet")][ARCH].astype(str).agg("|".join, axis=1)
    g = g[~g[ARCH].astype(str).agg("|".join, axis=1).isin(set(seen))]
    return pd.concat([b.sample(n // 2, random_state=seed) for _, b in g.groupby("batch")],
                     ignore_index=True)


def run(n: int, seed: int, folder: Path) -> tuple[pd.DataFrame, str]:
    import torch
    from tqdm.auto import tqdm

    from carb_lib.families.space import config_from_row
    from carb_lib.kernels import composition
    from carb_lib.kernels.law import timing_protocol
    from carb_lib.kernels.replay import CallCache, screen_times

    torch.set_num_threads(1)
    cache = CallCache(folder, keep_heap=True, budget_s=3600)
    law, fitted = composition.calibrate(cache, progress=True)
    cands = fresh_candidates(n, seed, fitted)
    got = screen_times(cands, cache=cache, law=law, budget_s=3600, progress=True)
    measured, cvs = [], []
    for row in tqdm(cands.to_dict("records"), desc="candidates timed whole"):
        config = config_from_row(row)
        net = config.build_model().eval()
        x = torch.randn(int(config.batch), 3, config.resolution, config.resolution)
        with timing_protocol(cache.threads):
            seconds, cv = _once.time_network(net, x, 0.3)
        measured.append(1e3 * seconds)
        cvs.append(cv)
    keep = ["config_id", *ARCH, "batch", "predicted_ms", "law_ms", "n_calls", "weight_mib",
            "call_mib", "n_untimed"]
    rows = got[keep].assign(measured_now_ms=measured, measured_now_cv=cvs)
    return rows, law.describe()


def score(rows: pd.DataFrame) -> pd.DataFrame:
    from scipy.stats import spearmanr

    out = []
    for method, col in (("sum of calls", "predicted_ms"), ("composition law", "law_ms")):
        for batch, g in [*rows.groupby("batch"), ("all", rows)]:
            ratio = g[col] / g["measured_now_ms"]
            ape = (ratio - 1).abs() * 100
            rho = spearmanr(g[col], g["measured_now_ms"]).statistic if batch != "all" else np.nan
            out.append({"method": method, "batch": batch, "n": len(g),
                        "median_ape_pct": ape.median(), "within_10pct": float((ape <= 10).mean()),
                        "spearman": rho, "median_pred_over_measured": ratio.median()})
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--n", type=int, default=30, help="fresh candidates (half at each batch)")
    ap.add_argument("--seed", type=int, default=0)
    _once.add_options(ap, "default: the catalogued CPU platform measured on this CPU kind")
    args = ap.parse_args(argv)
    if args.n < 4:
        sys.exit("error: --n must be at least 4")

    from carb_lib.measure.devices import cpu_identity

    begun = _once.begin(args, "replay_field", "design")
    if begun is None:
        return 0
    platform, out, summary_out, rows = begun
    if rows is None:
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="carb-field-") as tmp:
            rows, law = run(args.n, args.seed, Path(tmp))
        print(f"{law}; timed in {time.perf_counter() - t0:.0f} s")
        rows = rows.assign(platform=platform, cpu_id=cpu_identity(), law=law)
        args.results_dir.mkdir(parents=True, exist_ok=True)
        rows.to_csv(out, index=False)
    table = score(rows).assign(platform=platform)
    _once.finish(table, out, summary_out, width=160)
    return 0


if __name__ == "__main__":
    sys.exit(main())
