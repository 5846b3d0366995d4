"""Judge pre-registration Q (``results/cross_family/sitting_source/cpu_epyc_zen5_2c/alone/PREREGISTRATION.md``)
from ``scripts/alone_source_test.py``'s outputs in ``DIR`` (``summary.csv``, ``agreement.txt``);
writes ``DIR/scores.txt`` and prints it. Times nothing. With ``--replication``: pre-registration
R, the second alone sitting (``.../cpu_epyc_zen5_2c/alone2/PREREGISTRATION.md``); with ``--vgg``:
pre-registration S, beside vgg only (``.../beside_vgg/PREREGISTRATION.md``); with ``--keep-heap``:
pre-registration U, alone with the heap kept (``.../keep_heap/PREREGISTRATION.md``); with both:
pre-registration V, a second such sitting (``.../keep_heap2/PREREGISTRATION.md``).

``python scripts/alone_source_score.py results/cross_family/sitting_source/cpu_epyc_zen5_2c/alone``
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from alone_source_test import BASE, CONTROL, JUDGED, NOISY  # noqa: E402
from probe_source_score import DEPTHWISE, offset_cells, write_judgement  # noqa: E402
from probe_source_test import shared_ok_latency  # noqa: E402

#: Q2 and Q3's least gains over session 12's source, in points.
LEAST_GAIN = {"mobilenetv2": 2.0, "efficientnet": 1.0}


def noisy_mean(m: pd.Series, fam: str, source: str) -> float:
    """Mean of a family's ``offset`` k = 10 cells of ``source`` over the noisy target sets."""
    return sum(m[(ds, fam, source)] for ds in NOISY) / len(NOISY)


def parse_agreement(text: str, who: str = "alone") -> dict[str, float]:
    """The numbers Q4 and Q5 read from ``agreement.txt``: both sittings' halves (median |log
    ratio|, in %), and the judged (``who``: ``alone``, or S's ``beside_vgg``) / beside median
    ratio and median |log| after it (in %); the judged sitting's keys say ``alone`` for all."""
    out = {}
    for name in (who, "beside"):
        m = re.search(rf"halves \({name}\): .*?median_abs_log_ratio=([0-9.eE+-]+|nan)", text)
        if m is None:
            raise SystemExit(f"alone_source_score: no halves check of the {name} sitting")
        out[f"halves_{'alone' if name == who else name}_pct"] = 100 * float(m.group(1))
    m = re.search(rf"ResNet rows {who} / beside, \d+ configs: median ratio ([0-9.]+);.*?"
                  r"median \|log\| after it ([0-9.]+)", text)
    if m is None:
        raise SystemExit(f"alone_source_score: no {who} / beside ratio line")
    out["ratio"], out["log_after_pct"] = float(m.group(1)), 100 * float(m.group(2))
    return out


def judge(summary: pd.DataFrame, agree: dict[str, float]) -> list[tuple[str, str, bool]]:
    """``(id, what was measured, held)`` for Q1-Q7."""
    m = offset_cells(summary, "mape_pct_mean")

    out = []
    q1 = {f: noisy_mean(m, f, JUDGED) - noisy_mean(m, f, CONTROL) for f in DEPTHWISE}
    out.append(("Q1", "alone minus beside, mean over the noisy target sets (points) "
                + ", ".join(f"{f} {v:+.2f}" for f, v in q1.items()),
                all(abs(v) <= 1.5 for v in q1.values())))
    q2 = {f: noisy_mean(m, f, BASE) - noisy_mean(m, f, JUDGED) for f in DEPTHWISE}
    out.append(("Q2", "resnet_s12 minus resnet_alone, mean over the noisy target sets (points) "
                + ", ".join(f"{f} {v:+.2f}" for f, v in q2.items()),
                all(v >= LEAST_GAIN[f] for f, v in q2.items())))
    q3 = {f: m[("beside", f, BASE)] - m[("beside", f, CONTROL)] for f in DEPTHWISE}
    out.append(("Q3", "on beside, resnet_s12 minus resnet_beside (points) "
                + ", ".join(f"{f} {v:+.2f}" for f, v in q3.items()),
                all(v >= LEAST_GAIN[f] for f, v in q3.items())))
    out.append(("Q4", f"alone / beside median ratio {agree['ratio']:.4f}, median |log| after it "
                f"{agree['log_after_pct']:.2f} %",
                0.95 <= agree["ratio"] <= 1.05 and agree["log_after_pct"] <= 6.0))
    out.append(("Q5", f"halves median |log ratio| alone {agree['halves_alone_pct']:.2f} %, "
                f"beside {agree['halves_beside_pct']:.2f} %",
                max(agree["halves_alone_pct"], agree["halves_beside_pct"]) <= 8.0))
    cells = {f: m[("beside", f, JUDGED)] for f in DEPTHWISE}
    out.append(("Q6", "resnet_alone MAPE % on beside " + ", ".join(
        f"{f} {v:.2f}" for f, v in cells.items()), all(v > 10.0 for v in cells.values())))
    v = noisy_mean(m, "vgg", JUDGED) - noisy_mean(m, "vgg", BASE)
    out.append(("Q7", f"vgg: resnet_alone minus resnet_s12, mean over the noisy target sets "
                f"{v:+.2f} points", v >= 1.0))
    return out


def parse_replication(text: str, who: str = "alone") -> dict[str, float]:
    """R's (and S's) extra numbers from ``agreement.txt``: the judged sitting's median ratio to
    the first alone sitting and the signature correlation."""
    out = parse_agreement(text, who)
    m = re.search(rf"ResNet rows {who} / the first alone sitting's, \d+ configs: median ratio "
                  r"([0-9.]+);", text)
    s = re.search(r"signature: corr\(.*?\) (-?[0-9.]+|nan) over", text)
    if m is None or s is None:
        raise SystemExit("alone_source_score: no first-alone ratio or signature line "
                         "(run alone_source_test.py with --sitting)")
    return out | {"alone_ratio": float(m.group(1)), "signature": float(s.group(1))}


def judge_replication(summary: pd.DataFrame, agree: dict[str, float]) -> list[tuple[str, str, bool]]:
    """``(id, what was measured, held)`` for pre-registration R's R1-R5."""
    m = offset_cells(summary, "mape_pct_mean")

    r1 = {f: noisy_mean(m, f, JUDGED) - noisy_mean(m, f, CONTROL) for f in DEPTHWISE}
    r2 = {f: noisy_mean(m, f, JUDGED) - noisy_mean(m, f, "resnet_alone1") for f in DEPTHWISE}
    return [
        ("R1", "alone minus beside, mean over the noisy target sets (points) "
         + ", ".join(f"{f} {v:+.2f}" for f, v in r1.items()), all(v >= 1.0 for v in r1.values())),
        ("R2", "alone minus the first alone sitting, mean over the noisy target sets (points) "
         + ", ".join(f"{f} {v:+.2f}" for f, v in r2.items()),
         all(abs(v) <= 1.5 for v in r2.values())),
        ("R3", f"signature correlation {agree['signature']:.3f}", agree["signature"] >= 0.2),
        ("R4", f"halves median |log ratio| {agree['halves_alone_pct']:.2f} %",
         agree["halves_alone_pct"] <= 8.0),
        ("R5", f"this sitting / the first alone sitting: median ratio {agree['alone_ratio']:.4f}",
         0.93 <= agree["alone_ratio"] <= 1.07),
    ]


def judge_vgg(summary: pd.DataFrame, agree: dict[str, float]) -> list[tuple[str, str, bool]]:
    """``(id, what was measured, held)`` for pre-registration S's S1-S3 (the ResNet configs
    beside vgg configs only, source ``resnet_beside_vgg``)."""
    m = offset_cells(summary, "mape_pct_mean")

    s1 = {f: noisy_mean(m, f, "resnet_beside_vgg") - noisy_mean(m, f, CONTROL) for f in DEPTHWISE}
    return [
        ("S1", "beside vgg minus beside depthwise, mean over the noisy target sets (points) "
         + ", ".join(f"{f} {v:+.2f}" for f, v in s1.items()), all(v >= 1.5 for v in s1.values())),
        ("S2", f"signature correlation {agree['signature']:.3f}", agree["signature"] >= 0.2),
        ("S3", f"halves median |log ratio| {agree['halves_alone_pct']:.2f} %",
         agree["halves_alone_pct"] <= 8.0),
    ]


def reading_vgg(summary: pd.DataFrame) -> str:
    """S's pre-registered reading of the beside-vgg source against the beside-depthwise one."""
    m = offset_cells(summary, "mape_pct_mean")
    gap = [noisy_mean(m, f, "resnet_beside_vgg") - noisy_mean(m, f, CONTROL) for f in DEPTHWISE]
    if all(v >= 1.5 for v in gap):
        return "reading: alone-like -- the depthwise neighbours, not any mixed list, imprint the source"
    if all(v <= 0.5 for v in gap):
        return "reading: beside-like -- any other family in the list imprints the source"
    return "reading: undecided"


def judge_keep_heap(summary: pd.DataFrame, keep: Path) -> list[tuple[str, str, bool]]:
    """``(id, what was measured, held)`` for pre-registration U's U1-U4: M's 400 configs timed
    alone with the heap kept (source ``resnet_<keep's name>``, rows in ``keep``), against sitting
    3's beside source and Q's alone source (``resnet_alone1``); U2 reads the configs that
    page-faulted in pre-registration T (``keep/../faults/faults.parquet``)."""
    kept = f"resnet_{keep.name}"
    from list_context_faults import PAGES_PER_MIB, faulting_configs

    from carb_lib.dataset import read_dataset

    m = offset_cells(summary, "mape_pct_mean")
    passes = pd.read_parquet(keep / "pass_rows.parquet")
    ok = passes[(passes["status"] == "ok") & (passes["family"].astype(str) == "resnet")]
    faults = ok["minor_faults_per_call"].astype(float)
    drop = faulting_configs(pd.read_parquet(keep.parent / "faults" / "faults.parquet"))
    a, b = shared_ok_latency(read_dataset(keep / "resnet_rows.parquet"),
                             read_dataset(keep.parent / "sitting3" / "resnet_rows.parquet"))
    lr = np.log((a / b).to_numpy(float))
    hit = a.index.isin(drop)
    u2 = float(np.median(lr[hit]) - np.median(lr))
    u3 = {f: noisy_mean(m, f, kept) - noisy_mean(m, f, CONTROL) for f in DEPTHWISE}
    u4 = {f: noisy_mean(m, f, "resnet_alone1") - noisy_mean(m, f, kept) for f in DEPTHWISE}
    return [
        ("U1", f"ResNet pass rows with >= {PAGES_PER_MIB} minor faults per call: "
         f"{int((faults >= PAGES_PER_MIB).sum())} of {len(faults)} (max {faults.max():.0f})",
         bool((faults < PAGES_PER_MIB).all()) and len(faults) > 0),
        ("U2", f"the {int(hit.sum())} configs that faulted in T: median log(kept / beside) minus "
         f"all configs' {u2:+.3f}", u2 <= 0.05),
        ("U3", "kept minus beside, mean over the noisy target sets (points) "
         + ", ".join(f"{f} {v:+.2f}" for f, v in u3.items()),
         all(abs(v) <= 1.0 for v in u3.values())),
        ("U4", "Q's alone minus kept, mean over the noisy target sets (points) "
         + ", ".join(f"{f} {v:+.2f}" for f, v in u4.items()), all(v >= 1.5 for v in u4.values())),
    ]


def judge_keep_heap_replication(summary: pd.DataFrame, keep: Path,
                                agree: dict[str, float]) -> list[tuple[str, str, bool]]:
    """``(id, what was measured, held)`` for pre-registration V's V1-V4: a second sitting with
    the heap kept (rows in ``keep``, source ``resnet_<keep's name>``) judged as U1 and U3, the
    mean of its gap and the first kept sitting's (``keep/../keep_heap/summary.csv``), and its
    signature correlation (``agree``, :func:`parse_replication`)."""
    u = {i: (what, ok) for i, what, ok in judge_keep_heap(summary, keep)}
    first = offset_cells(pd.read_csv(keep.parent / "keep_heap" / "summary.csv"), "mape_pct_mean")
    m = offset_cells(summary, "mape_pct_mean")
    v3 = {f: (noisy_mean(m, f, f"resnet_{keep.name}") + noisy_mean(first, f, "resnet_keep_heap"))
          / 2 - noisy_mean(m, f, CONTROL) for f in DEPTHWISE}
    return [
        ("V1", u["U1"][0], u["U1"][1]),
        ("V2", u["U3"][0], u["U3"][1]),
        ("V3", "the two kept sittings' mean minus beside, mean over the noisy target sets "
         "(points) " + ", ".join(f"{f} {v:+.2f}" for f, v in v3.items()),
         all(abs(v) <= 1.0 for v in v3.values())),
        ("V4", f"signature correlation {agree['signature']:.3f}", agree["signature"] < 0.15),
    ]


def reading(rows: list[tuple[str, str, bool]], summary: pd.DataFrame) -> str:
    """The pre-registered reading of Q1: neighbours ruled out, neighbours matter, or undecided."""
    if rows[0][2]:
        return "reading: Q1 held -- the neighbours are ruled out; the host's state stays the candidate"
    m = offset_cells(summary, "mape_pct_mean")
    worse = all(noisy_mean(m, f, JUDGED) > noisy_mean(m, f, CONTROL) for f in DEPTHWISE)
    return ("reading: Q1 missed with resnet_alone worse for both families -- the neighbours matter"
            if worse else "reading: undecided")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--replication", action="store_true",
                    help="judge pre-registration R (a second alone sitting, tested with --sitting)")
    ap.add_argument("--vgg", action="store_true",
                    help="judge pre-registration S (beside vgg only, tested with --sitting beside_vgg)")
    ap.add_argument("--keep-heap", action="store_true",
                    help="judge pre-registration U (alone with the heap kept, tested with "
                         "--sitting keep_heap)")
    args = ap.parse_args()
    for name in ("summary.csv", "agreement.txt"):
        if not (args.dir / name).exists():
            raise SystemExit(f"alone_source_score: no {name} in {args.dir}")
    summary = pd.read_csv(args.dir / "summary.csv")
    text = (args.dir / "agreement.txt").read_text()
    title = "pre-registration {} (results/cross_family/sitting_source/cpu_epyc_zen5_2c/{}/" \
            "PREREGISTRATION.md)"
    if args.keep_heap and args.replication:
        flag = " --keep-heap --replication"
        rows = judge_keep_heap_replication(summary, args.dir,
                                           parse_replication(text, args.dir.name))
        title, line = title.format("V", args.dir.name), None
    elif args.keep_heap:
        flag, rows = " --keep-heap", judge_keep_heap(summary, args.dir)
        title, line = title.format("U", "keep_heap"), None
    elif args.vgg:
        flag, rows = " --vgg", judge_vgg(summary, parse_replication(text, "beside_vgg"))
        title, line = title.format("S", "beside_vgg"), reading_vgg(summary)
    elif args.replication:
        flag, rows = " --replication", judge_replication(summary, parse_replication(text))
        title, line = title.format("R", "alone2"), None
    else:
        flag, rows = "", judge(summary, parse_agreement(text))
        title = title.format("Q", "alone")
        line = reading(rows, summary)
    out = write_judgement(args.dir, f"python scripts/alone_source_score.py {args.dir}{flag}",
                          title, rows)
    print(out, end="")
    if line is not None:  # the pre-registered reading, after the count
        with (args.dir / "scores.txt").open("a") as fh:
            fh.write(line + "\n")
        print(line)


if __name__ == "__main__":
    main()
