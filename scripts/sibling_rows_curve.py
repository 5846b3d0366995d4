"""How many rows of a sibling family does the sibling source need? (session 24, development)

For each pair (family ``F``, sibling ``S``) of ``--pairs``, the ResNet-only kernel-law source
gets ``n`` seeded rows of ``S`` added (``n`` in ``--n-rows``, plus all of them; two draws of the
rows for each ``n`` below all), and ``F`` is scored as notebook 05 scores it: latency on
held-out architectures, zero-shot and ``offset`` with k = 10, the default preset, ``--seeds``
seeds (paired: the same split and k rows for every ``n``). Prints mean and range over the
draws of the seed means; writes ``OUT/curve.csv`` and ``OUT/curve.txt``.

``python scripts/sibling_rows_curve.py data/cpu_epyc_zen3_2c.parquet
data/new_families/cpu_epyc_zen3_2c.parquet data/kernels/cpu_epyc_zen3_2c.parquet --out
results/cross_family/siblings/rows_curve_cpu_epyc_zen3_2c``
"""

from __future__ import annotations

import argparse
import io
import warnings
from pathlib import Path

import pandas as pd

from carb_lib.evaluation import cross_family_evaluation
from carb_lib.evaluation.cross_family import kernel_law_rows


def curve(src: pd.DataFrame, tgt: pd.DataFrame, pairs: list[tuple[str, str]],
          n_rows: list[int], *, seeds: int, draws: int = 2) -> pd.DataFrame:
    common = {"ks": (10,), "n_seeds": seeds, "targets": ("latency_ms",), "methods": ("offset",),
              "default_method": "offset", "own_model": False, "latency_law": "kernel",
              "progress": False}
    out = []
    for fam, sib in pairs:
        pool = tgt[tgt["family"] == sib]
        for n in [*sorted(n for n in n_rows if n < len(pool)), len(pool)]:
            for draw in range(draws if 0 < n < len(pool) else 1):
                extra = pool.sample(n=n, random_state=draw)
                res = cross_family_evaluation(pd.concat([src, extra], ignore_index=True), tgt,
                                              families=[fam], **common)
                for (model, k), g in res.scores.groupby(["model", "k"]):
                    out.append({"family": fam, "sibling": sib, "n_sibling_rows": n,
                                "draw": draw, "model": model, "k": k,
                                "mape_pct": g["mape_pct"].mean(),
                                "spearman": g["spearman"].mean()})
            print(f"{fam} + {n} rows of {sib}", flush=True)
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("source", type=Path)
    ap.add_argument("target", type=Path)
    ap.add_argument("bench", type=Path, nargs="+")
    ap.add_argument("--pairs", default="efficientnet:mobilenetv2,mobilenetv2:efficientnet")
    ap.add_argument("--n-rows", default="0,10,30,100,300")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    pairs = [tuple(p.split(":")) for p in a.pairs.split(",")]
    src, tgt = kernel_law_rows(a.bench, a.source, a.target)
    d = curve(src, tgt, pairs, [int(n) for n in a.n_rows.split(",")], seeds=a.seeds)
    t = d.groupby(["family", "sibling", "model", "n_sibling_rows"])["mape_pct"].agg(
        ["mean", "min", "max"])
    buf = io.StringIO()
    buf.write(f"# python scripts/sibling_rows_curve.py {a.source} {a.target} "
              f"{' '.join(map(str, a.bench))} --pairs {a.pairs} --n-rows {a.n_rows} "
              f"--seeds {a.seeds} --out {a.out}\n")
    buf.write(f"latency MAPE %, held-out architectures, mean over {a.seeds} seeds; mean / min / "
              "max over two draws of the sibling rows (one where n is 0 or all of them)\n\n")
    buf.write(t.round(2).to_string() + "\n")
    a.out.mkdir(parents=True, exist_ok=True)
    d.to_csv(a.out / "curve.csv", index=False)
    (a.out / "curve.txt").write_text(buf.getvalue())
    print(buf.getvalue())


if __name__ == "__main__":
    main()
