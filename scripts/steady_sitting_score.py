"""Pre-registration AE (session 31): the kernel law on a steady host, heap kept.

``results/measurement/PLATFORM_TAG/PREREGISTRATION.md`` says what is predicted. Reads the
sitting's reference rows (``results/measurement/PLATFORM_TAG/reference.parquet``), the
replication (``results/carb/replication_PLATFORM_TAG/replication_summary.csv``) and, for the
report, Z's kept sitting of the same plan (``--before``), and writes ``score.txt`` beside the
pre-registration:

* AE0 (precondition): the reference config's CV <= 3 %;
* AE1: kernel law, small batches held out, R² >= 0.95;
* AE2: kernel law, random split, >= 93 % within ±10 %;
* AE3: the same share below 95 %;
* AE4: kernel law, random split, MAPE <= 4.2 %.

``python scripts/steady_sitting_score.py cpu_xeon_gnr_2c``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kept_heap_sitting_score import (  # noqa: E402
    ROW_KEY,
    Judge,
    missing_file,
    replication_cell,
    write_score,
)
from paired_heap_score import reference_stats  # noqa: E402

from carb_lib.dataset import read_dataset  # noqa: E402

REF_CV_MAX = 0.03


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("platform")
    ap.add_argument("--tag", default="session31_steady")
    ap.add_argument("--before", default="session30_kept", help="Z's kept sitting (reported)")
    a = ap.parse_args(argv)
    p = a.platform
    res = Path(f"results/measurement/{p}_{a.tag}")
    files = {"reference": res / "reference.parquet",
             "replication": Path(f"results/carb/replication_{p}_{a.tag}"),
             "before replication": Path(f"results/carb/replication_{p}_{a.before}"),
             "rows": Path(f"data/other_cpus/{p}_{a.tag}.parquet"),
             "before rows": Path(f"data/other_cpus/{p}_{a.before}.parquet")}
    if missing_file("steady_sitting_score", files):
        return 2
    lines = [f"# python scripts/steady_sitting_score.py {p} --tag {a.tag} --before {a.before}", ""]
    judge = Judge(lines)
    med, cv, n = reference_stats(files["reference"])
    judge("AE0", f"reference config: {n} runs, median {med:.2f} ms, CV {cv:.1%}; bound "
          f"{REF_CV_MAX:.0%}", cv <= REF_CV_MAX)

    def cell(folder: str, split: str, col: str) -> float:
        return replication_cell(files[folder], split, col)

    r2 = cell("replication", "batch_small", "r2")
    judge("AE1", f"kernel law, small batches held out: R² {r2:.3f} (Z kept "
          f"{cell('before replication', 'batch_small', 'r2'):.3f}); predicted >= 0.95",
          r2 >= 0.95)
    w = cell("replication", "random", "within_10pct")
    wb = cell("before replication", "random", "within_10pct")
    judge("AE2", f"random split within ±10 %: {w:.1%} (Z kept {wb:.1%}); predicted >= 93 %",
          w >= 0.93)
    judge("AE3", f"the same {w:.1%}; predicted below issue 14's 95 %", w < 0.95)
    mape = cell("replication", "random", "mape_pct")
    judge("AE4", f"random split MAPE {mape:.2f} % (Z kept "
          f"{cell('before replication', 'random', 'mape_pct'):.2f}); predicted <= 4.2 %",
          mape <= 4.2)
    lines += ["", judge.held_line(), "", "reported, not judged:"]
    lines.append("large batches held out, R² kernel "
                 f"{cell('replication', 'batch_large', 'r2'):.3f} (Z kept "
                 f"{cell('before replication', 'batch_large', 'r2'):.3f})")
    now, then = (d.loc[d["status"].astype(str) == "ok", [*ROW_KEY, "latency_ms"]]
                 for d in (read_dataset(files["rows"]), read_dataset(files["before rows"])))
    pr = now.merge(then, on=ROW_KEY, suffixes=("_now", "_then"))
    ratio = pr["latency_ms_now"] / pr["latency_ms_then"]
    scaled = np.log(ratio / ratio.median())
    lines.append(f"rows paired with {a.before}: {len(pr):,}, median ratio now / then "
                 f"{ratio.median():.3f}, within ±10 % once divided out "
                 f"{float((np.abs(np.expm1(scaled)) <= 0.10).mean()):.1%}")
    write_score(res, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
