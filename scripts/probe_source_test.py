"""Pre-registration L's test: does a source of ResNet rows *and probe networks* predict a
depthwise family better than ResNet rows alone?

Probe networks (:mod:`carb_lib.probe_nets`) belong to no family: a user can measure them on a
platform once, before any family of interest. For each target data set of the platform and
each family in it, the kernel-law source model (``CARBRegressor``, ``feature_set="shared"``,
the default preset, latency only) is fitted on

* ``resnet``: the quiet ResNet rows alone (notebook 05's source);
* ``resnet+probe``: those and the probe rows, put on the quiet rows' scale: divided by the
  host's speed today relative to theirs, the median ratio of the ResNet configs re-measured in
  the probe campaign (``remeasured_resnet.parquet``) to their stored values;
* ``resnet+probe_raw``: the same, the probe rows as measured;
* ``resnet+siblings``: the ResNet rows and the other new families' rows (session 24's sibling
  source; beside, as the reference for what depthwise rows of *a family* gave);

and scored zero-shot and with ``offset`` at k = 10 on the family's held-out architectures,
5 seeds; every source sees the same split, k rows and model seeds, so ``gain_pts`` (MAPE of
``resnet`` minus that source's, ``offset`` k = 10) pairs per seed. Target data sets:

* ``s12``: the platform's first new-family rows (session 12 on the Zen 5), 30 % held out;
* ``passes``: the fastest-of-8-passes rows (session 23), 30 % held out;
* ``fresh``: the fresh depthwise rows at batch >= 16 (session 24), 70 % held out (as in
  pre-registration J), siblings from ``s12``.

``python scripts/probe_source_test.py cpu_epyc_zen5_2c --out results/cross_family/probe/cpu_epyc_zen5_2c``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from carb_lib.dataset import read_dataset
from carb_lib.evaluation import cross_family_evaluation
from carb_lib.evaluation.cross_family import kernel_law_rows

K = 10
METHOD = "offset"
SOURCES = ("resnet", "resnet+probe", "resnet+probe_raw", "resnet+siblings")


def judged_bench(platform: str) -> list[Path]:
    """The platform's judged operator benchmark: session 21's v3 draw and the sampler-v4 draw."""
    return [Path(f"data/kernels/{platform}_session21.parquet"),
            Path(f"data/kernels/{platform}_sampler4.parquet")]


def shared_ok_latency(*frames: pd.DataFrame) -> tuple[pd.Series, ...]:
    """``latency_ms`` of each frame over the configs all of them hold ``ok``, aligned by
    ``config_id`` in the first frame's order (empty when they share none)."""
    lat = [f[f["status"] == "ok"].set_index("config_id")["latency_ms"] for f in frames]
    shared = lat[0].index
    for s in lat[1:]:
        shared = shared.intersection(s.index)
    return tuple(s[shared] for s in lat)


def speed_factor(remeasured: pd.DataFrame, quiet: pd.DataFrame) -> tuple[float, int]:
    """Median of re-measured / stored latency over the configs both hold ``ok``, and how many."""
    a, b = shared_ok_latency(remeasured, quiet)
    if len(a) == 0:
        raise SystemExit("probe_source_test: no re-measured config is in the quiet rows")
    return float(np.median(a / b)), len(a)


def ratio_line(name: str, now: pd.DataFrame, other: pd.DataFrame) -> str:
    """``now``'s latency against ``other``'s over the ``ok`` configs both hold: the median
    ratio, the share within ±10 % raw and with the median divided out, and the median
    |log ratio| after it."""
    a, b = shared_ok_latency(now, other)
    if len(a) == 0:
        return f"{name}: no config in common"
    r = np.log((a / b).to_numpy(float))
    r0 = r - np.median(r)
    return (f"{name}, {len(a)} configs: median ratio {np.exp(np.median(r)):.4f}; within "
            f"±10 % raw {np.mean(np.abs(r) < np.log(1.1)):.3f}, with the median divided out "
            f"{np.mean(np.abs(r0) < np.log(1.1)):.3f}; median |log| after it "
            f"{np.median(np.abs(r0)):.4f}")


def scores(sources: dict[str, tuple[pd.DataFrame, bool]], target: pd.DataFrame,
           earlier: pd.DataFrame | None, *, seeds: int, test_fraction: float,
           label: str) -> pd.DataFrame:
    """Per-seed latency scores of every family of ``target`` x source. ``sources`` maps a
    name to its rows and whether the family's siblings join them (``siblings=True``);
    ``earlier``: sibling rows from another data set (else the target's own other families)."""
    common = {"ks": (K,), "n_seeds": seeds, "targets": ("latency_ms",), "methods": (METHOD,),
              "default_method": METHOD, "latency_law": "kernel", "preset": "default",
              "test_fraction": test_fraction, "own_model": False, "progress": False}
    parts = []
    for fam in sorted(target["family"].astype(str).unique()):
        tgt = target if earlier is None else pd.concat(
            [target[target["family"] == fam], earlier[earlier["family"] != fam]],
            ignore_index=True)
        for name, (source, sib) in sources.items():
            res = cross_family_evaluation(source, tgt, families=[fam], siblings=sib, **common)
            parts.append(res.scores.assign(source=name, dataset=label))
        print(f"{label} {fam}: done", flush=True)
    return pd.concat(parts, ignore_index=True)


def score_data_sets(sources: dict[str, tuple[pd.DataFrame, bool]], *, fresh: pd.DataFrame,
                    passes: pd.DataFrame, s12: pd.DataFrame, seeds: int, out: Path
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`scores` on the three target data sets (``fresh`` with 70 % held out and its
    siblings from ``s12``; ``passes`` and ``s12`` with 30 %), summarised
    (:func:`summarise`); writes ``out/scores.csv``, ``summary.csv`` and ``gains.csv``, and
    returns the summary and the gains."""
    sc = pd.concat([
        scores(sources, fresh, s12, seeds=seeds, test_fraction=0.7, label="fresh"),
        scores(sources, passes, None, seeds=seeds, test_fraction=0.3, label="passes"),
        scores(sources, s12, None, seeds=seeds, test_fraction=0.3, label="s12"),
    ], ignore_index=True)
    summ, gains = summarise(sc)
    out.mkdir(parents=True, exist_ok=True)
    sc.to_csv(out / "scores.csv", index=False)
    summ.to_csv(out / "summary.csv", index=False)
    gains.to_csv(out / "gains.csv", index=False)
    return summ, gains


def summarise(sc: pd.DataFrame, *, base: str = "resnet") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean and sd over seeds per data set x family x source x model, and the paired gains:
    per seed, the ``offset`` k = 10 MAPE of source ``base`` minus each other source's."""
    keys = ["dataset", "family", "source", "model", "k"]
    summ = sc.groupby(keys)[["mape_pct", "within_10pct", "spearman"]].agg(["mean", "std"])
    summ.columns = [f"{m}_{s.replace('std', 'sd')}" for m, s in summ.columns]
    summ = summ.reset_index()
    few = sc[(sc["model"] == METHOD) & (sc["k"] == K)]
    ref = few[few["source"] == base].set_index(["dataset", "family", "seed"])["mape_pct"]
    rows = []
    for (ds, fam, s), g in few.groupby(["dataset", "family", "source"]):
        if s == base:
            continue
        d = ref.loc[(ds, fam)].reindex(g["seed"]).to_numpy() - g["mape_pct"].to_numpy()
        rows.append({"dataset": ds, "family": fam, "source": s, "gain_pts_mean": d.mean(),
                     "gain_pts_sd": d.std(ddof=1), "n_seeds": len(d)})
    return summ, pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--bench", type=Path, nargs="+", default=None,
                    help="operator benchmark files (default: the platform's session-21 v3 "
                         "and sampler-v4 files)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    p = args.platform
    nets, fams = Path("data/other_cpus"), Path("data/other_cpus/new_families")
    bench = args.bench or judged_bench(p)
    factor, n_pairs = speed_factor(read_dataset(args.out / "remeasured_resnet.parquet"),
                                   read_dataset(nets / f"{p}.parquet"))
    src, probe, s12, passes, fresh = kernel_law_rows(
        bench, nets / f"{p}.parquet", Path(f"data/other_cpus/probe_nets/{p}.parquet"),
        fams / f"{p}.parquet", fams / f"{p}_passes.parquet", fams / f"{p}_fresh_depthwise.parquet")
    scaled = probe.assign(latency_ms=probe["latency_ms"] / factor)
    sources = {
        "resnet": (src, False),
        "resnet+probe": (pd.concat([src, scaled], ignore_index=True), False),
        "resnet+probe_raw": (pd.concat([src, probe], ignore_index=True), False),
        "resnet+siblings": (src, True),
    }
    summ, gains = score_data_sets(sources, fresh=fresh, passes=passes, s12=s12, seeds=args.seeds,
                            out=args.out)
    (args.out / "speed.txt").write_text(
        f"host speed today / quiet rows: median ratio {factor:.4f} over {n_pairs} re-measured "
        f"ResNet configs\nprobe rows: {len(probe)}; ResNet rows: {len(src)}\n")
    print((args.out / "speed.txt").read_text())
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(summ[summ["model"] == METHOD][["dataset", "family", "source", "mape_pct_mean",
                                             "mape_pct_sd", "spearman_mean"]].round(3))
        print(gains.round(2))


if __name__ == "__main__":
    main()
