"""How right is CARB on the machine it runs on? A field check of the default path, end to end.

On whatever CPU kind it runs, with the platform whose shipped rows were measured on this kind
(``cpu_id``):

1. ``carb fit`` with its defaults on the platform's shipped design rows (ResNet, and the new
   families where that CPU has them; one protocol), so that no field config was in the fit;
2. a same-hour ``carb audit`` of :data:`AUDIT_N` stored rows (none of them calibration configs):
   how fast this host runs against its stored rows now, the median new/old ratio with a 95 %
   bootstrap interval;
3. the host calibration of ``carb predict --calibrate`` (the rows' protocol, its default budget),
   and beside it the calibration as it was timed before the protocol was recorded (torch's
   default threads, heap kept, five small ResNets);
4. predictions of the field configs (:data:`FIELD_NETWORKS` at :data:`RESOLUTIONS` px, batches
   :data:`BATCHES`, fp32, whole-batch compute at most :data:`MAX_GFLOPS` GFLOP): by the default
   path (the fitted model, its transfer model for families it did not hold) and by the fitted
   model alone, each uncalibrated, calibrated, and with the audit's factor applied by hand;
5. the field configs timed now under the rows' protocol (fresh processes), :data:`REPEAT_N` of
   them twice: this host's re-measurement noise in the same run.

The network list is fixed here, before any run: torchvision networks outside the zoo campaign
(:data:`carb_lib.families.zoo.CAMPAIGN_NETWORKS`) and twelve campaign networks at a batch the
campaign never timed (8). Writes the measured rows to ``data/<platform>/field/rows.parquet`` and
the audit rows to ``data/<platform>/field/audit.parquet`` (new files: one run per CPU kind),
appends one summary row (date, ``cpu_id``, commit) to ``results/benchmarks/field_<platform>.csv``
and the per-config table of the run to ``results/benchmarks/field_<platform>_configs.csv`` (on
the AMD EPYC Zen 4: ``results/benchmarks/field_cpu_epyc_zen4_2c.csv`` and
``field_cpu_epyc_zen4_2c_configs.csv``).
One run per CPU kind, reported as it comes; never re-run to improve a number.

``python benchmarks/field_check.py`` (about 10-20 min on 2 cores; nothing else heavy meanwhile)
``python benchmarks/field_check.py --dry-run`` (the configs, their estimated timing; no timing)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: Torchvision networks outside the zoo campaign (never measured by this project).
OUTSIDE_CAMPAIGN: tuple[str, ...] = (
    "convnext_small", "densenet161", "efficientnet_b5", "regnet_x_16gf", "regnet_y_16gf",
    "resnext101_64x4d", "vgg13_bn", "wide_resnet101_2",
)  # fmt: skip
#: Campaign networks, here at batch 8, a batch the zoo campaign never timed.
IN_CAMPAIGN: tuple[str, ...] = (
    "resnet18", "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "shufflenet_v2_x1_0",
    "googlenet", "densenet121", "regnet_y_800mf", "squeezenet1_1", "mnasnet1_0", "alexnet",
    "inception_v3",
)  # fmt: skip
FIELD_NETWORKS: tuple[str, ...] = OUTSIDE_CAMPAIGN + IN_CAMPAIGN
RESOLUTIONS: tuple[int, ...] = (160, 224)
BATCHES: tuple[int, ...] = (1, 8)
#: Whole-batch compute cap (GFLOP): a config over it is not timed.
MAX_GFLOPS = 40.0
#: Stored rows re-measured by the same-hour audit.
AUDIT_N = 30
#: Field configs timed a second time (spread over the predicted latency).
REPEAT_N = 8
#: Estimated timing of the field configs at most (seconds); the largest give way beyond it.
FIELD_BUDGET_S = 600.0
#: Field configs per fresh measuring process.
CHUNK = 8
SEED = 1


def this_platform() -> tuple[str, list[Path]]:
    """The platform whose shipped design rows were measured on this CPU kind, and its files
    (ResNet rows, new-family rows where they exist)."""
    from carb_lib.dataset.catalog import DESIGN, files, load_catalog
    from carb_lib.measure.devices import cpu_identity

    me = cpu_identity()
    plat = load_catalog().platform_of_cpu(me)
    if plat is not None:  # the design campaign's rows: ResNet, new families
        return plat, [p for p in files(plat, DESIGN, "rows") if p.is_file()]
    raise SystemExit(f"no shipped rows were measured on this CPU kind ({me!r}): time its "
                     "operators first (carb kernels) and predict it zero-shot "
                     "(carb transfer --kernels); this benchmark does not do that yet")


def field_configs() -> pd.DataFrame:
    from carb_lib.families.zoo import zoo_candidates

    c = zoo_candidates(list(FIELD_NETWORKS), BATCHES, ("fp32",), RESOLUTIONS).table
    c = c[c["flops"] <= MAX_GFLOPS * 1e9].reset_index(drop=True)
    return c


def _ratio_stats(measured: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    lr = np.log(np.asarray(measured, float) / np.asarray(predicted, float))
    lr = lr[np.isfinite(lr)]
    a = np.abs(lr)
    return {"median_abs_log_ratio_pct": float(100 * np.median(a)),
            "within_10pct": float(np.mean(a <= np.log(1.10))),
            "median_pred_over_meas": float(np.exp(-np.median(lr)))}


def _bootstrap_median_ratio(log_ratios: np.ndarray, seed: int = 0,
                            n: int = 4000) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    lr = np.asarray(log_ratios, float)
    meds = np.median(rng.choice(lr, (n, len(lr))), axis=1)
    lo, hi = np.percentile(meds, [2.5, 97.5])
    return float(np.exp(np.median(lr))), float(np.exp(lo)), float(np.exp(hi))


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return out + (" (dirty)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true",
                    help="print the configs and their estimated timing; time nothing")
    ap.add_argument("--out-data", type=Path, default=ROOT / "data")
    ap.add_argument("--out-results", type=Path, default=ROOT / "results" / "benchmarks")
    args = ap.parse_args()

    from tqdm.auto import tqdm

    from carb_lib.app.cli import FitOptions
    from carb_lib.app.fit_cli import run_fit
    from carb_lib.core.tables import write_table
    from carb_lib.dataset.features import with_static_features
    from carb_lib.ensemble import load_model
    from carb_lib.ensemble.routing import routed
    from carb_lib.measure.audit import audit
    from carb_lib.measure.devices import cpu_identity
    from carb_lib.measure.protocol import RowsProtocol, model_protocol
    from carb_lib.transfer.calibration import (
        _legacy_configs,
        apply_calibration,
        calibrate_model,
        calibration_configs,
        estimate_seconds,
        host_factor,
        time_configs,
    )
    from carb_lib.transfer.check import measure_now

    t_start = time.perf_counter()
    plat, files = this_platform()
    data_out = args.out_data / plat / "field" / "rows.parquet"
    audit_out = args.out_data / plat / "field" / "audit.parquet"
    if not args.dry_run and (data_out.exists() or audit_out.exists()):
        print(f"{data_out} exists: this CPU kind was checked already (one run per kind, never "
              f"re-run to improve a number); its numbers are in field_{plat}.csv")
        return
    print(f"CPU {cpu_identity()} -> platform {plat}; fit on {[str(f.relative_to(ROOT)) for f in files]}")
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"carb_field_{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    model_path = tmp / "model.skops"
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_fit(FitOptions(data=files, out=model_path, force=True),
                echo=lambda s: print("  fit: " + s))
        model = load_model(model_path)
    fit_s = time.perf_counter() - t0
    rp = model_protocol(model)
    r = routed(model)
    cfg = with_static_features(field_configs())
    pred_plain = r.predict_interval(cfg, coverage=0.9).reset_index(drop=True)
    pred_main = model.predict(cfg).reset_index(drop=True)
    est = estimate_seconds(pred_plain["latency_ms"].to_numpy(float), rp.protocol())
    order = np.argsort(est, kind="stable")
    keep = order[np.cumsum(est[order]) <= FIELD_BUDGET_S]
    keep = np.sort(keep)
    print(f"field configs: {len(cfg)} under {MAX_GFLOPS:g} GFLOP, {len(keep)} within the "
          f"{FIELD_BUDGET_S:.0f} s timing budget (estimated {est[keep].sum():.0f} s)")
    if args.dry_run:
        show = cfg.iloc[keep][["module", "resolution", "batch"]].assign(
            gflop=(cfg["flops"].iloc[keep] / 1e9).round(2),
            pred_ms=pred_plain["latency_ms"].iloc[keep].round(1), est_s=est[keep].round(1))
        print(show.to_string())
        return
    cfg, pred_plain, pred_main = (cfg.iloc[keep].reset_index(drop=True),
                                  pred_plain.iloc[keep].reset_index(drop=True),
                                  pred_main.iloc[keep].reset_index(drop=True))

    # the same-hour audit of stored rows that are no calibration config
    rows = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    cal_ids = set(calibration_configs(model)["config_id"])
    pool = rows[~rows["config_id"].isin(cal_ids)]
    t0 = time.perf_counter()
    audit_rows, ag = audit(pool, AUDIT_N, seed=SEED, progress=True)
    audit_s = time.perf_counter() - t0
    a_ratio, a_lo, a_hi = _bootstrap_median_ratio(audit_rows["log_ratio"].dropna().to_numpy())
    print(f"audit: {ag.n} rows, median new/old {a_ratio:.3f} [{a_lo:.3f}, {a_hi:.3f}] "
          f"({audit_s:.0f} s)")

    # the calibration of the default path, and as it was timed before
    t0 = time.perf_counter()
    cal = calibrate_model(r)
    cal_s = time.perf_counter() - t0
    print(f"calibration ({cal_s:.0f} s): {cal.reason}")
    legacy = _legacy_configs(5)
    t0 = time.perf_counter()
    lt = time_configs(legacy, protocol=RowsProtocol("cpu", None, True), platform=plat)
    legacy_s = time.perf_counter() - t0
    lg = legacy.merge(lt[lt["status"].eq("ok")][["config_id", "latency_ms"]], on="config_id")
    legacy_cal = host_factor(lg["latency_ms"].to_numpy(float),
                             np.asarray(model.predict(lg.drop(columns=["latency_ms"]))
                                        ["latency_ms"], float),
                             protocol="torch's default threads, heap kept")
    print(f"calibration as timed before ({legacy_s:.0f} s): {legacy_cal.reason}")

    # the field configs, timed now under the rows' protocol
    t0 = time.perf_counter()
    parts = []
    with tqdm(total=len(cfg), desc="field configs", unit="cfg") as bar:
        for i in range(0, len(cfg), CHUNK):
            part = cfg.iloc[i:i + CHUNK]
            parts.append(measure_now(part, rp, platform=plat, budget_s=1800))
            bar.update(len(part))
    meas = pd.concat(parts, ignore_index=True)
    rep_pos = np.unique(np.linspace(0, len(cfg) - 1, min(REPEAT_N, len(cfg))).round()
                        .astype(int))
    rep_order = np.argsort(pred_plain["latency_ms"].to_numpy(float), kind="stable")[rep_pos]
    again = measure_now(cfg.iloc[np.sort(rep_order)], rp, platform=plat, budget_s=1800)
    field_s = time.perf_counter() - t0
    ok = meas["status"].astype(str).eq("ok").to_numpy()
    m_lat = np.where(ok, pd.to_numeric(meas["latency_ms"], errors="coerce"), np.nan)
    both = again.merge(meas[["config_id", "latency_ms"]], on="config_id", suffixes=("_2", ""))
    both = both[both["status"].astype(str).eq("ok")]
    noise = np.abs(np.log(both["latency_ms_2"].astype(float) / both["latency_ms"].astype(float)))

    cal_pred = apply_calibration(pred_plain, cal)
    table = pd.DataFrame({
        "config_id": cfg["config_id"], "network": cfg["module"].str.split(":").str[1],
        "resolution": cfg["resolution"], "batch": cfg["batch"],
        "outside_campaign": cfg["module"].str.split(":").str[1].isin(OUTSIDE_CAMPAIGN),
        "gflop": cfg["flops"] / 1e9, "latency_ms_meas": m_lat,
        "latency_ms_pred": pred_plain["latency_ms"], "latency_ms_pred_lo": pred_plain["latency_ms_lo"],
        "latency_ms_pred_hi": pred_plain["latency_ms_hi"],
        "latency_ms_pred_calibrated": cal_pred["latency_ms"],
        "latency_ms_pred_fitted_model_only": pred_main["latency_ms"],
        "peak_mem_mib_meas": pd.to_numeric(meas["peak_mem_mib"], errors="coerce"),
        "peak_mem_mib_pred": pred_plain["peak_mem_mib"],
    })
    good = np.isfinite(table["latency_ms_meas"].to_numpy(float))
    t = table[good]
    mm = t["latency_ms_meas"].to_numpy(float)
    variants = {
        "plain": t["latency_ms_pred"].to_numpy(float),
        "calibrated": t["latency_ms_pred_calibrated"].to_numpy(float),
        "audit_factor": t["latency_ms_pred"].to_numpy(float) * a_ratio,
        "fitted_model_only": t["latency_ms_pred_fitted_model_only"].to_numpy(float),
        "legacy_calibration": t["latency_ms_pred"].to_numpy(float) * legacy_cal.factor
        if legacy_cal.applied else t["latency_ms_pred"].to_numpy(float),
    }
    summary: dict[str, object] = {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M"), "platform": plat,
        "cpu_id": cpu_identity(), "commit": _commit(), "protocol": rp.describe(),
        "n_field": int(good.sum()), "n_field_failed": int((~good).sum()),
        "audit_n": ag.n, "audit_median_ratio": a_ratio, "audit_ratio_lo": a_lo,
        "audit_ratio_hi": a_hi, "host_factor": cal.factor,
        "host_factor_spread": float(np.exp(cal.spread)) if np.isfinite(cal.spread) else np.nan,
        "host_factor_applied": cal.applied, "host_factor_per_band": cal.per_band,
        "host_factor_n": cal.n,
        "factor_inside_audit_interval": bool(a_lo <= cal.factor <= a_hi),
        "legacy_host_factor": legacy_cal.factor, "legacy_applied": legacy_cal.applied,
    }
    for name, p in variants.items():
        for k, v in _ratio_stats(mm, p).items():
            summary[f"{name}_{k}"] = v
    lo, hi = t["latency_ms_pred_lo"].to_numpy(float), t["latency_ms_pred_hi"].to_numpy(float)
    summary["plain_interval_coverage"] = float(np.mean((mm >= lo) & (mm <= hi)))
    f = cal.factors_for(t["latency_ms_pred"].to_numpy(float))
    summary["calibrated_interval_coverage"] = float(np.mean((mm >= lo * f) & (mm <= hi * f)))
    summary["noise_n"] = int(len(noise))
    summary["noise_median_abs_log_ratio_pct"] = float(100 * np.median(noise)) if len(noise) else np.nan
    mem = np.isclose(t["peak_mem_mib_meas"].to_numpy(float),
                     t["peak_mem_mib_pred"].to_numpy(float), rtol=0, atol=1e-6)
    summary["memory_exact_rows"] = int(mem.sum())
    summary.update(fit_s=fit_s, audit_s=audit_s, calibration_s=cal_s, legacy_calibration_s=legacy_s,
                   field_s=field_s, total_s=time.perf_counter() - t_start)

    # write: measured rows (data/), the run's summary row and per-config table (results/)
    keep_cols = [c for c in meas.columns]
    write_table(meas[keep_cols], data_out)
    write_table(audit_rows, audit_out)
    args.out_results.mkdir(parents=True, exist_ok=True)
    srow = pd.DataFrame([summary])
    sfile = args.out_results / f"field_{plat}.csv"
    if sfile.exists():
        srow = pd.concat([pd.read_csv(sfile), srow], ignore_index=True)
    srow.to_csv(sfile, index=False)
    table.assign(date_utc=summary["date_utc"], latency_ms_meas2=table["config_id"].map(
        dict(zip(both["config_id"], both["latency_ms_2"].astype(float), strict=True)))).to_csv(
        args.out_results / f"field_{plat}_configs.csv", index=False)
    for k, v in summary.items():
        print(f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}")
    print(f"wrote {data_out}, {audit_out}, {sfile}")


if __name__ == "__main__":
    sys.exit(main())
