"""Pre-registration AJ (session 34): the ResNet source of the steadiest sitting, on fresh configs
off the grid (36, 44, 72, 88 px).

``results/measurement/PLATFORM_TAG/PREREGISTRATION.md`` says what is predicted. Runs
``source_sitting_grid.grid`` (every ResNet sitting of :data:`source_sitting_grid.SOURCES` as the
source of issue 15's cell, on the sitting's new-family rows) and writes ``score.txt`` and
``grid.csv`` beside the pre-registration:

* AJ0 (reading condition): the target sitting's reference config CV <= 5 %;
* AJ1-AJ4, with the source the rule picks (the lowest reference CV,
  ``source_sitting_grid.steadiest``): peak memory zero-shot MAPE <= 0.1 % for each family;
  latency Spearman >= 0.95 for each; efficientnet <= 10 %; mobilenetv2 and vgg <= 10 % each;
* AJ5: over the sources, Spearman(source reference CV, efficientnet MAPE) >= 0.8;
* AJ6: efficientnet with the chosen source at least 2 points below session 30's kept source
  (the source of pre-registrations AC, AF and AI).

``python scripts/source_sitting_score.py cpu_xeon_gnr_2c``
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kept_heap_sitting_score import Judge, missing_file, write_score  # noqa: E402
from paired_heap_score import reference_stats  # noqa: E402
from source_sitting_grid import SOURCES, grid, report, steadiest  # noqa: E402

REF_CV_MAX, MEMORY_PCT, RHO_MIN, TARGET_PCT, CV_RHO_MIN, GAIN_MIN = 0.05, 0.1, 0.95, 10.0, 0.8, 2.0
FAMILIES = ("efficientnet", "mobilenetv2", "vgg")
#: The source of pre-registrations AC, AF and AI.
EARLIER = "session30_kept"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--tag", default="session34_steady_source")
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    p, tag = a.platform, a.tag
    out = Path(f"results/measurement/{p}_{tag}")
    files = {"new-family rows": Path(f"data/other_cpus/new_families/{p}_{tag}.parquet"),
             "reference": out / "reference.parquet",
             **{f"source {s} reference": Path(f"results/measurement/{p}_{s}/reference.parquet")
                for s in SOURCES}}
    if missing_file("source_sitting_score", files):
        return 2
    lines = [f"# python scripts/source_sitting_score.py {p} --tag {tag} --seeds {a.seeds}", ""]
    judge = Judge(lines)
    med, cv, n = reference_stats(files["reference"])
    judge("AJ0", f"reference config: {n} runs, median {med:.2f} ms, CV {cv:.1%}; bound "
          f"{REF_CV_MAX:.0%}", cv <= REF_CV_MAX)
    g = grid(p, [tag], seeds=a.seeds).set_index("source")
    chosen = steadiest(p)
    c = g.loc[chosen]
    judge("AJ1", f"source {chosen} (reference CV {c['source_ref_cv']:.1%}, the lowest): peak "
          "memory zero-shot MAPE " + ", ".join(f"{f} {c[f'{f}_memory_pct']:.4f} %" for f in
                                               FAMILIES)
          + f"; predicted <= {MEMORY_PCT} % each",
          all(c[f"{f}_memory_pct"] <= MEMORY_PCT for f in FAMILIES))
    judge("AJ2", "latency Spearman " + ", ".join(f"{f} {c[f'{f}_spearman']:.3f}" for f in FAMILIES)
          + f"; predicted >= {RHO_MIN} each", all(c[f"{f}_spearman"] >= RHO_MIN for f in FAMILIES))
    judge("AJ3", f"efficientnet offset k = 10: {c['efficientnet_mape_pct']:.2f} ± "
          f"{c['efficientnet_sd']:.2f} %; predicted <= {TARGET_PCT:.0f} %",
          c["efficientnet_mape_pct"] <= TARGET_PCT)
    judge("AJ4", ", ".join(f"{f} {c[f'{f}_mape_pct']:.2f} ± {c[f'{f}_sd']:.2f} %"
                           for f in FAMILIES[1:]) + f"; predicted <= {TARGET_PCT:.0f} % each",
          all(c[f"{f}_mape_pct"] <= TARGET_PCT for f in FAMILIES[1:]))
    rho = float(spearmanr(g["source_ref_cv"], g["efficientnet_mape_pct"]).statistic)
    judge("AJ5", f"over {len(g)} sources, Spearman(reference CV, efficientnet MAPE) {rho:.2f}; "
          f"predicted >= {CV_RHO_MIN}", rho >= CV_RHO_MIN)
    gain = g.loc[EARLIER, "efficientnet_mape_pct"] - c["efficientnet_mape_pct"]
    judge("AJ6", f"efficientnet: {EARLIER} {g.loc[EARLIER, 'efficientnet_mape_pct']:.2f} %, "
          f"{chosen} {c['efficientnet_mape_pct']:.2f} %, gain {gain:+.2f} points; predicted >= "
          f"{GAIN_MIN}", gain >= GAIN_MIN)
    lines += ["", judge.held_line(), "", "reported, not judged:", report(g.reset_index())]
    g.to_csv(out / "grid.csv")
    write_score(out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
