"""Host-noise diagnostic: does a tiny canary config, timed right before and after each window,
track the speed of the host?

Alternates a ~3.5 ms canary (ResNet-10 x0.25, 64 px, batch 2) with two workloads (the
campaign's reference config and a ResNet-50 x0.5 at 96 px, batch 4) for ``--seconds`` on one
thread, then prints the CV of each, their correlation with the adjacent canary, and their CV
after dividing by it. Run it on an otherwise idle machine:
``python scripts/host_noise_canary.py --seconds 75``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from carb_lib.families.space import build_model, config_from_row

CANARY = dict(block="basic", depth=10, width=0.25, early_downsample=True, resolution=64,
              batch=2, precision="fp32")  # fmt: skip
REFERENCE = dict(block="basic", depth=18, width=0.5, early_downsample=True, resolution=64,
                 batch=8, precision="fp32")  # fmt: skip
BIG = dict(block="bottleneck", depth=50, width=0.5, early_downsample=True, resolution=96,
           batch=4, precision="fp32")  # fmt: skip


def model_and_input(cfg: dict) -> tuple[torch.nn.Module, torch.Tensor]:
    c = config_from_row({**cfg, "family": "resnet", "num_classes": 1000})
    return build_model(c), torch.randn(c.batch, 3, c.resolution, c.resolution)


def window_ms(mx: tuple, seconds: float = 0.1, min_iters: int = 2) -> float:
    m, x = mx
    times: list[float] = []
    t0 = time.perf_counter()
    while True:
        a = time.perf_counter()
        m(x)
        times.append(time.perf_counter() - a)
        if len(times) >= min_iters and time.perf_counter() - t0 >= seconds:
            return float(np.median(times) * 1e3)


def cv(v: np.ndarray) -> float:
    return float(v.std() / v.mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=75.0)
    a = ap.parse_args()
    torch.set_num_threads(1)
    ref, big, can = (model_and_input(c) for c in (REFERENCE, BIG, CANARY))
    rows = []
    with torch.inference_mode():
        for m, x in (ref, big, can):
            for _ in range(3):
                m(x)
        t_end = time.time() + a.seconds
        while time.time() < t_end:
            c0 = window_ms(can, 0.03, 3)
            r = window_ms(ref)
            c1 = window_ms(can, 0.03, 3)
            b = window_ms(big)
            c2 = window_ms(can, 0.03, 3)
            rows.append((c0, r, c1, b, c2))
    v = np.array(rows)
    can_r, can_b = (v[:, 0] + v[:, 2]) / 2, (v[:, 2] + v[:, 4]) / 2
    print(f"n {len(v)} canary ms median {np.median(v[:, 0]):.3f} cv {cv(v[:, 0]):.3f}")
    print(f"ref cv {cv(v[:, 1]):.3f} big cv {cv(v[:, 3]):.3f}")
    print(f"corr(ref,canary) {np.corrcoef(v[:, 1], can_r)[0, 1]:.3f} "
          f"corr(big,canary) {np.corrcoef(v[:, 3], can_b)[0, 1]:.3f}")  # fmt: skip
    print(f"normalised ref cv {cv(v[:, 1] / can_r):.3f} big cv {cv(v[:, 3] / can_b):.3f}")
    best = float(np.percentile(v[:, [0, 2, 4]], 10))
    print(f"canary p10 {best:.3f} ms (the gates below are relative to it)")
    for gate in (1.05, 1.10, 1.20):
        ok_r = np.maximum(v[:, 0], v[:, 2]) <= gate * best
        ok_b = np.maximum(v[:, 2], v[:, 4]) <= gate * best
        if ok_r.sum() >= 3 and ok_b.sum() >= 3:
            print(f"gated at {gate:.2f}x canary p10: ref kept {ok_r.mean():.0%} cv "
                  f"{cv(v[ok_r, 1]):.3f}, big kept {ok_b.mean():.0%} cv {cv(v[ok_b, 3]):.3f}")


if __name__ == "__main__":
    main()
