"""Two kernel-model variants, paired on held-out operators: the rule that changes a default.

A question names a default of :class:`carb_lib.kernels.KernelModel` and the variant that
would replace it. Both are scored on the same random 20 % hold-outs (``kernels.holdout_check``,
``--seeds`` split seeds, paired) and on the largest-15 % hold-out of
``scripts/kernel_model_choice.py`` (``carb_lib.kernel_checks.paired_variants``). Only
operators are read (no network row); choices are made on the Zen 3's benchmark only.

The rule, fixed before the first run (session 16): the candidate replaces the default if it is
ahead on the random hold-outs by more than one standard error of the paired gap *and* not
behind on the largest operators; otherwise the default stays.

Questions:

* ``target`` (session 16): ``target="roofline"`` (then the default) against ``"flops"``;
  ``features="all"``, ``draws="aligned"``. Session 15's choice script had scored FLOPs 0.5
  below the roofline target on its criterion, within its 3 split seeds' spread. The rule said
  switch, and session 17 made ``target="flops"`` the default.
* ``taps`` (session 17): ``features="all"`` against ``"taps"`` (the log share of a kernel's
  taps inside its input, session 14); ``target="flops"``, ``draws="aligned"``. Session 17's
  re-run of ``scripts/kernel_taps_check.py`` with the FLOPs target put ``taps`` ahead on held-out
  operators on the three CPUs it checks, by less than a split seed's sd on the Zen 3.

* ``faults`` (session 20): ``faults=False`` against ``True`` (a page-fault term per MiB of
  buffers past glibc's 32 MiB mmap threshold, fitted on the operators: README, *Weights
  evicted, then page faults*; the rule said switch, session 20 kept it off: see there);
  ``target="flops"``, ``features="all"``, ``draws="aligned"``.

``python scripts/kernel_paired.py target data/kernels/cpu_epyc_zen3_2c.parquet --seeds 10
--out results/carb/kernel_target_paired``
``python scripts/kernel_paired.py taps data/kernels/cpu_epyc_zen3_2c.parquet --seeds 10
--out results/carb/kernel_taps_paired``
``python scripts/kernel_paired.py faults data/kernels/cpu_epyc_zen3_2c.parquet --seeds 10
--out results/carb/kernel_faults_paired``
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

from carb_lib import kernels
from carb_lib.kernel_checks import paired_variants

#: question -> (the KernelModel parameter compared, default, candidate, the parameters fixed)
QUESTIONS = {
    "target": ("target", "roofline", "flops", {"features": "all", "draws": "aligned"}),
    "taps": ("features", "all", "taps", {"target": "flops", "draws": "aligned"}),
    "faults": ("faults", False, True, {"target": "flops", "features": "all", "draws": "aligned"}),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("question", choices=sorted(QUESTIONS))
    ap.add_argument("bench", type=Path)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    param, base, cand, fixed = QUESTIONS[args.question]
    bench = kernels.read_bench(args.bench).reset_index(drop=True)
    pv = paired_variants(bench, {param: base, **fixed}, {param: cand, **fixed},
                         seeds=args.seeds, names=(str(base), str(cand)))
    text = (f"# python scripts/kernel_paired.py {args.question} {args.bench} --seeds "
            f"{args.seeds} --out {args.out}\n"
            f"{len(bench):,} operators; random 20 % held out, {args.seeds} paired split seeds; "
            f"largest 15 % per kind and precision ({pv.n_largest:,} operators); fixed: "
            f"{fixed}\n\n" + pv.report())
    args.out.mkdir(parents=True, exist_ok=True)
    pv.scores.rename(columns={"variant": param}).to_csv(args.out / "scores.csv", index=False)
    (args.out / f"kernel_{args.question}_paired.txt").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
