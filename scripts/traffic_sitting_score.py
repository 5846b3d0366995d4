"""Pre-registration AG (session 32): weights read from memory added to an operator's time alone
(``KernelModel(cache=knee, traffic="sum")``), on a new kept sitting of the fifth CPU.

``results/measurement/PLATFORM_TAG/PREREGISTRATION.md`` says what is predicted. Reads the
sitting's reference rows and the two replications of its rows (``kernel_law_replication.py``
without a traffic term, ``results/carb/replication_PLATFORM_TAG``, and with ``--cache-probe …
--traffic sum``, ``…_sum``) and writes ``score.txt`` beside the pre-registration:

* AG0 (reading condition): the reference config's CV <= 5 %;
* AG1: ``sum``, small batches held out: R² >= 0.95;
* AG2: ``sum`` - none on that R²: >= +0.02;
* AG3: ``sum``'s small-batch MAPE at most 0.5 points above none's;
* AG4: ``sum``, random split: >= 95 % within ±10 %;
* AG5: ``sum``, large batches held out: R² no more than 0.005 below none's.

``python scripts/traffic_sitting_score.py cpu_xeon_gnr_2c``
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

REF_CV_MAX, R2_MIN, R2_GAIN, MAPE_SLACK, WITHIN_MIN, LARGE_SLACK = 0.05, 0.95, 0.02, 0.5, 0.95, 0.005


def sitting_files(platform: str, tag: str) -> tuple[Path, dict[str, Path]]:
    """A kept sitting's folder beside its pre-registration and the files its scorers read: the
    reference rows and the replications without (``replication``) and with the weight-traffic
    term (``sum replication``)."""
    res = Path(f"results/measurement/{platform}_{tag}")
    return res, {"reference": res / "reference.parquet",
                 "replication": Path(f"results/carb/replication_{platform}_{tag}"),
                 "sum replication": Path(f"results/carb/replication_{platform}_{tag}_sum")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--tag", default="session32_traffic")
    a = ap.parse_args(argv)
    p = a.platform
    res, files = sitting_files(p, a.tag)
    if missing_file("traffic_sitting_score", files):
        return 2

    def cell(folder: str, split: str, col: str) -> float:
        return replication_cell(files[folder], split, col)

    lines = [f"# python scripts/traffic_sitting_score.py {p} --tag {a.tag}", ""]
    judge = Judge(lines)
    med, cv, n = reference_stats(files["reference"])
    judge("AG0", f"reference config: {n} runs, median {med:.2f} ms, CV {cv:.1%}; bound "
          f"{REF_CV_MAX:.0%}", cv <= REF_CV_MAX)
    r2_sum, r2_none = cell("sum replication", "batch_small", "r2"), cell("replication",
                                                                        "batch_small", "r2")
    judge("AG1", f"sum, small batches held out: R² {r2_sum:.3f} (none {r2_none:.3f}); predicted "
          f">= {R2_MIN}", r2_sum >= R2_MIN)
    judge("AG2", f"sum - none: {r2_sum - r2_none:+.3f}; predicted >= +{R2_GAIN}",
          r2_sum - r2_none >= R2_GAIN)
    m_sum, m_none = (cell("sum replication", "batch_small", "mape_pct"),
                     cell("replication", "batch_small", "mape_pct"))
    judge("AG3", f"small-batch MAPE: sum {m_sum:.2f} %, none {m_none:.2f} %; predicted sum <= "
          f"none + {MAPE_SLACK}", m_sum <= m_none + MAPE_SLACK)
    w = cell("sum replication", "random", "within_10pct")
    judge("AG4", f"sum, random split: {w:.1%} within ±10 % (none "
          f"{cell('replication', 'random', 'within_10pct'):.1%}); predicted >= {WITHIN_MIN:.0%}",
          w >= WITHIN_MIN)
    l_sum, l_none = cell("sum replication", "batch_large", "r2"), cell("replication",
                                                                       "batch_large", "r2")
    judge("AG5", f"large batches held out: R² sum {l_sum:.3f}, none {l_none:.3f}; predicted "
          f"sum >= none - {LARGE_SLACK}", l_sum >= l_none - LARGE_SLACK)
    lines += ["", judge.held_line(), "", "reported, not judged (random split MAPE %): sum "
              f"{cell('sum replication', 'random', 'mape_pct'):.2f}, none "
              f"{cell('replication', 'random', 'mape_pct'):.2f}"]
    write_score(res, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
