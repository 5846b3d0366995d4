"""Choose the screening default of CARBRegressor: accuracy on validation rows, speed on 1M rows.

The study asks for a default model that is <= 200 MB on disk, predicts 1,000,000 candidates
*with intervals* in <= 10 s on 2 cores, and stays within 10 % (relative MAPE) of the largest
preset; its learners must follow the ablation on *validation* data, never test data.

For each candidate parameter set of :data:`CANDIDATES` (fixed here before any result was seen):

* **accuracy**: fitted on the train part and scored on the **validation** part of the same
  ``--seeds`` random 70/15/15 splits of a measured dataset
  (:func:`carb_lib.evaluation.compare_presets` with ``part="val"``), MAPE per target as mean ± sd;
* **speed and size**: fitted on the 17,280-row SYNTHETIC grid, then ``predict_interval`` on
  1,000,000 rows timed ``--repeats`` times (median), and the size of the saved model, exactly
  as ``benchmarks/bench_carb.py`` measures the presets.

Rule: among the candidates within both limits, the one with the lowest *relative validation
MAPE* (per target divided by the best candidate's, averaged over targets) wins. The script
prints the winner; making it the constructor default is a separate, reviewed edit (the
``default`` preset is the constructor defaults). ``results/benchmarks/default_choice.csv``
holds one row per candidate. Test metrics of the winner beside the ``paper`` preset are
notebook 03's preset comparison (``compare``), not part of the choice.

Run on a quiet machine (no measurement campaign): ``python benchmarks/choose_default.py``.
"""

from __future__ import annotations

import argparse
import os
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import pandas as pd  # noqa: E402
from bench_carb import (  # noqa: E402
    TARGET_DISK_MIB,
    TARGET_INTERVAL_1M_S,
    fit_and_size,
    synthetic_sets,
    timed,
)

_XL = {"learners": ("xgb", "lgbm")}
#: Candidate parameter sets (learner set x size); the corrector, cascade, base law and
#: conformal settings stay at the constructor's values.
CANDIDATES: dict[str, dict] = {
    "xgb150+lgbm150": {**_XL, "n_estimators_xgb": 150, "n_estimators_lgbm": 150},
    "xgb80+lgbm80": {**_XL, "n_estimators_xgb": 80, "n_estimators_lgbm": 80,
                     "learning_rate_xgb": 0.15, "learning_rate_lgbm": 0.15},
    "lgbm150": {"learners": ("lgbm",), "n_estimators_lgbm": 150},
    "et30": {"learners": ("et",), "n_estimators_et": 30},
    "et60": {"learners": ("et",), "n_estimators_et": 60},
    "lgbm150+et30": {"learners": ("lgbm", "et"), "n_estimators_lgbm": 150,
                     "n_estimators_et": 30},
    "lgbm80+et30": {"learners": ("lgbm", "et"), "n_estimators_lgbm": 80,
                    "learning_rate_lgbm": 0.15, "n_estimators_et": 30},
    "xgb150+lgbm150+et30": {"learners": ("xgb", "lgbm", "et"), "n_estimators_xgb": 150,
                            "n_estimators_lgbm": 150, "n_estimators_et": 30},
    "xgb80+lgbm80+et30": {"learners": ("xgb", "lgbm", "et"), "n_estimators_xgb": 80,
                          "n_estimators_lgbm": 80, "learning_rate_xgb": 0.15,
                          "learning_rate_lgbm": 0.15, "n_estimators_et": 30},
}


def speed(name: str, params: dict, train: pd.DataFrame, big: pd.DataFrame, repeats: int,
          n_jobs: int) -> dict:
    """Fit on the SYNTHETIC grid; time predict_interval on ``big``; size on disk."""
    from carb_lib.core.vocab import DEFAULT_COVERAGE

    model, fit_s, disk = fit_and_size(params, train, n_jobs)
    iv_s, iv_all = timed(lambda: model.predict_interval(big, coverage=DEFAULT_COVERAGE), repeats)
    print(f"[{name}] synthetic fit {fit_s:.1f} s, {disk:.1f} MiB, predict_interval "
          f"{len(big):,} rows {iv_s:.2f} s (runs {', '.join(f'{t:.2f}' for t in iv_all)})",
          flush=True)
    return {"candidate": name, "synthetic_fit_s": fit_s, "disk_mib": disk,
            "interval_s": iv_s, "interval_runs": " ".join(f"{t:.3f}" for t in iv_all)}


def choose(table: pd.DataFrame, full_size: bool = True) -> pd.DataFrame:
    """Add ``relative_val_mape`` and ``feasible``; mark the winner (``chosen``).

    ``feasible`` needs ``interval_s`` timed on 1,000,000 rows (``full_size``).
    """
    mape = table.filter(regex=r"^val_mape_pct_mean_")
    table = table.assign(relative_val_mape=(mape / mape.min()).mean(axis=1))
    table["feasible"] = (full_size & (table["interval_s"] <= TARGET_INTERVAL_1M_S)
                         & (table["disk_mib"] <= TARGET_DISK_MIB))
    table["chosen"] = False
    ok = table[table["feasible"]]
    if len(ok):
        table.loc[ok["relative_val_mape"].idxmin(), "chosen"] = True
    return table.sort_values("relative_val_mape").reset_index(drop=True)


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, default=Path("data/cpu_epyc_zen3_2c/design/rows.parquet"))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--candidates", nargs="+", default=list(CANDIDATES))
    ap.add_argument("--predict-rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks/default_choice.csv"))
    args = ap.parse_args(argv)
    unknown = sorted(set(args.candidates) - set(CANDIDATES))
    if unknown:
        ap.error(f"unknown candidate(s) {unknown}; known: {sorted(CANDIDATES)}")

    from carb_lib.dataset.schema import read_dataset
    from carb_lib.evaluation import compare_presets, prepare_dataset

    # the roofline latency law, as when the default was chosen (the constructor's "auto" may
    # choose the kernel law on measured rows)
    cands = {n: {**CANDIDATES[n], "n_jobs": args.n_jobs, "latency_law": "roofline"}
             for n in args.candidates}
    df = prepare_dataset(read_dataset(args.dataset))
    print(f"validation: {len(df):,} rows of {args.dataset}, {args.seeds} seeds, "
          f"{len(cands)} candidates", flush=True)
    val = compare_presets(df, cands, seeds=range(args.seeds), part="val")
    wide = val.pivot(index="preset", columns="target",
                     values=["mape_pct_mean", "mape_pct_sd", "r2_mean", "fit_s_mean"])
    wide.columns = [f"val_{m}_{t}" for m, t in wide.columns]

    train, big, _ = synthetic_sets(17_280, args.predict_rows)
    sp = pd.DataFrame([speed(n, p, train, big, args.repeats, args.n_jobs)
                       for n, p in cands.items()]).set_index("candidate")

    table = choose(wide.join(sp).rename_axis("candidate").reset_index(),
                   full_size=len(big) >= 1_000_000)
    table = table.assign(
        dataset=str(args.dataset), seeds=args.seeds, predict_rows=len(big),
        speed_data="SYNTHETIC (carb_lib.dataset.synthetic, error_rate=0)", cpus=os.cpu_count(),
        params=[", ".join(f"{k}={v}" for k, v in CANDIDATES[c].items())
                for c in table["candidate"]],
        measured_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    show = [c for c in table.columns if c.startswith("val_mape_pct_mean_")]
    print(table[["candidate", *show, "relative_val_mape", "interval_s", "disk_mib",
                 "feasible", "chosen"]].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    won = table[table["chosen"]]
    print(f"chosen: {won['candidate'].iloc[0]}" if len(won) else "no candidate within limits")
    print(f"wrote {args.out}")
    return table


if __name__ == "__main__":
    main()
