"""Which ResNet rows, and how large a model, should a cross-family source have?

Pre-registration N's dry run (session 26) found session 12's rows of 400 configs (stored
latency ≤ 300 ms) predicting mobilenetv2 with ``offset`` at k = 10 better than all 2,656 rows.
This script scores, per target family, the kernel-law source model (latency only, shared
features, zero-shot and ``offset`` at k = 10, 5 seeds, paired splits) fitted on sources named
``ROWS[:PRESET]`` (preset default ``default``), where ``ROWS`` is

* ``all``: every ResNet row (notebook 05's source; ``all`` is the baseline of ``gain_pts``);
* ``random_N`` / ``random_N_dD``: N of them, drawn with ``DataFrame.sample(random_state=D)``
  (draw D, default 1);
* ``le300ms_400``: pre-registration M's 400 (``probe_list.resnet_sample``, ≤ 300 ms, seed 1);
* ``where(EXPR)``: the rows that ``DataFrame.query(EXPR)`` keeps, e.g.
  ``where(precision == 'fp32')``;
* ``kernel_range``: the rows whose kernel-law latency (``kernel_ms``, known before measuring)
  lies within the target family's range of ``kernel_ms`` over all its rows (only their
  features are read), a rule that needs no latency of the family;

and ``PRESET`` one of :data:`carb_lib.ensemble.PRESETS`. ``--targets LABEL=PATH:FRACTION``
(repeatable) names each target data set and its held-out share of architectures. Writes
``scores.csv``, ``summary.csv`` (with ``n_source_rows``) and ``gains.csv`` into ``--out``.

``python scripts/source_subset_check.py data/other_cpus/cpu_epyc_zen5_2c.parquet --targets s12=data/other_cpus/new_families/cpu_epyc_zen5_2c.parquet:0.3 --bench data/kernels/cpu_epyc_zen5_2c_session21.parquet data/kernels/cpu_epyc_zen5_2c_sampler4.parquet --out results/cross_family/source_subset/cpu_epyc_zen5_2c``
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from probe_list import resnet_sample  # noqa: E402
from probe_source_test import METHOD, K, summarise  # noqa: E402

from carb_lib.dataset import read_dataset  # noqa: E402
from carb_lib.ensemble import PRESETS  # noqa: E402
from carb_lib.evaluation import cross_family_evaluation  # noqa: E402
from carb_lib.evaluation.cross_family import kernel_law_rows  # noqa: E402
from carb_lib.vocab import KERNEL_FEATURE  # noqa: E402

DEFAULT_SOURCES = ("all", "random_400", "le300ms_400", "kernel_range")
BASE = "all"
_ROWS = re.compile(r"^(all|le300ms_400|kernel_range|random_(\d+)(?:_d(\d+))?)$")


def parse_source(name: str) -> tuple[str, int | None, int, str]:
    """``ROWS[:PRESET]`` -> (rows kind, N or None, draw, preset), with one clear error;
    for ``where(EXPR)`` the kind is ``EXPR``'s text and N is None."""
    if name.startswith("where(") and ")" in name:
        expr, _, pre = name[len("where("):].rpartition(")")
        pre = pre.removeprefix(":") or "default"
        if pre not in PRESETS:
            raise SystemExit(f"source_subset_check: source {name!r}: unknown preset {pre!r}")
        return f"where:{expr}", None, 1, pre
    rows, _, pre = name.partition(":")
    pre = pre or "default"
    m = _ROWS.match(rows)
    if m is None:
        raise SystemExit(f"source_subset_check: source {name!r}: rows must be all, random_N, "
                         "random_N_dD, le300ms_400, kernel_range or where(EXPR)")
    if pre not in PRESETS:
        raise SystemExit(f"source_subset_check: source {name!r}: unknown preset {pre!r}; "
                         f"known: {', '.join(sorted(PRESETS))}")
    kind = "random" if m.group(2) else rows
    n = int(m.group(2)) if m.group(2) else None
    if n is not None and n < 1:
        raise SystemExit(f"source_subset_check: source {name!r}: N must be at least 1")
    return kind, n, int(m.group(3) or 1), pre


def in_kernel_range(source: pd.DataFrame, family_rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``source`` whose ``kernel_ms`` lies within ``family_rows``' min-max range."""
    lo, hi = family_rows[KERNEL_FEATURE].min(), family_rows[KERNEL_FEATURE].max()
    return source[source[KERNEL_FEATURE].between(lo, hi)].reset_index(drop=True)


def source_rows(name: str, resnet: pd.DataFrame, raw: pd.DataFrame,
                family_rows: pd.DataFrame) -> pd.DataFrame:
    """The rows of source ``name`` for one target family. ``raw``: the ResNet rows as stored
    (to draw M's 400 exactly as ``probe_list`` drew them)."""
    kind, n, draw, _ = parse_source(name)
    if kind == "all":
        return resnet
    if kind.startswith("where:"):
        try:
            out = resnet.query(kind[len("where:"):]).reset_index(drop=True)
        except Exception as exc:  # a pandas query error names the problem
            raise SystemExit(f"source_subset_check: source {name!r}: {exc}") from None
        if out.empty:
            raise SystemExit(f"source_subset_check: source {name!r} selects no row")
        return out
    if kind == "random":
        if n > len(resnet):
            raise SystemExit(f"source_subset_check: source {name!r}: only {len(resnet)} rows")
        return resnet.sample(n=n, random_state=draw).reset_index(drop=True)
    if kind == "le300ms_400":
        m400 = set(resnet_sample(raw, 400, max_ms=300.0, seed=1)["config_id"])
        return resnet[resnet["config_id"].isin(m400)].reset_index(drop=True)
    return in_kernel_range(resnet, family_rows)


def parse_target(text: str) -> tuple[str, Path, float]:
    """``LABEL=PATH:FRACTION`` -> (label, path, fraction), with one clear error."""
    try:
        label, rest = text.split("=", 1)
        path, frac = rest.rsplit(":", 1)
        f = float(frac)
    except ValueError:
        raise SystemExit(f"source_subset_check: --targets {text!r}: want LABEL=PATH:FRACTION") from None
    if not 0 < f < 1:
        raise SystemExit(f"source_subset_check: --targets {text!r}: fraction {f} not in (0, 1)")
    return label, Path(path), f


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("resnet", type=Path, help="the platform's ResNet rows")
    ap.add_argument("--targets", nargs="+", required=True, help="LABEL=PATH:FRACTION")
    ap.add_argument("--bench", type=Path, nargs="+", required=True)
    ap.add_argument("--sources", nargs="+", default=list(DEFAULT_SOURCES),
                    help="ROWS[:PRESET] (default: %(default)s); 'all' is the baseline")
    ap.add_argument("--families", nargs="+", default=None, help="default: every target family")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    for name in args.sources:
        parse_source(name)
    if BASE not in args.sources:
        raise SystemExit(f"source_subset_check: --sources must include the baseline {BASE!r}")
    targets = [parse_target(t) for t in args.targets]
    for p in [args.resnet, *(t[1] for t in targets), *args.bench]:
        if not p.exists():
            raise SystemExit(f"source_subset_check: missing {p}")
    resnet, *rows = kernel_law_rows(args.bench, args.resnet, *(t[1] for t in targets))
    raw = read_dataset(args.resnet)
    common = {"ks": (K,), "n_seeds": args.seeds, "targets": ("latency_ms",),
              "methods": (METHOD,), "default_method": METHOD, "latency_law": "kernel",
              "own_model": False, "progress": False}
    parts, sizes = [], []
    for (label, _, frac), tgt in zip(targets, rows, strict=True):
        fams = sorted(tgt["family"].astype(str).unique())
        for fam in [f for f in fams if args.families is None or f in args.families]:
            for name in args.sources:
                src = source_rows(name, resnet, raw, tgt[tgt["family"] == fam])
                res = cross_family_evaluation(src, tgt, families=[fam], test_fraction=frac,
                                              preset=parse_source(name)[3], **common)
                parts.append(res.scores.assign(source=name, dataset=label))
                sizes.append({"dataset": label, "family": fam, "source": name,
                              "n_source_rows": len(src)})
            print(f"{label} {fam}: done", flush=True)
    sc = pd.concat(parts, ignore_index=True)
    summ, gains = summarise(sc, base=BASE)
    summ = summ.merge(pd.DataFrame(sizes), on=["dataset", "family", "source"])
    args.out.mkdir(parents=True, exist_ok=True)
    sc.to_csv(args.out / "scores.csv", index=False)
    summ.to_csv(args.out / "summary.csv", index=False)
    gains.to_csv(args.out / "gains.csv", index=False)
    few = summ[(summ["model"] == METHOD) & (summ["k"] == K)]
    with pd.option_context("display.width", 250, "display.max_rows", 300,
                           "display.max_columns", 30):
        print(few.pivot_table(index=["dataset", "family"], columns="source",
                              values="mape_pct_mean").round(2))
        print(gains.pivot_table(index=["dataset", "family"], columns="source",
                                values="gain_pts_mean").round(2))


if __name__ == "__main__":
    main()
