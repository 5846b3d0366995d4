"""The operator benchmark under the zoo rows' protocol: the heap kept against the default heap,
timed back to back on this host, and the operator-sum baseline restated on each.

The zoo rows (``data/<platform>/zoo/rows.parquet``) were timed with the heap kept; the shipped
operator benchmark of their platform (``data/<platform>/design/kernels.parquet``) with the default heap,
on another VM and day. Before any operator model is changed, this script asks how much of the
operator sum's error on the zoo is that mismatch. On the CPU kind of the platform (``cpu_id``):

1. ``carb kernels`` times the shipped benchmark's draw again (its sampler and seed: the same
   operators), first with the default heap, then with the heap kept, back to back, each with its
   anchors (:mod:`carb_lib.kernels.anchors`) before, every :data:`ANCHOR_EVERY` operators and
   after: the host's speed through both draws;
2. per operator, the kept/default time ratio (the heap's effect on this host, same hour) and the
   today/shipped ratio of the default-heap times (this host against the shipped one), as medians
   with quartiles and as the ratio of summed times, over all operators, per operator kind and
   per batch size;
3. the operator-sum baseline of notebook 07 (``operators_summed``: each zoo row's operators
   predicted by a :class:`~carb_lib.kernels.law.KernelModel` fitted on one benchmark and summed,
   no fitted scale) on every measured zoo row, with each of the three benchmarks: median APE,
   share within +-10 %, median predicted/measured ratio and Spearman within setting, over all rows
   and per setting (precision and batch) and network.

The zoo rows themselves are not re-timed (a zoo audit takes about an hour): the host that timed
them is another VM, so the benchmarks of today and the rows differ also by host; the anchors and
the today/shipped ratio say by how much the host speed differs from the shipped benchmark's.

Writes the two benchmarks (and their anchors) to ``data/<platform>/heap_pair_default/kernels.parquet``
and ``_heap_pair_kept.parquet`` (new files: one run per CPU kind), the scores to
``results/benchmarks/zoo_operator_protocol_<platform>.csv`` and the operator ratios to
``results/benchmarks/zoo_operator_protocol_<platform>_ratios.csv`` (on the AMD EPYC Zen 4:
``zoo_operator_protocol_cpu_epyc_zen4_2c.csv`` and
``zoo_operator_protocol_cpu_epyc_zen4_2c_ratios.csv``). One run per CPU kind, reported as it
comes; never re-run to improve a number: once the benchmarks are written, a run (``make
bench``) recomputes the tables from them, and on a CPU kind with no zoo rows it says so and
times nothing.

``python benchmarks/zoo_operator_protocol.py`` (about 20 min on 2 cores; nothing else heavy
meanwhile); ``--score-only`` recomputes the tables from the files written.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: Anchors are timed every this many operators of a draw.
ANCHOR_EVERY = 500


def _this_cpu() -> str:
    from carb_lib.measure.devices import cpu_identity

    return cpu_identity()


def _platform_of(cpu: str) -> str | None:
    """The catalogued platform whose zoo rows were measured on the CPU kind ``cpu``."""
    from carb_lib.dataset.catalog import load_catalog

    return load_catalog().platform_of_cpu(cpu, "zoo")


def _shipped(platform: str) -> tuple[Path, Path]:
    """The platform's design-campaign operator benchmark and its zoo rows, from the catalog."""
    from carb_lib.dataset.catalog import load_catalog

    cat = load_catalog()
    bench = [e.path for e in cat.entries(platform, "design", "kernels") if e.path.is_file()]
    zoo = [e.path for e in cat.entries(platform, "zoo", "rows") if e.path.is_file()]
    if not bench or not zoo:
        sys.exit(f"error: {platform} has no catalogued design benchmark or zoo rows")
    return bench[0], zoo[0]


def _time(out: Path, heap: str, platform: str, bench: pd.DataFrame, n: int) -> None:
    """``carb kernels`` of the shipped draw (its sampler and seed; ``n`` operators) with ``heap``."""
    if out.exists():
        sys.exit(f"error: {out} exists (one run per CPU kind); --score-only recomputes the tables")
    (sampler,), (seed,) = bench["sampler"].unique(), bench["sample_seed"].unique()
    cmd = [str(Path(sys.executable).parent / "carb"), "kernels", "--out", str(out),
           "--n", str(n), "--seed", str(int(seed)), "--sampler", str(int(sampler)),
           "--threads", "1", "--platform", platform, "--anchor-every", str(ANCHOR_EVERY),
           "--no-cache-probe", "--keep-heap" if heap == "kept" else "--default-heap"]
    print(f"timing {n} operators with the {heap} heap -> {out}", flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)


def _ratios(num: pd.DataFrame, den: pd.DataFrame, what: str) -> pd.DataFrame:
    """Per-operator time ratios num/den over all operators, per operator kind and per batch size.

    An operator is one shape (:data:`carb_lib.kernels.operators.OP_COLUMNS`) at one batch size
    and precision; one drawn more than once in a benchmark counts once, at its median time;
    operators only one benchmark holds are left out."""
    from carb_lib.kernels.operators import OP_COLUMNS

    key = [*OP_COLUMNS, "batch", "precision"]
    a, b = (f.groupby(key, as_index=False)["time_ms"].median() for f in (num, den))
    j = a.merge(b, on=key, suffixes=("_a", "_b"))
    j["ratio"] = j["time_ms_a"] / j["time_ms_b"]
    groups = [("all", "all", j)]
    groups += [("kind", str(k), g) for k, g in sorted(j.groupby("kind"))]
    groups += [("batch", str(int(k)), g) for k, g in sorted(j.groupby("batch"))]
    rows = []
    for by, name, g in groups:
        q = g["ratio"].quantile([0.25, 0.5, 0.75])
        rows.append(dict(comparison=what, by=by, group=name, n_operators=len(g),
                         median_ratio=q[0.5], ratio_q25=q[0.25], ratio_q75=q[0.75],
                         time_weighted_ratio=float(g["time_ms_a"].sum() / g["time_ms_b"].sum()),
                         share_above_1_10=float((g["ratio"] > 1.1).mean()),
                         share_below_0_90=float((g["ratio"] < 0.9).mean())))
    return pd.DataFrame(rows)


def _operator_sum(zoo: pd.DataFrame, bench: pd.DataFrame, seed: int) -> np.ndarray:
    from carb_lib.core.vocab import KERNEL_FEATURE
    from carb_lib.kernels import law as kernels

    fitted = kernels.fit_kernel_model(bench, None, random_state=seed)
    return kernels.with_kernel_column(zoo, fitted)[KERNEL_FEATURE].to_numpy(float)


def _scores(zoo: pd.DataFrame, pred: np.ndarray, label: str) -> list[dict]:
    """Scores of one benchmark's operator sum over all rows, per setting (precision and batch)
    and per network: :func:`carb_lib.evaluation.zoo.zoo_scores` (notebook 07's statistics)
    with each group as its ``kind``, and the median predicted/measured ratio."""
    from carb_lib.evaluation.zoo import zoo_scores

    m = zoo["latency_ms"].to_numpy(float)
    long = zoo.assign(method=label, target="latency_ms", measured=m, predicted=pred,
                      ratio=pred / m, setting=zoo["precision"].astype(str) + " batch "
                      + zoo["batch"].astype(int).astype(str))
    out = []
    for by in ("setting", "network"):  # the "all" row once, with the settings
        grouped = long.assign(kind=long[by])
        ratio = pd.concat([grouped.assign(kind="all"), grouped]).groupby("kind")["ratio"].median()
        for r in zoo_scores(grouped).itertuples():
            if r.kind == "all" and by == "network":
                continue
            out.append(dict(benchmark=label, by="all" if r.kind == "all" else by, group=r.kind,
                            n=int(r.n), median_ape_pct=r.median_ape_pct,
                            within_10pct=r.within_10pct,
                            median_pred_over_measured=float(ratio[r.kind]),
                            spearman_within_setting=r.spearman_within_batch))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--platform", default=None,
                    help="a platform with zoo rows (default: the one measured on this CPU kind)")
    ap.add_argument("--score-only", action="store_true",
                    help="recompute the tables from the benchmarks written (no timing)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the operator models")
    ap.add_argument("--n", type=int, default=None,
                    help="operators to time (default: all of the shipped draw; fewer: a smoke run)")
    ap.add_argument("--data-dir", type=Path, default=ROOT / "data",
                    help="data folder of the benchmarks written (<platform>/heap_pair_<heap>/)")
    ap.add_argument("--results-dir", type=Path, default=ROOT / "results" / "benchmarks")
    args = ap.parse_args(argv)

    from carb_lib.evaluation.zoo import zoo_rows
    from carb_lib.kernels import law as kernels
    from carb_lib.kernels.anchors import anchor_speeds, anchors_path

    here = _this_cpu()
    platform = args.platform or _platform_of(here)
    if platform is None:
        print(f"no zoo rows were measured on this CPU kind ({here}): nothing to time")
        return 0
    shipped_path, zoo_path = _shipped(platform)
    shipped = kernels.read_bench(shipped_path)
    paths = {h: args.data_dir / platform / f"heap_pair_{h}" / "kernels.parquet"
             for h in ("default", "kept")}
    done = all(p.is_file() for p in paths.values())
    if not args.score_only and done:
        print(f"{platform}: the benchmarks are written (one run per CPU kind, never re-run to "
              "improve a number); the tables are recomputed from them")
    elif not args.score_only:
        (stored,) = shipped["cpu_id"].unique()
        if here != stored:
            sys.exit(f"error: this host is {here!r}; {platform}'s rows are {stored!r}")
        for heap in ("default", "kept"):
            _time(paths[heap], heap, platform, shipped, args.n or len(shipped))
    elif not done:
        sys.exit(f"error: --score-only needs {paths['default']} and {paths['kept']}")
    default, kept = (kernels.read_bench(paths[h]) for h in ("default", "kept"))
    ratios = pd.concat([_ratios(kept, default, "kept_over_default_today"),
                        _ratios(default, shipped, "today_default_over_shipped")],
                       ignore_index=True)
    anchors = pd.concat([pd.read_parquet(anchors_path(paths[h])).assign(heap=h)
                         for h in ("default", "kept")], ignore_index=True)
    speeds = anchor_speeds(anchors)
    heap_of = anchors.groupby("campaign")["heap"].first()
    speeds["heap"] = speeds["campaign"].map(heap_of)

    raw = pd.read_parquet(zoo_path)
    zoo = zoo_rows(raw[raw["status"] == "ok"]).reset_index(drop=True)
    rows = []
    for label, bench in (("shipped_default_heap", shipped), ("today_default_heap", default),
                         ("today_kept_heap", kept)):
        rows += _scores(zoo, _operator_sum(zoo, bench, args.seed), label)
    scores = pd.DataFrame(rows)
    res = args.results_dir
    res.mkdir(parents=True, exist_ok=True)
    stem = f"zoo_operator_protocol_{platform}"
    meta = dict(platform=platform, cpu_id=str(default["cpu_id"].iloc[0]),
                measured=str(default["measured_at"].min())[:10],
                zoo_rows=zoo_path.relative_to(ROOT).as_posix(),
                shipped_benchmark=shipped_path.relative_to(ROOT).as_posix())
    scores.assign(**meta).to_csv(res / f"{stem}.csv", index=False)
    ratios.assign(**meta).to_csv(res / f"{stem}_ratios.csv", index=False)
    pd.set_option("display.width", 160)
    print(speeds[["phase", "heap", "relative_time", "ratio_q25", "ratio_q75"]].to_string(
        index=False, float_format="%.3f"))
    print(ratios.to_string(index=False, float_format="%.3f"))
    print(scores[scores["by"] != "network"].to_string(index=False, float_format="%.3f"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
