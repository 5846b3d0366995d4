"""Host-noise diagnostic: do repeats spread through time beat the host's speed swings?

Times ``--configs`` seeded fp32 ResNet rows of ``data/cpu_epyc_zen3_2c.parquet`` (latency under
150 ms) in ``--rounds`` round-robin rounds on one thread: every round times each config once, a
window of ``--window-s`` seconds (at least 3 inferences, median), so one config's windows lie
~``configs x window`` seconds apart. Then, as a reviewer would compare two campaigns, it splits
the rounds into two halves and prints the agreement of the halves' estimates (median |log ratio|,
share within 5 % and 10 %) for a single window, the median of k windows and the minimum of k
windows, and each round's speed factor (median over configs of the window over the config's
fastest window). Run it on an otherwise idle machine:
``python scripts/host_noise_roundrobin.py --rounds 16 --out results/measurement/host_noise_roundrobin.txt``.
"""

from __future__ import annotations

import argparse
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from carb_lib.space import build_model, config_from_row

CONFIG_COLUMNS = ("family", "block", "depth", "width", "early_downsample", "resolution", "batch",
                  "precision", "num_classes")  # fmt: skip


def time_rounds(configs: pd.DataFrame, rounds: int, window_s: float) -> np.ndarray:
    """``(configs, rounds)`` window medians (ms), round-robin over the configs."""
    models = []
    for _, r in configs.iterrows():
        c = config_from_row({k: r[k] for k in CONFIG_COLUMNS})
        models.append((build_model(c).eval(), torch.randn(c.batch, 3, c.resolution, c.resolution)))
    out = np.zeros((len(models), rounds))
    with torch.inference_mode():
        for m, x in models:  # warm-up
            m(x)
            m(x)
        for k in range(rounds):
            for i, (m, x) in enumerate(models):
                t: list[float] = []
                t0 = time.perf_counter()
                while len(t) < 3 or time.perf_counter() - t0 < window_s:
                    a = time.perf_counter()
                    m(x)
                    t.append(time.perf_counter() - a)
                out[i, k] = np.median(t) * 1e3
    return out


def agreement(a: np.ndarray, b: np.ndarray) -> str:
    lr = np.abs(np.log(a / b))
    return (f"median |log ratio| {100 * np.median(lr):5.2f} %, within 5 % "
            f"{100 * np.mean(lr < 0.05):5.1f} %, within 10 % {100 * np.mean(lr < 0.1):5.1f} %")


def report(t: np.ndarray) -> list[str]:
    h = t.shape[1] // 2
    first, second = t[:, :h], t[:, h:]
    lines = [f"single window, rounds 1 vs 2:        {agreement(t[:, 0], t[:, 1])}",
             f"single window, first vs last round:  {agreement(t[:, 0], t[:, -1])}"]
    k = 1
    while 2 * k <= h:
        k *= 2
        for name, f in (("median", np.median), ("min", np.min)):
            lines.append(f"{name:>6} of {k} windows (two halves):  "
                         f"{agreement(f(first[:, :k], 1), f(second[:, :k], 1))}")
    speed = np.median(t / t.min(axis=1, keepdims=True), axis=0)
    lines.append("round speed factors (1 = the configs' fastest windows): "
                 + " ".join(f"{s:.2f}" for s in speed))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("data/cpu_epyc_zen3_2c.parquet"))
    ap.add_argument("--configs", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--window-s", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, help="also write the report here")
    a = ap.parse_args()
    torch.set_num_threads(1)
    d = pd.read_parquet(a.data)
    d = d[(d["family"] == "resnet") & (d["status"] == "ok") & (d["precision"] == "fp32")
          & (d["latency_ms"] < 150)]
    configs = d.sample(a.configs, random_state=a.seed)
    t0 = time.perf_counter()
    t = time_rounds(configs, a.rounds, a.window_s)
    head = [f"# scripts/host_noise_roundrobin.py, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
            f"{platform.node() or 'this machine'}, torch {torch.__version__}, 1 thread; "
            f"{a.configs} configs x {a.rounds} rounds of {a.window_s} s windows "
            f"({time.perf_counter() - t0:.0f} s)"]
    lines = head + report(t)
    print("\n".join(lines))
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
