"""The ``carb:platforms`` and ``carb:platforms-splits`` blocks of the docs
(:mod:`carb_lib.app.readme`): notebook 03's report of every CPU platform
(``results/carb/platforms.csv``, :func:`carb_lib.evaluation.platforms.platform_report`), the
latency law ``carb fit`` chooses (``auto``) beside the plain roofline law, and each platform's
re-measurement noise."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from carb_lib.evaluation.platforms import MAPE_OVER_NOISE_MAX, SMALL_BATCH_R2_MIN

#: The targets the README states (:mod:`carb_lib.evaluation.platforms`, judged in the claims
#: table as our targets), with the split and the threshold they are judged on.
_SOURCE = "_Source: `results/carb/platforms.csv` (notebook 03, section \"Every CPU platform\")._"


def _read(results: Path) -> pd.DataFrame | None:
    path = Path(results) / "carb" / "platforms.csv"
    return pd.read_csv(path) if path.is_file() else None


def _cell(s: pd.DataFrame, plat: str, split: str, law: str, target: str, col: str) -> float:
    m = s[(s["platform"] == plat) & (s["split"] == split) & (s["law"] == law)
          & (s["target"] == target)]
    return float(m[col].iloc[0]) if len(m) and col in m.columns else float("nan")


def _f(v: float, fmt: str) -> str:
    return "–" if pd.isna(v) else fmt.format(v)


def platforms_block(results: Path) -> str:
    """Per CPU platform: the re-measurement noise, latency MAPE on the random split and
    small-batch R² with ``carb fit``'s law (``auto``) and with the roofline law, memory MAPE, and
    how many platforms meet the two latency targets."""
    s = _read(results)
    if s is None:
        return "*(no platform report: run `make reproduce`)*\n"
    plats = list(dict.fromkeys(s["platform"]))
    rows = ["| CPU platform | re-measurement noise (MAPE) | latency MAPE, random split: `auto` / "
            "roofline | MAPE / re-measurement MAPE (`auto`) | small batches held out, R²: `auto` / "
            "roofline | memory MAPE |",
            "|---|---|---|---|---|---|"]
    met_ratio = met_r2 = 0
    for p in plats:
        lat = (_cell(s, p, "random", "auto", "latency_ms", "mape_pct_mean"),
               _cell(s, p, "random", "roofline", "latency_ms", "mape_pct_mean"))
        sd = _cell(s, p, "random", "auto", "latency_ms", "mape_pct_sd")
        ratio = _cell(s, p, "random", "auto", "latency_ms", "mape_over_noise")
        r2 = (_cell(s, p, "batch_small", "auto", "latency_ms", "r2_mean"),
              _cell(s, p, "batch_small", "roofline", "latency_ms", "r2_mean"))
        met_ratio += bool(ratio <= MAPE_OVER_NOISE_MAX)
        met_r2 += bool(r2[0] >= SMALL_BATCH_R2_MIN)
        rows.append(
            f"| `{p}` | {_f(_cell(s, p, 'random', 'auto', 'latency_ms', 'noise_mape_pct'), '{:.1f} %')} "
            f"| **{_f(lat[0], '{:.1f}')}** ± {_f(sd, '{:.1f}')} / {_f(lat[1], '{:.1f}')} % "
            f"| {_f(ratio, '{:.2f}')} | **{_f(r2[0], '{:.3f}')}** / {_f(r2[1], '{:.3f}')} "
            f"| {_f(_cell(s, p, 'random', 'auto', 'peak_mem_mib', 'mape_pct_mean'), '{:.3f} %')} |")
    seeds = int(s["n_seeds"].max())
    rows += ["", f"Mean ± sd over {seeds} split seeds. Targets on the default path (`auto`): "
             f"latency MAPE at most {MAPE_OVER_NOISE_MAX}x the re-measurement MAPE on "
             f"**{met_ratio} of {len(plats)}** CPUs; small-batch R² at least "
             f"{SMALL_BATCH_R2_MIN} on **{met_r2} of {len(plats)}** CPUs.", "", _SOURCE]
    return "\n".join(rows) + "\n"


def platforms_splits_block(results: Path) -> str:
    """Latency MAPE per CPU platform and split, ``auto`` / roofline."""
    s = _read(results)
    if s is None:
        return "*(no platform report: run `make reproduce`)*\n"
    plats = list(dict.fromkeys(s["platform"]))
    splits = list(dict.fromkeys(s["split"]))
    rows = ["| split | " + " | ".join(f"`{p}`" for p in plats) + " |",
            "|---|" + "---|" * len(plats)]
    for sp in splits:
        cells = []
        for p in plats:
            a = _cell(s, p, sp, "auto", "latency_ms", "mape_pct_mean")
            r = _cell(s, p, sp, "roofline", "latency_ms", "mape_pct_mean")
            cells.append(f"{_f(a, '{:.1f}')} / {_f(r, '{:.1f}')}")
        rows.append(f"| {sp} | " + " | ".join(cells) + " |")
    rows += ["", "Latency MAPE (%), `auto` / roofline law, mean over split seeds.", "", _SOURCE]
    return "\n".join(rows) + "\n"
