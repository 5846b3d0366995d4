"""Pre-registration AC (session 31): SiLU timed through denormals, and what flushing changes.

``results/measurement/PLATFORM_TAG/PREREGISTRATION.md`` says what is predicted. Reads the
sitting's two operator draws (``data/kernels/PLATFORM_TAG[_sampler4].parquet``), the paired
``silu`` retime (``results/measurement/PLATFORM_TAG/silu_retime.parquet``), the source ResNet rows
(``--source``) and the sitting's new-family rows, and writes ``score.txt``, ``retime_pairs.csv``,
``residuals.csv`` and ``summary.csv`` beside the pre-registration (and, reported after the
judgement, not judged: the paired per-seed gap F - D and the residuals by batch):

* AC1: >= 10 % of the fp32 silu operators run >= 1.5x slower in the ``denormal`` arm, <= 2 % of
  the fp16 ones;
* AC2: CV > 0.3 in >= 30 % of the ``denormal`` arm's fp32 silu operators, <= 5 % of the
  ``flushed`` arm's;
* AC3: efficientnet fp32, zero-shot median log residual with benchmark F minus that with D
  >= +0.02;
* AC4: mobilenetv2 and vgg, |F - D| < 0.02 each;
* AC5: efficientnet, ``offset`` with k = 10: latency MAPE with F below that with D;
* AC6: the same cell with F0 <= 10 %;
* AC7: the same cell with F0: mobilenetv2 and vgg <= 10 %, Spearman >= 0.95 for all three.

F0: the draws as timed; F and D: every silu row's time replaced by the retime's ``flushed`` or
``denormal`` arm.

``python scripts/denormal_sitting_score.py cpu_xeon_gnr_2c``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kept_heap_sitting_score import Judge, missing_file, write_score  # noqa: E402

from carb_lib import kernels  # noqa: E402
from carb_lib.dataset import read_dataset  # noqa: E402
from carb_lib.operators import OP_COLUMNS  # noqa: E402

#: One operator: its shape, batch and precision.
OP_KEY = [*OP_COLUMNS, "batch", "precision"]
#: The benchmarks compared (the pre-registration's F0, F, D).
BENCHES = ("F0", "F", "D")
SLOW, CV_HIGH = 1.5, 0.3


def retime_pairs(retime: pd.DataFrame) -> pd.DataFrame:
    """One row per silu operator: ``time_ms`` and ``cv`` of each arm (``_flushed``,
    ``_denormal``) and ``ratio`` = denormal / flushed."""
    bad = sorted(set(retime["arm"].astype(str)) - {"flushed", "denormal"})
    if bad:
        raise ValueError(f"retime arms {bad} are unknown; expected flushed and denormal")
    w = retime.pivot_table(index=OP_KEY, columns="arm", values=["time_ms", "cv"],
                           aggfunc="median")
    w.columns = [f"{v}_{a}" for v, a in w.columns]
    w = w.reset_index().dropna(subset=["time_ms_flushed", "time_ms_denormal"])
    return w.assign(ratio=w["time_ms_denormal"] / w["time_ms_flushed"])


def arm_benches(bench: pd.DataFrame, pairs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """F0 (``bench`` as timed), F and D (its silu rows' ``time_ms`` from the retime's
    ``flushed`` / ``denormal`` arm). Every silu row of ``bench`` must have been retimed."""
    silu = bench["kind"].astype(str).eq("silu").to_numpy()
    key = bench.loc[silu, OP_KEY].merge(pairs, on=OP_KEY, how="left")
    if key["time_ms_flushed"].isna().any():
        raise ValueError(f"{int(key['time_ms_flushed'].isna().sum())} silu operator(s) of the "
                         "benchmark were not retimed")
    out = {"F0": bench}
    for name, arm in (("F", "flushed"), ("D", "denormal")):
        b = bench.copy()
        b.loc[silu, "time_ms"] = key[f"time_ms_{arm}"].to_numpy()
        out[name] = b
    return out


def _zero_shot(pred: pd.DataFrame, rows: pd.DataFrame, *,
               by: tuple[str, ...] = ()) -> pd.DataFrame:
    """The zero-shot latency predictions with their row's ``precision`` and the ``rows``
    columns ``by`` (read by ``config_id``), and ``r`` = log(measured / predicted)."""
    p = pred[(pred["model"] == "zero_shot") & (pred["target"] == "latency_ms")]
    cfg = rows.drop_duplicates("config_id").set_index("config_id")
    return p.assign(precision=p["config_id"].map(cfg["precision"]).astype(str),
                    **{c: p["config_id"].map(cfg[c]) for c in by},
                    r=np.log(p["measured"] / p["predicted"]))


def residuals(pred: pd.DataFrame, rows: pd.DataFrame) -> pd.DataFrame:
    """Median, sd and count of log(measured / predicted) of the zero-shot latency predictions,
    per family and precision (and ``all``), the rows' precision read by ``config_id``."""
    p = _zero_shot(pred, rows)
    both = pd.concat([p, p.assign(precision="all")])
    return both.groupby(["family", "precision"])["r"].agg(["median", "std", "size"])


def batch_residuals(pred: pd.DataFrame, rows: pd.DataFrame, *,
                    by: tuple[str, ...] = ()) -> pd.DataFrame:
    """Median zero-shot log residual (and count) per family, precision, the ``rows`` columns
    ``by`` (read by ``config_id``, e.g. ``("resolution",)``) and batch bin."""
    p = _zero_shot(pred, rows, by=by)
    p = p.assign(batches=pd.cut(p["batch"], BATCH_BINS))
    return p.groupby(["family", "precision", *by, "batches"], observed=True)["r"].agg(
        ["median", "size"])


#: Batch bins of the reported residuals.
BATCH_BINS = [0, 2, 8, 32, 256]


def kernel_rows(bench: pd.DataFrame, source: pd.DataFrame, target: pd.DataFrame, *,
                kernel_seed: int = 0,
                kernel_params: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The source and target rows with the kernel law's input from ``bench``
    (``KernelModel(random_state=kernel_seed, **kernel_params)``)."""
    km = kernels.KernelModel(random_state=kernel_seed, **(kernel_params or {})).fit(bench)
    return kernels.with_kernel_column(source, km), kernels.with_kernel_column(target, km)


def offset_cell(source: pd.DataFrame, target: pd.DataFrame, seeds: int, *,
                source_params: dict | None = None):
    """Issue 15's cell as the session-31 pre-registrations run it: ``offset`` with k = 10, the
    kernel law, the default preset, no own model, ``seeds`` paired seeds."""
    from carb_lib.evaluation import cross_family_evaluation

    return cross_family_evaluation(source, target, ks=(10,), n_seeds=seeds,
                                   methods=("offset",), own_model=False, latency_law="kernel",
                                   preset="default", default_method="offset",
                                   source_params=source_params, progress=False)


def offset_mape(scores: pd.DataFrame) -> pd.Series:
    """The ``offset`` latency MAPE (%) of each family and seed."""
    s = scores[(scores["target"] == "latency_ms") & (scores["model"] == "offset")]
    return s.set_index(["family", "seed"])["mape_pct"]


def evaluate(bench: pd.DataFrame, source: pd.DataFrame, target: pd.DataFrame, seeds: int, *,
             kernel_seed: int = 0):
    """The pre-registered cross-family run with one benchmark: (summary, residuals, per-seed
    ``offset`` latency MAPE per family, residuals by batch)."""
    src, tgt = kernel_rows(bench, source, target, kernel_seed=kernel_seed)
    res = offset_cell(src, tgt, seeds)
    return (res.summary, residuals(res.predictions, tgt), offset_mape(res.scores),
            batch_residuals(res.predictions, tgt))


def sitting_args(doc: str, argv: list[str] | None) -> argparse.Namespace:
    """The arguments of AC's scorers: platform, ``--tag`` (AC's sitting), ``--source``,
    ``--seeds``; warnings silenced."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--tag", default="session31_flushed", help="pre-registration AC's sitting")
    ap.add_argument("--source", type=Path, default=None,
                    help="ResNet source rows (default data/other_cpus/PLATFORM_session30_kept.parquet)")
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    return a


def sitting_files(a: argparse.Namespace) -> dict[str, Path]:
    """AC's two operator draws, the source rows and AC's new-family rows."""
    p, tag = a.platform, a.tag
    return {"v3 draw": Path(f"data/kernels/{p}_{tag}.parquet"),
            "v4 draw": Path(f"data/kernels/{p}_{tag}_sampler4.parquet"),
            "source rows": a.source or Path(f"data/other_cpus/{p}_session30_kept.parquet"),
            "new-family rows": Path(f"data/other_cpus/new_families/{p}_{tag}.parquet")}


def main(argv: list[str] | None = None) -> int:
    a = sitting_args(__doc__, argv)
    p, tag = a.platform, a.tag
    res_dir = Path(f"results/measurement/{p}_{tag}")
    files = {**sitting_files(a), "silu retime": res_dir / "silu_retime.parquet"}
    if missing_file("denormal_sitting_score", files):
        return 2
    bench = kernels.read_bench([str(files["v3 draw"]), str(files["v4 draw"])])
    pairs = retime_pairs(pd.read_parquet(files["silu retime"]))
    lines = [f"# python scripts/denormal_sitting_score.py {p} --tag {tag} --source "
             f"{files['source rows']} --seeds {a.seeds}", ""]
    judge = Judge(lines)
    share = {pr: pairs[pairs["precision"] == pr] for pr in ("fp32", "fp16")}
    slow = {pr: float((g["ratio"] >= SLOW).mean()) for pr, g in share.items()}
    judge("AC1", f"silu operators >= {SLOW}x slower unflushed: fp32 {slow['fp32']:.1%} of "
          f"{len(share['fp32'])}, fp16 {slow['fp16']:.1%} of {len(share['fp16'])} (median "
          f"ratio fp32 {share['fp32']['ratio'].median():.3f}, max {share['fp32']['ratio'].max():.1f}"
          "); predicted >= 10 % and <= 2 %", slow["fp32"] >= 0.10 and slow["fp16"] <= 0.02)
    f32 = share["fp32"]
    cv_d, cv_f = float((f32["cv_denormal"] > CV_HIGH).mean()), float((f32["cv_flushed"] > CV_HIGH).mean())
    judge("AC2", f"fp32 silu operators with CV > {CV_HIGH}: denormal arm {cv_d:.1%}, flushed arm "
          f"{cv_f:.1%}; predicted >= 30 % and <= 5 %", cv_d >= 0.30 and cv_f <= 0.05)
    own = bench[bench["kind"].astype(str) == "silu"].merge(pairs, on=OP_KEY)
    lines.append(f"   (reported) the draws' own flushed silu times / the retime's flushed arm: "
                 f"median {np.median(own['time_ms'] / own['time_ms_flushed']):.3f} over "
                 f"{len(own)} rows")
    source, target = read_dataset(files["source rows"]), read_dataset(files["new-family rows"])
    summ, resid, seed_mape, by_batch = {}, {}, {}, {}
    for name, b in arm_benches(bench, pairs).items():
        print(f"benchmark {name}: cross-family evaluation, {a.seeds} seeds", flush=True)
        summ[name], resid[name], seed_mape[name], by_batch[name] = evaluate(b, source, target,
                                                                             a.seeds)

    def r(name: str, fam: str, prec: str = "fp32") -> float:
        return float(resid[name].loc[(fam, prec), "median"])

    def cell(name: str, fam: str, col: str = "mape_pct") -> tuple[float, float]:
        s = summ[name]
        row = s[(s["family"] == fam) & (s["target"] == "latency_ms") & (s["model"] == "offset")
                & (s["k"] == 10)].iloc[0]
        return float(row[f"{col}_mean"]), float(row[f"{col}_sd"])

    d3 = r("F", "efficientnet") - r("D", "efficientnet")
    judge("AC3", f"efficientnet fp32 zero-shot median log residual: F {r('F', 'efficientnet'):+.3f}"
          f", D {r('D', 'efficientnet'):+.3f}, F - D {d3:+.3f}; predicted >= +0.02", d3 >= 0.02)
    d4 = {f: r("F", f, "all") - r("D", f, "all") for f in ("mobilenetv2", "vgg")}
    judge("AC4", ", ".join(f"{f} F - D {v:+.3f}" for f, v in d4.items())
          + "; predicted |.| < 0.02 each", all(abs(v) < 0.02 for v in d4.values()))
    mf, md = cell("F", "efficientnet"), cell("D", "efficientnet")
    judge("AC5", f"efficientnet offset k = 10 latency MAPE: F {mf[0]:.2f} ± {mf[1]:.2f} %, D "
          f"{md[0]:.2f} ± {md[1]:.2f} %; predicted F < D", mf[0] < md[0])
    m0 = cell("F0", "efficientnet")
    judge("AC6", f"efficientnet offset k = 10 latency MAPE with F0: {m0[0]:.2f} ± {m0[1]:.2f} %; "
          "predicted <= 10 %", m0[0] <= 10)
    others = {f: cell("F0", f) for f in ("mobilenetv2", "vgg")}
    rho = {f: cell("F0", f, "spearman") for f in ("efficientnet", "mobilenetv2", "vgg")}
    judge("AC7", ", ".join(f"{f} {m:.2f} ± {s:.2f} %" for f, (m, s) in others.items())
          + "; Spearman " + ", ".join(f"{f} {m:.3f}" for f, (m, _) in rho.items())
          + "; predicted <= 10 % each, Spearman >= 0.95 each",
          all(m <= 10 for m, _ in others.values()) and all(m >= 0.95 for m, _ in rho.values()))
    lines += ["", judge.held_line(), "", "reported, not judged:",
              "zero-shot median log residual (sd, n) per family and precision, F0 / F / D:"]
    table = pd.concat({n: resid[n] for n in BENCHES}, axis=1)
    lines.append(table.round(3).to_string())
    gaps = {n: r(n, "efficientnet", "fp16") - r(n, "efficientnet") for n in BENCHES
            if ("efficientnet", "fp16") in resid[n].index}
    lines.append("efficientnet fp16 - fp32 residual gap: "
                 + ", ".join(f"{n} {v:+.3f}" for n, v in gaps.items()) + " (Y: +0.14)")
    lines.append("offset k = 10 latency MAPE % (mean ± sd over seeds): " + "; ".join(
        f"{n}: " + ", ".join(f"{f} {cell(n, f)[0]:.2f} ± {cell(n, f)[1]:.2f}"
                             for f in ("efficientnet", "mobilenetv2", "vgg")) for n in BENCHES))
    gap = (seed_mape["F"] - seed_mape["D"]).unstack("family")
    se = gap.std(ddof=1) / np.sqrt(len(gap))
    lines.append("paired per seed, offset k = 10 MAPE F - D (mean ± SE over seeds; seeds with "
                 "F < D): " + ", ".join(f"{f} {gap[f].mean():+.2f} ± {se[f]:.2f} "
                                        f"({int((gap[f] < 0).sum())} of {len(gap)})"
                                        for f in gap.columns))
    lines.append("zero-shot median log residual (n) by batch, F0:")
    lines.append(by_batch["F0"].round(3).to_string())
    pairs.to_csv(res_dir / "retime_pairs.csv", index=False)
    table.to_csv(res_dir / "residuals.csv")
    pd.concat([s.assign(bench=n) for n, s in summ.items()]).to_csv(res_dir / "summary.csv",
                                                                   index=False)
    write_score(res_dir, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
