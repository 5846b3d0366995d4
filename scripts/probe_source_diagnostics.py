"""Why did probe networks not help? (session 25, post hoc, after pre-registration L was scored)

Two checks on the Zen 5 rows, latency only, kernel law (session 21's v3 + v4 operators), default
preset, ``offset`` with k = 10, ``--seeds`` seeds:

* **the probe rows as a target**: how well the ResNet-only source, a source of ResNet and every
  earlier new-family row (session 12), and the probe rows' own model (grouped split, 30 % held
  out) predict held-out probe networks. If even their own model is far from 10 %, the probe
  rows carry noise or structure the learners cannot use;
* **how many probe rows**: the pre-registered test's ``resnet+probe`` source with n seeded probe
  rows (``--n-rows``; two draws each), efficientnet and mobilenetv2 of ``passes`` and ``s12``.
  A gain that turns into a loss as n grows says the probe rows teach something wrong, not
  too little.

Writes ``OUT/diagnostics.txt`` and ``OUT/diagnostics.csv``.

``python scripts/probe_source_diagnostics.py cpu_epyc_zen5_2c --out results/cross_family/probe/cpu_epyc_zen5_2c/diagnostics``
"""

from __future__ import annotations

import argparse
import io
import sys
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_source_test import judged_bench, speed_factor  # noqa: E402

from carb_lib.dataset import read_dataset  # noqa: E402
from carb_lib.evaluation import cross_family_evaluation  # noqa: E402
from carb_lib.evaluation.cross_family import kernel_law_rows  # noqa: E402

COMMON = {"ks": (10,), "targets": ("latency_ms",), "methods": ("offset",),
          "default_method": "offset", "latency_law": "kernel", "preset": "default",
          "progress": False}


def _mean(res, source: str, check: str, dataset: str, n: int, draw: int) -> list[dict]:
    g = res.scores.groupby(["family", "model", "k"])
    return [{"check": check, "dataset": dataset, "family": fam, "source": source, "model": model,
             "k": k, "n_probe_rows": n, "draw": draw, "mape_pct": d["mape_pct"].mean(),
             "mape_pct_sd": d["mape_pct"].std(ddof=1), "spearman": d["spearman"].mean()}
            for (fam, model, k), d in g]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--n-rows", default="150,400")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    p = a.platform
    nets, fams = Path("data/other_cpus"), Path("data/other_cpus/new_families")
    res_dir = Path(f"results/cross_family/probe/{p}")
    factor, _ = speed_factor(read_dataset(res_dir / "remeasured_resnet.parquet"),
                             read_dataset(nets / f"{p}.parquet"))
    bench = judged_bench(p)
    src, probe, s12, passes = kernel_law_rows(
        bench, nets / f"{p}.parquet", Path(f"data/other_cpus/probe_nets/{p}.parquet"),
        fams / f"{p}.parquet", fams / f"{p}_passes.parquet")
    probe = probe.assign(latency_ms=probe["latency_ms"] / factor)
    rows: list[dict] = []
    common = {**COMMON, "n_seeds": a.seeds}
    # 1. the probe rows as a target
    rows += _mean(cross_family_evaluation(src, probe, own_model=True, **common),
                  "resnet", "probe as target", "probe", 0, 0)
    rows += _mean(cross_family_evaluation(pd.concat([src, s12], ignore_index=True), probe,
                                          own_model=False, **common),
                  "resnet+s12 families", "probe as target", "probe", 0, 0)
    print("probe as target: done", flush=True)
    # 2. how many probe rows
    for label, tgt in (("passes", passes), ("s12", s12)):
        for fam in ("efficientnet", "mobilenetv2"):
            for n in [0, *[int(x) for x in a.n_rows.split(",")], len(probe)]:
                for draw in range(2 if 0 < n < len(probe) else 1):
                    extra = probe.sample(n=n, random_state=draw)
                    res = cross_family_evaluation(pd.concat([src, extra], ignore_index=True),
                                                  tgt, families=[fam], own_model=False, **common)
                    rows += _mean(res, "resnet+probe", "probe rows", label, n, draw)
            print(f"{label} {fam}: done", flush=True)
    d = pd.DataFrame(rows)
    a.out.mkdir(parents=True, exist_ok=True)
    d.to_csv(a.out / "diagnostics.csv", index=False)
    buf = io.StringIO()
    buf.write(f"# python scripts/probe_source_diagnostics.py {p} --n-rows {a.n_rows} "
              f"--seeds {a.seeds} --out {a.out}\n")
    buf.write(f"latency MAPE %, mean over {a.seeds} seeds; probe rows divided by the speed "
              f"factor {factor:.4f}; post hoc (after pre-registration L was scored)\n\n")
    t1 = d[d["check"] == "probe as target"]
    buf.write("1. held-out probe networks\n")
    buf.write(t1[["source", "model", "k", "mape_pct", "mape_pct_sd", "spearman"]].round(3)
              .to_string(index=False) + "\n\n")
    t2 = d[(d["check"] == "probe rows") & (d["model"] == "offset")]
    t2 = t2.groupby(["dataset", "family", "n_probe_rows"])["mape_pct"].agg(["mean", "min", "max"])
    buf.write("2. offset, k = 10, by probe rows in the source (mean / min / max over draws)\n")
    buf.write(t2.round(2).to_string() + "\n")
    (a.out / "diagnostics.txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
