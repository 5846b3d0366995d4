"""Pre-registration AH (session 34): issue 14's two latency targets (small batches held out R² >=
0.95, random split >= 95 % within ±10 %) in one steady kept sitting of the fifth CPU, with the
weight-traffic term (``KernelModel(traffic="sum")``, the default since session 32).

``results/measurement/PLATFORM_TAG/PREREGISTRATION.md`` says what is predicted. Reads the
sitting's reference rows and the two replications of its rows (``kernel_law_replication.py``
with ``--cache-probe``, ``results/carb/replication_PLATFORM_TAG_sum``, and without,
``…_TAG``) and writes ``score.txt`` beside the pre-registration:

* AH0 (reading condition): the reference config's CV <= 3 %;
* AH1: with the term, small batches held out: R² >= 0.95;
* AH2: with the term, random split: >= 95 % within ±10 %;
* AH3: with the term, random split: MAPE <= 3.5 %;
* AH4: with the term, large batches held out: R² >= 0.98;
* AH5: without the term, small batches held out: R² < 0.95.

``python scripts/both_targets_score.py cpu_xeon_gnr_2c``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kept_heap_sitting_score import (  # noqa: E402
    Judge,
    missing_file,
    replication_cell,
    write_score,
)
from paired_heap_score import reference_stats  # noqa: E402
from traffic_sitting_score import sitting_files  # noqa: E402

REF_CV_MAX, R2_MIN, WITHIN_MIN, MAPE_MAX, LARGE_MIN = 0.03, 0.95, 0.95, 3.5, 0.98


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--tag", default="session34_both")
    a = ap.parse_args(argv)
    p = a.platform
    res, files = sitting_files(p, a.tag)
    if missing_file("both_targets_score", files):
        return 2

    def term(split: str, col: str) -> float:
        return replication_cell(files["sum replication"], split, col)

    def none(split: str, col: str) -> float:
        return replication_cell(files["replication"], split, col)

    lines = [f"# python scripts/both_targets_score.py {p} --tag {a.tag}", ""]
    judge = Judge(lines)
    med, cv, n = reference_stats(files["reference"])
    judge("AH0", f"reference config: {n} runs, median {med:.2f} ms, CV {cv:.1%}; bound "
          f"{REF_CV_MAX:.0%}", cv <= REF_CV_MAX)
    r2 = term("batch_small", "r2")
    judge("AH1", f"term, small batches held out: R² {r2:.3f}; predicted >= {R2_MIN}",
          r2 >= R2_MIN)
    w = term("random", "within_10pct")
    judge("AH2", f"term, random split: {w:.1%} within ±10 %; predicted >= {WITHIN_MIN:.0%}",
          w >= WITHIN_MIN)
    m = term("random", "mape_pct")
    judge("AH3", f"term, random split: MAPE {m:.2f} %; predicted <= {MAPE_MAX}", m <= MAPE_MAX)
    lr2 = term("batch_large", "r2")
    judge("AH4", f"term, large batches held out: R² {lr2:.3f}; predicted >= {LARGE_MIN}",
          lr2 >= LARGE_MIN)
    r2_none = none("batch_small", "r2")
    judge("AH5", f"no term, small batches held out: R² {r2_none:.3f}; predicted < {R2_MIN}",
          r2_none < R2_MIN)
    both = cv <= REF_CV_MAX and r2 >= R2_MIN and w >= WITHIN_MIN
    lines += ["", judge.held_line(), "",
              "issue 14's two latency targets in this sitting (AH0, AH1 and AH2): "
              + ("met together" if both else "not both met, or the host was not steady"),
              "reported, not judged (without the term): random split "
              f"{none('random', 'within_10pct'):.1%} within ±10 %, MAPE "
              f"{none('random', 'mape_pct'):.2f} %; small batches MAPE "
              f"{none('batch_small', 'mape_pct'):.2f} % (term {term('batch_small', 'mape_pct'):.2f} %)"]
    write_score(res, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
