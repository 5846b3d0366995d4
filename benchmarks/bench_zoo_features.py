"""Benchmark: static features of every torchvision zoo network, and screening the full zoo.

Targets: the features of every zoo network (68 classification CNNs of torchvision 0.28) at one
shape (224 px, batch 1, fp32) <= 30 s in total on one core; screening the full zoo at 4 batches
x 2 precisions x 3 resolutions <= 10 s once its features are cached.

Each repeat runs in a fresh Python process with one torch thread, torch, torchvision and
carb_lib imported first (not timed):

``features, every network at one shape (empty cache)``
    ``carb_lib.families.zoo.zoo_candidates(None, (1,), ("fp32",), (224,))`` with an empty feature cache:
    every network built and run on the ``meta`` device once (RegNet through its CPU fallback),
    the allocator model's peak per row, the cache written. It includes torch's one-time lazy
    imports on the first meta convolution.
``features, every network at one shape (cached)``
    The same call in another fresh process, from the cache file.
``screen the full zoo, 4 batches x 2 precisions x 3 resolutions (cached)``
    ``zoo_candidates`` of the 1,632 rows from the cache, then ``carb_lib.screening.screen``
    with a budget and accuracy as a ``max:`` objective (a quick model fitted on synthetic rows,
    loaded before the timer). The cache is filled once before the repeats (minutes: the
    allocator model runs once per row and allocator variant).

Writes ``results/benchmarks/zoo_features.csv``: median and max wall time, and the median CPU
time of the process (the time on one core when the machine is shared), over ``--repeats``.

Usage: ``python benchmarks/bench_zoo_features.py [--repeats 3] [--no-screen]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SCREEN = dict(batches=(1, 4, 16, 64), precisions=("fp32", "fp16"), resolutions=(160, 224, 288))

FEATURES = textwrap.dedent("""
    import json, sys, time
    import torch
    torch.set_num_threads(1)
    from carb_lib.families import zoo
    zoo.zoo_names()
    t0, c0 = time.perf_counter(), time.process_time()
    c = zoo.zoo_candidates(None, (1,), ("fp32",), (224,), cache_dir=sys.argv[1])
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"seconds": dt, "cpu_s": cpu, "rows": len(c.table),
                      "failures": c.failure_lines()}))
""")

SCREEN_CODE = textwrap.dedent("""
    import json, sys, time
    import torch
    torch.set_num_threads(1)
    from carb_lib import screening as scr
    from carb_lib.families import zoo
    from carb_lib.ensemble import load_model
    spec = json.loads(sys.argv[3])
    m = load_model(sys.argv[2])
    zoo.zoo_names()
    t0, c0 = time.perf_counter(), time.process_time()
    c = zoo.zoo_candidates(None, spec["batches"], spec["precisions"], spec["resolutions"],
                           cache_dir=sys.argv[1])
    t1 = time.perf_counter()
    dspec = scr.DeploymentSpec(platform=m.platform_, budgets=["latency_ms<=100"],
                               quality=zoo.ACC1, k=10)
    r = scr.screen(m, c.table, dspec)
    t2 = time.perf_counter()
    print(json.dumps({"seconds": t2 - t0, "cpu_s": time.process_time() - c0,
                      "candidates_s": t1 - t0, "screen_s": t2 - t1,
                      "rows": len(c.table), "shortlist": len(r.shortlist)}))
""")


def _run(code: str, *args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         env=env, cwd=ROOT, check=False)
    if res.returncode != 0:
        raise SystemExit(f"benchmark process failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _fit_quick_model(folder: Path) -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from carb_synthetic import make_carb_synthetic

    from carb_lib.ensemble import PRESETS, CARBRegressor, save_model
    from carb_lib.evaluation import prepare_dataset

    data = make_carb_synthetic(300, seed=2, energy=False, telemetry=False,
                               platform="synthetic_cpu")
    model = CARBRegressor(feature_set="static", **PRESETS["quick"]).fit(prepare_dataset(data))
    path = folder / "m.joblib"
    save_model(model, path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-screen", action="store_true", help="Skip the screening benchmark.")
    ap.add_argument("--out", type=Path, default=ROOT / "results/benchmarks/zoo_features.csv")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        first, cached = [], []
        for i in range(args.repeats):
            cache = Path(tmp) / f"c{i}"
            r = _run(FEATURES, str(cache))
            first.append(r)
            cached.append(_run(FEATURES, str(cache)))
            print(f"repeat {i}: {r['rows']} networks in {r['seconds']:.1f} s wall, "
                  f"{r['cpu_s']:.1f} s CPU (cached {cached[-1]['seconds']:.3f} s); failures "
                  f"{r['failures']}", flush=True)
        rows += [("features, every network at one shape (empty cache)", first, 30.0),
                 ("features, every network at one shape (cached)", cached, None)]
        if not args.no_screen:
            model = _fit_quick_model(Path(tmp))
            cache = Path(tmp) / "screen"
            spec = json.dumps(SCREEN)
            fill = _run(SCREEN_CODE, str(cache), str(model), spec)
            print(f"cache filled: {fill['rows']} rows in {fill['candidates_s']:.0f} s", flush=True)
            times = [_run(SCREEN_CODE, str(cache), str(model), spec)
                     for _ in range(args.repeats)]
            for t in times:
                print(f"screen: {t['rows']} rows, candidates {t['candidates_s']:.2f} s, "
                      f"screen {t['screen_s']:.2f} s, shortlist {t['shortlist']}", flush=True)
            rows.append(("screen the full zoo, 4 batches x 2 precisions x 3 resolutions "
                         "(cached)", times, 10.0))
    table = pd.DataFrame([{"what": w, "median_s": pd.Series([r["seconds"] for r in v]).median(),
                           "max_s": max(r["seconds"] for r in v),
                           "median_cpu_s": pd.Series([r["cpu_s"] for r in v]).median(),
                           "target_s": tgt, "repeats": len(v)} for w, v, tgt in rows])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    print(table.to_string(index=False))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
