"""Benchmark: static features of a user network (family ``module``), first and cached calls.

Targets: a user module's first call <= 2 s, cached calls <= 1 ms (medians).

Each repeat runs in a fresh Python process that imports torch and carb_lib first (not timed),
then times, for user networks given as ``path/to/file.py:function`` factories (ResNet-50,
MobileNetV2 and EfficientNet-B0 at 224 px, built by the project's families, and a small SE
network):

``first call (fresh process)``
    The first ``ModuleConfig(...)`` of the process: load the factory file, build the module on
    the ``meta`` device, run it under ``FlopCounterMode`` with hooks. It includes torch's
    one-time lazy imports on the first meta convolution (``torch._dynamo``, about 1-2 s).
``first call (warm process)``
    The first call for another network in a process that measured one before.
``cached call``
    ``ModuleConfig(...)`` again at another batch size and precision (the features of the
    module x input shape come from the cache; the config is validated and hashed).
``cached features, 1 row``
    ``carb_lib.dataset.features.static_features`` of a one-row frame of a cached module (pandas
    frame overhead included).

Writes ``results/benchmarks/module_family.csv`` (median and max over ``--repeats``).
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

FACTORIES = '''
from carb_lib.families.efficientnet import preset
from carb_lib.families.mobilenetv2 import MobileNetV2Config
from carb_lib.families.resnet import ResNetConfig
from torch import nn


def resnet50():
    return ResNetConfig("bottleneck", 50, 1.0, True, 224, 1, "fp32").build_model()


def mobilenet_v2():
    return MobileNetV2Config(6, 3, 1.0, 1.0, 224, 1, "fp32").build_model()


def efficientnet_b0():
    return preset("b0").build_model()


def small_se(width=32):
    return nn.Sequential(nn.Conv2d(3, width, 3, 2, 1), nn.BatchNorm2d(width), nn.SiLU(),
                         nn.Conv2d(width, width, 3, 1, 1, groups=width), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, 10))
'''

CHILD = r'''
import json, statistics, sys, time
import torch
torch.set_num_threads(1)
import pandas as pd
from carb_lib.families.module import ModuleConfig
from carb_lib.dataset.features import static_features

path, first, others = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
out = {}
t0 = time.perf_counter()
ModuleConfig(f"{path}:{first}", "3,224,224", 1, "fp32")
out["first call (fresh process)|" + first] = time.perf_counter() - t0
for name in others:
    t0 = time.perf_counter()
    ModuleConfig(f"{path}:{name}", "3,224,224", 1, "fp32")
    out["first call (warm process)|" + name] = time.perf_counter() - t0
times, ftimes = [], []
frame = pd.DataFrame([ModuleConfig(f"{path}:{first}", "3,224,224", 8, "fp16").to_dict()])
for i in range(200):
    t0 = time.perf_counter()
    ModuleConfig(f"{path}:{first}", "3,224,224", 1 + i % 64, "fp16" if i % 2 else "fp32")
    times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    static_features(frame)
    ftimes.append(time.perf_counter() - t0)
out["cached call|" + first] = statistics.median(times)
out["cached features, 1 row|" + first] = statistics.median(ftimes)
print("RESULT" + json.dumps(out))
'''

TARGETS = {"first call (fresh process)": 2.0, "first call (warm process)": 2.0,
           "cached call": 1e-3, "cached features, 1 row": 1e-3}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks/module_family.csv"))
    args = ap.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                         env.get("PYTHONPATH", "")])
    order = ["resnet50", "mobilenet_v2", "efficientnet_b0", "small_se"]
    samples: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "user_nets.py"
        path.write_text(textwrap.dedent(FACTORIES))
        for r in range(args.repeats):
            first = order[r % len(order)]  # each network is the fresh-process first in turn
            others = [n for n in order if n != first]
            res = subprocess.run([sys.executable, "-c", CHILD, str(path), first,
                                  ",".join(others)], capture_output=True, text=True, env=env,
                                 check=True)  # fmt: skip
            line = next(x for x in res.stdout.splitlines() if x.startswith("RESULT"))
            for k, v in json.loads(line[len("RESULT"):]).items():
                samples.setdefault(k, []).append(v)
    rows = []
    for key, vals in samples.items():
        case, model = key.split("|")
        s = pd.Series(vals)
        rows.append({"case": case, "model": model, "n": len(vals), "median_s": s.median(),
                     "max_s": s.max(), "target_s": TARGETS[case],
                     "meets_target": bool(s.median() <= TARGETS[case])})
    out = pd.DataFrame(rows).sort_values(["case", "model"]).reset_index(drop=True)
    summary = (out.groupby("case")
               .agg(n=("n", "sum"), median_s=("median_s", "median"), max_s=("max_s", "max"),
                    target_s=("target_s", "first"))
               .assign(meets_target=lambda d: d["median_s"] <= d["target_s"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out.to_csv(args.out, index=False)
    pd.set_option("display.width", 160)
    print(out.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(summary.to_string(float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
