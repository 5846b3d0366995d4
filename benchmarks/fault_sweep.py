"""A fault sweep of the ``carb`` command line: several hundred bad-input and hostile cases
across every command, each run in its own scratch folder and classified.

Usage::

    python benchmarks/fault_sweep.py              # every case (about 10 minutes on 2 cores)
    python benchmarks/fault_sweep.py --only merge # cases whose name holds 'merge'
    python benchmarks/fault_sweep.py --fresh      # each case in a fresh process (slower)

What it does:

* copies the checkout (without .git and runs/) to a scratch folder and runs CARB from the
  copy, so that the checkout's ``data/``, ``results/`` and ``figures/`` seen by CARB are the
  copy's; the real checkout is never written (its shipped folders are listed before and after
  the sweep as a check);
* builds small fixtures once (SYNTHETIC rows, two tiny models, a campaign folder, part files,
  a user network);
* runs each case in a fresh empty folder (the fixtures it names are copied in), by default in a
  process forked from one that has imported CARB (a real process: its own exit code, file
  descriptors and working folder; ``--fresh`` starts the ``carb`` script instead); cases
  through a closed pipe (``| head -0``) always run the ``carb`` script;
* hashes every file of the case folder and of the copy's shipped folders before and after,
  and classifies the case:

  PASS  a refusal (exit code 1, one ``error: ...`` line, no traceback, no file changed, nothing
        written), or exit code 0 where the input was fine (every output of the set written,
        pre-existing files kept: replaced only with ``--force``, then as a backup);
  FAIL  with a category: ``data loss`` (a pre-existing file's bytes are gone), ``file
        changed`` (changed on a refusal, or a backup overwritten; its bytes kept elsewhere),
        ``half-written`` (files written by a refused command, or part of an output set),
        ``traceback``, ``internal error`` (exit code 2), ``multi-line error``, ``wrong exit
        code`` (a bad input accepted, or a fine one refused), ``timeout``.

The report goes to ``runs/fault_sweep/`` (``cases.csv``, ``report.md``); the counts are
printed. Nothing is measured for long: a campaign's configs are skipped by a compute cap, other
measuring commands are only given inputs they must refuse (or one tiny config).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHIPPED = ("data", "results", "figures")
FAST = '{"cpu_warmup_iters": 1, "cpu_min_iters": 2, "cpu_min_window_s": 0.01}'
SKIP_ALL = ["--max-gflops", "0.05"]  # a compute cap below every config: nothing is measured
TRACEBACK = "Traceback (most recent call last)"
#: New files a refused command may leave: caches of imported user code, lock files.
BENIGN = ("__pycache__", ".lock", "zoo_cache")


# ============================================================================ the cases
@dataclass
class Case:
    name: str
    args: list[str]
    expect: str = "refuse"  # refuse | ok | any
    setup: Callable[[Path], None] | None = None
    outputs: tuple[str, ...] = ()  # an output set: all of it (exit 0) or none
    pipe: bool = False  # stdout closed at once (| head -0)
    replaces: bool = False  # exit 0 may replace pre-existing files (its own outputs)
    timeout: float = 90.0
    check: Callable[[Path], str | None] | None = None  # extra check after exit 0
    needs: tuple[str, ...] = ()
    as_user: bool = False  # run without root's right to write into any folder


def read_only(name: str = "ro") -> Callable[[Path], None]:
    """A read-only folder ``name`` in the case folder (a case with ``as_user`` runs without
    root's right to write anywhere, so that the folder's mode holds)."""
    def make(d: Path) -> None:
        (d / name).mkdir(parents=True, exist_ok=True)
        (d / name / "kept.txt").write_text("a file of the read-only folder\n")
        os.chmod(d / name, 0o555)
    return make


def ro_case(name: str, args: list[str], setup: Callable[[Path], None] | None = None,
            **kw) -> Case:
    return Case(name, args, "refuse", steps(read_only(), *([setup] if setup else [])),
                as_user=True, **kw)


def text(name: str, content: str | bytes) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        (p.write_bytes if isinstance(content, bytes) else p.write_text)(content)
    return make


def folder(name: str) -> Callable[[Path], None]:
    return lambda d: (d / name).mkdir(parents=True, exist_ok=True)


def steps(*fns: Callable[[Path], None]) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        for f in fns:
            f(d)
    return make


def link(name: str, target: str) -> Callable[[Path], None]:
    return lambda d: os.symlink(target, d / name)


FIX: Path  # the fixtures folder (set in main)


def truncated(name: str, fixture: str) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        raw = (FIX / fixture).read_bytes()
        (d / name).write_bytes(raw[: len(raw) // 2])
    return make


def copy_as(name: str, fixture: str) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        src = FIX / fixture
        (shutil.copytree if src.is_dir() else shutil.copy)(src, d / name)
    return make


def wrong_parquet(name: str) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        import pandas as pd

        pd.DataFrame({"x": [1, 2], "y": ["a", "b"]}).to_parquet(d / name)
    return make


def bad_inputs(stem: str, suffix: str, fixture: str | None) -> list[tuple[str, str,
                                                                           Callable | None]]:
    """(label, path, setup) for the ways an input file can be bad."""
    name = f"{stem}{suffix}"
    out = [("missing", name, None),
           ("empty", name, text(name, b"")),
           ("garbage", name, text(name, b"\x00\xff\xfe not a table \x89PNG\r\n")),
           ("wrong-schema-csv", f"{stem}.csv", text(f"{stem}.csv", "a,b\n1,2\n3,x\n")),
           ("wrong-schema-parquet", f"{stem}.parquet", wrong_parquet(f"{stem}.parquet")),
           ("a-folder", name, folder(name)),
           ("dangling-link", name, link(name, "nowhere/at/all")),
           ("parent-is-a-file", f"afile/{name}", text("afile", "x")),
           ("wrong-extension", f"{stem}.txt", text(f"{stem}.txt", "family,block\nresnet,x\n"))]
    if fixture and fixture.endswith(".parquet"):
        out.append(("truncated-parquet", f"{stem}.parquet", truncated(f"{stem}.parquet",
                                                                      fixture)))
    if fixture and fixture.endswith(".csv"):
        out.append(("header-only", f"{stem}.csv",
                    lambda d: (d / f"{stem}.csv").write_text(
                        (FIX / fixture).read_text().splitlines()[0] + "\n")))
        out.append(("bad-row", f"{stem}.csv", lambda d: (d / f"{stem}.csv").write_text(
            (FIX / fixture).read_text() + "resnet,basic,-3,64,x,224,1,fp32,1000\n")))
    return out


def model_inputs() -> list[tuple[str, str, Callable | None, str]]:
    """(label, model path, setup, expect) for model files."""
    def sidecar(edit: Callable[[dict], None]) -> Callable[[Path], None]:
        def make(d: Path) -> None:
            shutil.copy(FIX / "m.skops", d / "mm.skops")
            meta = json.loads((FIX / "m.skops.json").read_text())
            edit(meta)
            (d / "mm.skops.json").write_text(json.dumps(meta))
        return make

    def swapped(d: Path) -> None:
        shutil.copy(FIX / "m.skops", d / "mm.skops")
        shutil.copy(FIX / "m2.skops.json", d / "mm.skops.json")

    return [
        ("missing", "mm.skops", None, "refuse"),
        ("empty", "mm.skops", text("mm.skops", b""), "refuse"),
        ("garbage", "mm.skops", text("mm.skops", b"PK\x03\x04 not a zip at all"), "refuse"),
        ("truncated", "mm.skops", truncated("mm.skops", "m.skops"), "refuse"),
        ("a-csv", "mm.skops", copy_as("mm.skops", "c.csv"), "refuse"),
        ("a-folder", "mm.skops", folder("mm.skops"), "refuse"),
        ("pickle-untrusted", "m.joblib", None, "refuse"),
        ("sidecar-hash-mismatch", "mm.skops",
         sidecar(lambda m: m.update(model_sha256="0" * 64)), "refuse"),
        ("sidecar-edited", "mm.skops", sidecar(lambda m: m.update(platform="elsewhere")),
         "refuse"),
        ("sidecar-swapped", "mm.skops", swapped, "refuse"),
        ("sidecar-garbage", "mm.skops", steps(copy_as("mm.skops", "m.skops"),
                                              text("mm.skops.json", "{not json")), "refuse"),
        ("sidecar-a-list", "mm.skops", steps(copy_as("mm.skops", "m.skops"),
                                             text("mm.skops.json", "[1, 2]")), "refuse"),
        ("sidecar-missing", "mm.skops", copy_as("mm.skops", "m.skops"), "any"),
        ("zip-of-other-things", "mm.skops", None, "refuse"),
    ]


def _zip_other(d: Path) -> None:
    import zipfile

    with zipfile.ZipFile(d / "mm.skops", "w") as z:
        z.writestr("schema.json", '{"__class__": "os.system", "__module__": "os"}')


SHORT_MODEL = ("missing", "garbage", "pickle-untrusted", "sidecar-hash-mismatch",
               "sidecar-swapped")


def model_cases(cmd: list[str], opt: str, rest: list[str], tag: str,
                full: bool = False) -> list[Case]:
    cases = []
    for label, path, setup, expect in model_inputs():
        if not full and label not in SHORT_MODEL:
            continue
        if label == "zip-of-other-things":
            setup = _zip_other
        cases.append(Case(f"{tag} {opt} model:{label}", [*cmd, opt, path, *rest], expect,
                          setup))
    return cases


SHORT_INPUT = ("missing", "empty", "garbage", "wrong-schema-csv", "wrong-schema-parquet",
               "a-folder")


def input_cases(tag: str, build: Callable[[str], list[str]], stem: str, suffix: str,
                fixture: str | None, expect: str = "refuse", full: bool = False) -> list[Case]:
    return [Case(f"{tag} input:{label}", build(path), expect, setup)
            for label, path, setup in bad_inputs(stem, suffix, fixture)
            if full or label in SHORT_INPUT]


def value_cases(tag: str, base: list[str], option: str, values: list[str],
                expect: str = "refuse", **kw) -> list[Case]:
    return [Case(f"{tag} {option}={v!r}", [*base, option, v], expect, **kw) for v in values]


def output_cases(tag: str, build: Callable[[str, list[str]], list[str]], name: str,
                 siblings: tuple[str, ...] = (), owns: tuple[str, ...] = (),
                 runs_ok: bool = True, full: bool = False) -> list[Case]:
    """The output rule for one output path: an existing user file, --force (backups
    numbered), the shipped folders, read-only and odd places, a blocked member of its set."""
    stem = Path(name).stem
    sset = (name, *siblings)
    cases = [
        Case(f"{tag} out:user-file-no-force", build(name, []), "refuse",
             text(name, "my,own\n1,2\n")),
        Case(f"{tag} out:a-folder", build(name, []), "refuse", folder(name)),
        Case(f"{tag} out:parent-is-a-file", build(f"afile/{name}", []), "refuse",
             text("afile", "x")),
        ro_case(f"{tag} out:read-only-folder", build(f"ro/{name}", [])),
        ro_case(f"{tag} out:in-a-read-only-subfolder", build(f"ro/sub/{name}", ["--force"])),
        Case(f"{tag} out:sysfs", build(f"/sys/carb_sweep/{name}", []), "refuse"),
        Case(f"{tag} out:read-only-folder-force", build(f"/proc/carb_sweep/{name}",
                                                         ["--force"]), "refuse"),
    ]
    for area in SHIPPED:
        for force in ([], ["--force"]) if full else ([["--force"]] if area == "results"
                                                       else [[]]):
            expect = "ok" if area in owns else "refuse"
            if expect == "ok" and not runs_ok:
                continue
            cases.append(Case(f"{tag} out:inside-{area}{'-force' if force else ''}",
                              build(f"@SCRATCH@/{area}/carb_sweep_{name}", force), expect))
    if runs_ok:
        cases += [
            Case(f"{tag} out:fresh", build(name, []), "ok", outputs=sset),
            Case(f"{tag} out:force-keeps-backup", build(name, ["--force"]), "ok",
                 text(name, "my,own\n1,2\n"), outputs=sset, replaces=True,
                 check=backup_holds(f"{name}.bak", "my,own\n1,2\n")),
            Case(f"{tag} out:force-twice-numbered", build(name, ["--force"]), "ok",
                 steps(text(name, "second,own\n"), text(f"{name}.bak", "first,own\n")),
                 outputs=sset, replaces=True, check=backup_holds(f"{name}.bak.1",
                                                                 "second,own\n", exact=True)),
        ]
    for sib in siblings:
        cases.append(Case(f"{tag} out:blocked-member-{sib}", build(name, ["--force"]),
                          "refuse", folder(sib)))
        cases.append(Case(f"{tag} out:user-member-{sib}", build(name, []), "refuse",
                          text(sib, "users own\n")))
    del stem
    return cases


def backup_holds(name: str, content: str, exact: bool = False) -> Callable[[Path], str | None]:
    def check(d: Path) -> str | None:
        p = d / name
        if not p.is_file() or p.read_text() != content:
            return f"{name} does not hold the replaced file"
        return None
    return check


def cases_all() -> list[Case]:  # noqa: PLR0915 - one list of cases
    C: list[Case] = []
    commands = ["fit", "predict", "check", "screen", "profile", "audit", "noise", "merge",
                "kernels", "transfer", "convert-help", "publish", "reproduce", "readme",
                "zoo", "zoo list", "zoo predict", "zoo configs", "zoo screen", "zoo rss"]
    # ----------------------------------------------------------- parse errors and help
    C.append(Case("carb --help", ["--help"], "ok"))
    C.append(Case("carb alone shows help", [], "any"))
    for c in commands:
        C.append(Case(f"{c} --help", [*c.split(), "--help"], "ok"))
        C.append(Case(f"{c} --no-such-option", [*c.split(), "--no-such-option"], "refuse"))
    for args in (["nope"], ["zoo", "nope"], ["fit", "--data"], ["fit", "--out"],
                 ["predict", "--model"], ["fit", "--quick=maybe", "--data", "d.parquet"],
                 ["--debug", "nope"], ["--version"], ["merge", "a"], ["merge", "a", "b", "c"],
                 ["audit"], ["publish"], ["zoo", "predict"], ["screen", "--k"],
                 ["screen", "--model", "m.skops", "--k", "--out"], ["fit", "--data", ""],
                 ["predict", "--model", "", "--out", "p.csv"], ["-x"], ["--", "fit"],
                 ["fit", "--data", "d.parquet", "--out", "x.skops", "--feature-set"]):
        C.append(Case(f"parse {' '.join(args)!r}", args, "any" if args == [] else "refuse"))
    # ------------------------------------------------------------------ closed pipes
    for args in (["--help"], ["zoo", "list"], ["fit", "--help"], ["zoo", "--help"],
                 ["predict", "--model", "m.skops", "--configs", "c.csv", "--out", "p.csv"],
                 ["screen", "--model", "m.skops", "--candidates", "c.csv", "--out", "s.csv",
                  "--no-quality"],
                 ["merge", "parts", "dm.parquet"],
                 ["zoo", "predict", "--model", "m.skops", "--networks", "resnet18",
                  "--resolutions", "32"],
                 ["predict", "--model", "missing.skops", "--configs", "c.csv", "--out",
                  "p.csv"]):
        C.append(Case(f"pipe {' '.join(args)[:60]!r} | head -0", args,
                      "refuse" if "missing.skops" in args else "ok", pipe=True,
                      replaces=True, outputs=tuple(o for o in ("p.csv", "s.csv", "dm.parquet")
                                                   if o in args and "missing.skops" not in args)))
    # -------------------------------------------------------------------------- fit
    fit = ["fit", "--quick"]
    C += input_cases("fit --data", lambda p: [*fit, "--data", p, "--out", "new.skops"],
                     "dd", ".parquet", "d.parquet", full=True)
    C += input_cases("fit --data csv", lambda p: [*fit, "--data", p, "--out", "new.skops"],
                     "dd", ".csv", "d.csv")
    base = [*fit, "--data", "d.parquet", "--out", "new.skops"]
    C += value_cases("fit", base, "--n-jobs", ["abc", "1.5", ""])
    C += value_cases("fit", base, "--n-jobs", ["0", "-3"], "any")
    C += value_cases("fit", base, "--feature-set", ["bogus", "", "static+telemetry"])
    C += value_cases("fit", base, "--platform", ["nope", ""])
    C += value_cases("fit", base, "--preset", ["nope", ""])
    C += value_cases("fit", base, "--latency-law", ["nope", "kernel"])
    for opt in ("--kernel-bench", "--cache-probe"):
        C += input_cases(f"fit {opt}", lambda p, o=opt: [*base, o, p], "kb", ".parquet",
                         "d.parquet")
    C.append(Case("fit --data twice same file", [*fit, "--data", "d.parquet", "--data",
                                                 "d.parquet", "--out", "new.skops"], "any"))
    C.append(Case("fit --out same as --data", [*fit, "--data", "d.parquet", "--out",
                                               "d.parquet"], "refuse"))
    C.append(Case("fit --out same as --data --force", [*fit, "--data", "d.parquet", "--out",
                                                       "d.parquet", "--force"], "refuse"))
    C.append(Case("fit --out through a link to --data", [*fit, "--data", "d.parquet", "--out",
                                                         "ln.skops"], "refuse",
                  link("ln.skops", "d.parquet")))
    C.append(Case("fit data with a NaN latency", [*fit, "--data", "nan.csv", "--out",
                                                  "new.skops"], "refuse",
                  lambda d: _edit_csv(d / "nan.csv", "latency_ms", "inf")))
    C.append(Case("fit data with a negative cost", [*fit, "--data", "neg.csv", "--out",
                                                    "new.skops"], "refuse",
                  lambda d: _edit_csv(d / "neg.csv", "latency_ms", "-2")))
    C.append(Case("fit data with a text cost", [*fit, "--data", "txt.csv", "--out",
                                                "new.skops"], "refuse",
                  lambda d: _edit_csv(d / "txt.csv", "latency_ms", "fast")))
    C.append(Case("fit data with duplicated rows", [*fit, "--data", "dup.csv", "--out",
                                                    "new.skops"], "refuse",
                  lambda d: (d / "dup.csv").write_text(
                      (FIX / "d.csv").read_text()
                      + "\n".join((FIX / "d.csv").read_text().splitlines()[1:4]) + "\n")))
    C += output_cases("fit", lambda o, f: [*fit, "--data", "d.parquet", "--out", o, *f],
                      "new.skops", siblings=("new.skops.json",), runs_ok=False)
    C.append(Case("fit out:fresh", [*fit, "--data", "d.parquet", "--out", "new.skops"], "ok",
                  outputs=("new.skops", "new.skops.json")))
    C.append(Case("fit out:force-twice-numbered", [*fit, "--data", "d.parquet", "--out",
                                                   "new.skops", "--force"], "ok",
                  steps(text("new.skops", "second"), text("new.skops.bak", "first")),
                  outputs=("new.skops", "new.skops.json"), replaces=True,
                  check=backup_holds("new.skops.bak.1", "second")))
    # ---------------------------------------------------------------------- predict
    pr = ["predict", "--model", "m.skops", "--configs", "c.csv", "--out", "p.csv"]
    C += model_cases(["predict"], "--model", ["--configs", "c.csv", "--out", "p.csv"],
                     "predict", full=True)
    C.append(Case("predict pickle model with --trust", ["predict", "--model", "m.joblib",
                                                        "--configs", "c.csv", "--out",
                                                        "p.csv", "--trust"], "any",
                  outputs=("p.csv",)))
    C += input_cases("predict --configs", lambda p: ["predict", "--model", "m.skops",
                                                     "--configs", p, "--out", "p.csv"],
                     "cc", ".csv", "c.csv", full=True)
    C += input_cases("predict --configs parquet", lambda p: ["predict", "--model", "m.skops",
                                                             "--configs", p, "--out", "p.csv"],
                     "cc", ".parquet", "d.parquet")
    C += value_cases("predict", pr, "--coverage", ["0", "1", "1.5", "-0.1", "nan", "inf",
                                                   "abc", "0.9999999"])
    C += value_cases("predict", pr, "--calibrate-on-query", ["-1", "abc"])
    C.append(Case("predict neither --configs nor --module", ["predict", "--model", "m.skops",
                                                             "--out", "p.csv"], "refuse"))
    C.append(Case("predict --out same as --configs", ["predict", "--model", "m.skops",
                                                      "--configs", "c.csv", "--out", "c.csv",
                                                      "--force"], "refuse"))
    C.append(Case("predict --out is the model", ["predict", "--model", "m.skops", "--configs",
                                                 "c.csv", "--out", "m.skops", "--force"],
                  "refuse"))
    C.append(Case("predict --out .txt", [*pr[:-1], "p.txt"], "refuse"))
    C += output_cases("predict", lambda o, f: [*pr[:-1], o, *f], "p.csv")
    mod = ["predict", "--model", "m.skops", "--out", "p.csv", "--module"]
    for label, spec, extra, expect in [
            ("good", "net.py:tiny", ["--input-shape", "3,16,16"], "ok"),
            ("missing file", "nothere.py:tiny", ["--input-shape", "3,16,16"], "refuse"),
            ("missing function", "net.py:nope", ["--input-shape", "3,16,16"], "refuse"),
            ("no colon", "net.py", ["--input-shape", "3,16,16"], "refuse"),
            ("not a network", "net.py:not_a_net", ["--input-shape", "3,16,16"], "refuse"),
            ("raises", "net.py:raises", ["--input-shape", "3,16,16"], "refuse"),
            ("calls sys.exit", "net.py:exits", ["--input-shape", "3,16,16"], "refuse"),
            ("calls sys.exit(0)", "net.py:exits0", ["--input-shape", "3,16,16"], "refuse"),
            ("syntax error", "bad.py:f", ["--input-shape", "3,16,16"], "refuse"),
            ("wrong input shape", "net.py:tiny", ["--input-shape", "5,16,16"], "refuse"),
            ("shape text", "net.py:tiny", ["--input-shape", "abc"], "refuse"),
            ("shape zero", "net.py:tiny", ["--input-shape", "3,0,16"], "refuse"),
            ("shape negative", "net.py:tiny", ["--input-shape", "3,-16,16"], "refuse"),
            ("no shape", "net.py:tiny", [], "refuse"),
            ("kwargs not json", "net.py:tiny", ["--input-shape", "3,16,16", "--module-kwargs",
                                                "{bad"], "refuse"),
            ("kwargs a list", "net.py:tiny", ["--input-shape", "3,16,16", "--module-kwargs",
                                              "[1]"], "refuse"),
            ("kwargs unknown", "net.py:tiny", ["--input-shape", "3,16,16", "--module-kwargs",
                                               '{"zzz": 1}'], "refuse"),
            ("batches zero", "net.py:tiny", ["--input-shape", "3,16,16", "--batches", "0"],
             "refuse"),
            ("batches text", "net.py:tiny", ["--input-shape", "3,16,16", "--batches", "a,b"],
             "refuse"),
            ("batches empty", "net.py:tiny", ["--input-shape", "3,16,16", "--batches", ""],
             "refuse"),
            ("precision fp8", "net.py:tiny", ["--input-shape", "3,16,16", "--precisions",
                                              "fp8"], "refuse"),
            ("timeout zero", "net.py:tiny", ["--input-shape", "3,16,16", "--timeout-s", "0"],
             "refuse"),
            ("timeout nan", "net.py:tiny", ["--input-shape", "3,16,16", "--timeout-s", "nan"],
             "refuse"),
            ("hangs past timeout", "net.py:hangs", ["--input-shape", "3,16,16", "--timeout-s",
                                                    "2"], "refuse"),
            ("module and configs", "net.py:tiny", ["--input-shape", "3,16,16", "--configs",
                                                   "c.csv"], "refuse"),
            ("stdlib function", "os:getcwd", ["--input-shape", "3,16,16"], "refuse"),
            ("no such package", "nopkg.sub:f", ["--input-shape", "3,16,16"], "refuse")]:
        C.append(Case(f"predict --module {label}", [*mod, spec, *extra], expect,
                      outputs=("p.csv",) if expect == "ok" else (), needs=("net.py", "bad.py"),
                      timeout=60))
    # ------------------------------------------------------------------------ check
    ck = ["check", "--model", "m.skops", "--configs", "c.csv", "--k", "1", "--budget-s", "2"]
    C += model_cases(["check"], "--model", ["--configs", "c.csv", "--k", "1"], "check")
    C += input_cases("check --configs", lambda p: ["check", "--model", "m.skops", "--configs",
                                                   p, "--k", "1"], "cc", ".csv", "c.csv")
    C += value_cases("check", ck, "--k", ["0", "-1", "abc"])
    C += value_cases("check", ck, "--budget-s", ["0", "-1", "nan", "inf", "abc"])
    C += value_cases("check", ck, "--repeat", ["-1", "abc"])
    C += value_cases("check", ck, "--coverage", ["0", "1", "2", "nan"])
    C.append(Case("check --out user file", [*ck, "--out", "mine.csv"], "refuse",
                  text("mine.csv", "my,own\n")))
    C.append(Case("check --out inside data", [*ck, "--out", "@SCRATCH@/data/x.csv"], "refuse"))
    C.append(ro_case("check --out in a read-only folder", [*ck, "--out", "ro/x.csv"]))
    # ----------------------------------------------------------------------- screen
    sc = ["screen", "--model", "m.skops", "--candidates", "c.csv", "--no-quality", "--out",
          "s.csv"]
    sset = ("s.csv", "s_front.csv", "s_summary.json")
    C += model_cases(["screen"], "--model", sc[3:], "screen")
    C += model_cases(["screen", "--model", "m.skops"], "--model-b", sc[3:], "screen")
    C += input_cases("screen --candidates", lambda p: [*sc[:3], "--candidates", p,
                                                       *sc[5:]], "cc", ".csv", "c.csv",
                     full=True)
    C += input_cases("screen --measured", lambda p: [*sc, "--measured", p], "mm", ".parquet",
                     "d.parquet")
    C += value_cases("screen", sc, "--top-n", ["0", "-1", "abc"])
    C += value_cases("screen", sc, "--rank-by", ["nope", ""])
    C += value_cases("screen", sc, "--seed", ["abc"])
    C += value_cases("screen", sc, "--budget", [
        "latency_ms", "latency_ms<=abc", "nope<=1", "latency_ms<=-1", "latency_ms<=nan",
        "latency_ms<=inf", "", "<=3", "latency_ms==3", "latency_ms<=1e999"])
    # a zero limit is allowed (Budget.parse: finite and >= 0): it eliminates every candidate
    C += value_cases("screen", sc, "--budget", ["latency_ms<=0"], "any")
    C += value_cases("screen", sc, "--objective", ["nope", "max:nope", "", "min:"])
    C += value_cases("screen", [*sc[:4], "c.csv", *sc[6:]], "--quality", ["nope"])
    C += value_cases("screen", sc, "--coverage", ["0", "1", "-1", "nan", "abc"])
    C += value_cases("screen", sc, "--k", ["0", "-1", "abc", "1.5"])
    C += value_cases("screen", sc, "--method", ["nope", ""])
    C += value_cases("screen", sc, "--partition-size", ["0", "-1"], "any")
    C += value_cases("screen", sc, "--cluster-timeout-s", ["-1", "nan"], "any")
    C.append(Case("screen --cluster unreachable", [*sc, "--cluster", "tcp://127.0.0.1:9",
                                                   "--cluster-timeout-s", "1"], "refuse"))
    C.append(Case("screen --cluster garbage", [*sc, "--cluster", "::nope::",
                                               "--cluster-timeout-s", "1"], "refuse"))
    C.append(Case("screen --validate --device tpu", [*sc, "--validate", "--device", "tpu"],
                  "refuse"))
    C.append(Case("screen --budget twice", [*sc, "--budget", "latency_ms<=5", "--budget",
                                            "latency_ms<=5"], "refuse"))
    for ext in ("extended", "extended-dense"):
        base_e = ["screen", "--model", "m.skops", "--candidates", ext, "--no-quality",
                  "--out", "s.csv"]
        C += value_cases(f"screen {ext}", base_e, "--n-extended", ["0", "-1", "abc",
                                                                   "999999999999"])
    C += value_cases("screen", sc, "--candidates", ["nope", "grid.csv"])
    C.append(Case("screen --fig-dir inside figures", [*sc, "--fig-dir", "@SCRATCH@/figures"],
                  "refuse"))
    C.append(Case("screen --fig-dir a file", [*sc, "--fig-dir", "afile"], "refuse",
                  text("afile", "x")))
    C.append(ro_case("screen --fig-dir read-only", [*sc, "--fig-dir", "ro"]))
    C.append(ro_case("screen --fig-dir in a read-only folder", [*sc, "--fig-dir", "ro/figs"]))
    C.append(Case("screen --out same as --candidates", [*sc[:-1], "c.csv", "--force"],
                  "refuse"))
    C.append(Case("screen --out same as --measured", [*sc[:-1], "d.csv", "--measured",
                                                      "d.csv", "--force"], "refuse"))
    C += output_cases("screen", lambda o, f: [*sc[:-1], o, *f], "s.csv",
                      siblings=("s_front.csv", "s_summary.json"), full=True)
    C.append(Case("screen own output rerun", sc, "ok", lambda d: _run_pre(d, sc),
                  outputs=sset, replaces=True))
    # ---------------------------------------------------------------------- profile
    pf = ["profile", "--out", "camp_new", "--n-sample", "1", "--threads", "1", "--no-progress",
          "--protocol", FAST, *SKIP_ALL]
    C.append(Case("profile fresh campaign (all skipped by the cap)", pf, "ok",
                  outputs=("camp_new/protocol.json",)))
    C += value_cases("profile", pf, "--device", ["tpu", "cuda:abc", "cuda:-1", ""])
    C += value_cases("profile", pf, "--n-sample", ["0", "-1", "abc"])
    C += value_cases("profile", pf, "--seed", ["abc"])
    C += value_cases("profile", pf, "--shard", ["5/4", "0/0", "abc", "1/0", "-1/2", "1/2/3",
                                                "0/1.5"])
    C += value_cases("profile", pf, "--time-budget-s", ["0", "-1", "nan", "abc"])
    C += value_cases("profile", pf, "--threads", ["0", "-1", "999", "abc"])
    C += value_cases("profile", pf, "--ref-every", ["-1", "abc"])
    C += value_cases("profile", pf, "--timeout-s", ["0", "-1", "nan", "inf"])
    C += value_cases("profile", pf, "--cooldown-s", ["-1", "nan"])
    C += value_cases("profile", pf, "--passes", ["0", "-1"])
    C += value_cases("profile", pf, "--max-tries", ["0", "-1"], "any")
    C += value_cases("profile", pf, "--chunk-size", ["0", "-1"], "any")
    C += value_cases("profile", pf, "--platform", ["", "a/b", "../x", "x" * 300])
    C += value_cases("profile", pf[:-2], "--max-gflops", ["-1", "nan", "abc"])
    C += value_cases("profile", pf, "--protocol", [
        "{not json", "[]", '{"n_windows": 0}', '{"n_windows": NaN}', '{"nope": 1}',
        '{"n_windows": "3"}', '{"max_windows": 1, "n_windows": 3}', '{"min_cpu_share": 2}',
        '{"cpu_min_window_s": -1}', '{"n_windows": 1e400}', "missing.json", "null", '""',
        '{"threads": 7}', '{"timeout_s": Infinity}'])
    C += input_cases("profile --protocol file", lambda p: [*pf[:-4], "--protocol", p,
                                                           *SKIP_ALL], "proto", ".json", None)
    C += input_cases("profile --configs", lambda p: [*pf, "--configs", p], "cc", ".csv",
                     "c.csv")
    C.append(Case("profile --cluster unreachable", [*pf, "--cluster", "tcp://127.0.0.1:9",
                                                    "--cluster-timeout-s", "1"], "refuse"))
    camp = ["profile", "--out", "camp", "--n-sample", "1", "--no-progress", *SKIP_ALL]
    for label, extra, expect in [
            ("same protocol", ["--threads", "1", "--protocol", FAST], "ok"),
            ("another protocol", ["--threads", "1", "--protocol",
                                  '{"cpu_min_window_s": 0.5}'], "refuse"),
            ("another thread count", ["--threads", "2", "--protocol", FAST], "refuse"),
            ("another platform", ["--threads", "1", "--protocol", FAST, "--platform",
                                  "other_cpu_1t"], "refuse"),
            ("only the caps changed", ["--threads", "1", "--protocol", FAST, "--timeout-s",
                                       "10", "--cooldown-s", "0"], "ok"),
            ("default protocol", ["--threads", "1"], "refuse")]:
        C.append(Case(f"profile resume under {label}", [*camp, *extra], expect,
                      replaces=expect == "ok"))
    for label, content in [("garbage", "{not json"), ("empty", ""), ("a list", "[1]"),
                           ("wrong types", '{"n_windows": "x", "threads": "y"}')]:
        C.append(Case(f"profile resume with protocol.json {label}",
                      [*camp, "--threads", "1", "--protocol", FAST], "refuse",
                      lambda d, c=content: (d / "camp" / "protocol.json").write_text(c)))
    C.append(Case("profile resume with a garbage part", [*camp, "--threads", "1",
                                                         "--protocol", FAST], "refuse",
                  lambda d: (d / "camp" / "results-bad-000000.parquet").write_bytes(b"junk")))
    C.append(Case("profile --out is a file", [*pf[:1], "--out", "afile", *pf[3:]], "refuse",
                  text("afile", "x")))
    for area in SHIPPED:
        C.append(Case(f"profile --out inside {area}", [*pf[:1], "--out",
                                                      f"@SCRATCH@/{area}/camp", *pf[3:]],
                      "refuse"))
    C.append(ro_case("profile --out in a read-only folder", [*pf[:1], "--out", "ro/camp",
                                                             *pf[3:]]))
    C.append(ro_case("profile --out a read-only folder", [*pf[:1], "--out", "ro", *pf[3:]]))
    C.append(Case("profile --out read-only", [*pf[:1], "--out", "/sys/carb_camp", *pf[3:]],
                  "refuse"))
    C.append(Case("profile --out inside a parts folder's file", [*pf[:1], "--out",
                                                                 "d.parquet/camp", *pf[3:]],
                  "refuse", needs=("d.parquet",)))
    C.append(Case("profile --module missing shape", ["profile", "--out", "cm", "--module",
                                                     "net.py:tiny", "--threads", "1",
                                                     "--no-progress"], "refuse",
                  needs=("net.py",)))
    # ------------------------------------------------------------------------ audit
    au = ["audit", "aud.parquet", "--n", "1", "--out", "aud_out", "--no-progress"]
    C += input_cases("audit dataset", lambda p: ["audit", p, "--n", "1", "--out", "aud_out",
                                                 "--no-progress"], "ds", ".parquet",
                     "d.parquet")
    C += value_cases("audit", au, "--n", ["0", "-1", "abc"])
    C += value_cases("audit", au, "--seed", ["abc"])
    C += value_cases("audit", au, "--device", ["tpu", "cuda:x"])
    C.append(Case("audit rows of an unknown CPU", ["audit", "d.parquet", "--n", "1", "--out",
                                                   "aud_out", "--no-progress"], "refuse"))
    C.append(Case("audit rows of another CPU", ["audit", "other.parquet", "--n", "1", "--out",
                                                "aud_out", "--no-progress"], "refuse",
                  lambda d: _cpu_rows(d / "other.parquet", "SomeOtherCPU family 1")))
    for area in SHIPPED:
        C.append(Case(f"audit --out inside {area}", [*au[:4], "--out",
                                                    f"@SCRATCH@/{area}/aud", *au[6:]],
                      "refuse"))
    C.append(Case("audit --out is a file", [*au[:4], "--out", "afile", *au[6:]], "refuse",
                  text("afile", "x")))
    C.append(ro_case("audit --out a read-only folder", [*au[:4], "--out", "ro", *au[6:]]))
    C.append(Case("audit --out read-only", [*au[:4], "--out", "/sys/carb_aud", *au[6:]],
                  "refuse"))
    C.append(Case("audit --out holds user tables", au, "refuse",
                  lambda d: _user_tables(d / "aud_out")))
    # ------------------------------------------------------------------------ noise
    nz = ["noise", "--out", "nz", "--n-configs", "1", "--repeats", "2", "--threads", "1",
          "--in-process"]
    C += value_cases("noise", nz, "--n-configs", ["0", "-1", "abc"])
    C += value_cases("noise", nz, "--repeats", ["0", "1", "-1", "abc"])
    C += value_cases("noise", nz, "--mode", ["nope", ""])
    C += value_cases("noise", nz, "--threads", ["0", "999", "abc"])
    C += value_cases("noise", nz, "--spread-gap-s", ["-1", "nan"])
    C += value_cases("noise", nz, "--max-gflops", ["0", "-1", "nan"])
    C += value_cases("noise", nz, "--device", ["tpu"])
    C += value_cases("noise", nz, "--platform", ["a/b", "../x"])
    C += input_cases("noise --configs", lambda p: [*nz, "--configs", p], "cc", ".csv",
                     "c.csv")
    for area in SHIPPED:
        C.append(Case(f"noise --out inside {area}", [nz[0], "--out", f"@SCRATCH@/{area}/nz",
                                                    *nz[3:]], "refuse"))
    C.append(Case("noise --out holds user tables", nz, "refuse",
                  lambda d: _user_tables(d / "nz", ("noise_rows.parquet", "noise_cv.csv"))))
    C.append(ro_case("noise --out a read-only folder", [nz[0], "--out", "ro", *nz[3:]]))
    C.append(Case("noise --out is a file", [nz[0], "--out", "afile", *nz[3:]], "refuse",
                  text("afile", "x")))
    # ------------------------------------------------------------------------ merge
    C.append(Case("merge fresh", ["merge", "parts", "dm.parquet"], "ok",
                  outputs=("dm.parquet",)))
    C.append(Case("merge extend own output", ["merge", "parts", "dm.parquet"], "ok",
                  lambda d: _run_pre(d, ["merge", "parts", "dm.parquet"]), replaces=True,
                  outputs=("dm.parquet",)))
    for label, path, setup in [("missing", "nope", None), ("empty folder", "ef", folder("ef")),
                               ("a file", "afile", text("afile", "x")),
                               ("garbage part", "gp", text("gp/results-x-000000.parquet",
                                                           b"junk")),
                               ("wrong-schema part", "wp", lambda d: (
                                   folder("wp")(d), wrong_parquet(
                                       "wp/results-x-000000.parquet")(d))),
                               ("empty part", "ep", text("ep/results-x-000000.parquet", b"")),
                               ("truncated part", "tp", lambda d: _trunc_part(d, "tp"))]:
        C.append(Case(f"merge parts:{label}", ["merge", path, "dm.parquet"], "refuse", setup))
    C += input_cases("merge --existing", lambda p: ["merge", "parts", "dm.parquet",
                                                    "--existing", p], "ex", ".parquet",
                     "d.parquet")
    C.append(Case("merge OUT a user table", ["merge", "parts", "dm.parquet"], "refuse",
                  wrong_parquet("dm.parquet")))
    C.append(Case("merge OUT garbage", ["merge", "parts", "dm.parquet"], "refuse",
                  text("dm.parquet", b"junk")))
    C.append(Case("merge OUT garbage --force", ["merge", "parts", "dm.parquet", "--force"],
                  "ok", text("dm.parquet", b"junk"), replaces=True, outputs=("dm.parquet",),
                  check=backup_holds("dm.parquet.bak", "junk")))
    C.append(Case("merge OUT inside parts", ["merge", "parts", "parts/x.parquet"], "refuse"))
    C.append(Case("merge OUT is parts", ["merge", "parts", "parts"], "refuse"))
    C.append(Case("merge OUT a folder", ["merge", "parts", "of"], "refuse", folder("of")))
    C.append(Case("merge OUT read-only", ["merge", "parts", "/sys/carb_d.parquet"], "refuse"))
    C.append(ro_case("merge OUT in a read-only folder", ["merge", "parts", "ro/d.parquet"]))
    C.append(ro_case("merge --reference-out in a read-only folder",
                     ["merge", "parts", "dm.parquet", "--reference-out", "ro/r.parquet"]))
    C.append(Case("merge a read-only campaign folder", ["merge", "rp", "dm.parquet"], "ok",
                  lambda d: (shutil.copytree(FIX / "parts", d / "rp"), os.chmod(d / "rp", 0o555)),
                  outputs=("dm.parquet",), as_user=True))
    C.append(Case("merge OUT .csv", ["merge", "parts", "dm.csv"], "any", outputs=()))
    C.append(Case("merge OUT in scratch data (owned)", ["merge", "parts",
                                                       "@SCRATCH@/data/carb_sweep.parquet"],
                  "ok", outputs=()))
    for area in ("results", "figures"):
        C.append(Case(f"merge OUT inside {area}", ["merge", "parts",
                                                  f"@SCRATCH@/{area}/carb_sweep.parquet"],
                      "refuse"))
    ref = ["merge", "parts", "dm.parquet", "--reference-out"]
    C.append(Case("merge --reference-out fresh", [*ref, "ref.parquet"], "any"))
    C.append(Case("merge --reference-out a user table", [*ref, "ref.parquet"], "refuse",
                  wrong_parquet("ref.parquet")))
    C.append(Case("merge --reference-out same as OUT", [*ref, "dm.parquet"], "refuse"))
    C.append(Case("merge --reference-out inside parts", [*ref, "parts/r.parquet"], "refuse"))
    # as root a folder of /sys passes the permission check; with no reference rows nothing is
    # written there, so exit 0 is right then
    C.append(Case("merge --reference-out read-only", [*ref, "/sys/r.parquet"],
                  "any" if os.geteuid() == 0 else "refuse"))
    C.append(Case("merge --reference-out inside results", [*ref, "@SCRATCH@/results/r.pq"],
                  "refuse"))
    C.append(Case("merge mixed platforms", ["merge", "mixed", "dm.parquet"], "refuse",
                  lambda d: _mixed_parts(d / "mixed")))
    # ---------------------------------------------------------------------- kernels
    kn = ["kernels", "--out", "k.parquet", "--n", "1", "--no-anchors", "--no-cache-probe",
          "--no-progress", "--threads", "1"]
    C += value_cases("kernels", kn, "--n", ["0", "-1", "abc"])
    C += value_cases("kernels", kn, "--seed", ["abc"])
    C += value_cases("kernels", kn, "--sampler", ["0", "99", "abc"])
    C += value_cases("kernels", kn, "--threads", ["0", "999", "abc"])
    C += value_cases("kernels", kn, "--anchor-every", ["-1", "abc"])
    C += value_cases("kernels", kn, "--campaigns", ["0", "-1"], "any")
    C += value_cases("kernels", kn, "--platform", ["a/b", "../x"])
    C.append(Case("kernels --out existing without --append", kn, "refuse",
                  copy_as("k.parquet", "d.parquet")))
    C.append(Case("kernels --append to a user table", [*kn, "--append"], "refuse",
                  wrong_parquet("k.parquet")))
    C.append(Case("kernels --append to garbage", [*kn, "--append"], "refuse",
                  text("k.parquet", b"junk")))
    C.append(Case("kernels --out a folder", kn, "refuse", folder("k.parquet")))
    C.append(ro_case("kernels --out in a read-only folder", [kn[0], "--out", "ro/k.parquet",
                                                             *kn[3:]]))
    C.append(Case("kernels --out read-only", [kn[0], "--out", "/sys/k.parquet", *kn[3:]],
                  "refuse"))
    for area in ("results", "figures"):
        C.append(Case(f"kernels --out inside {area}", [kn[0], "--out",
                                                      f"@SCRATCH@/{area}/k.parquet", *kn[3:]],
                      "refuse"))
    # --------------------------------------------------------------------- transfer
    tr = ["transfer", "--source", "d.parquet", "--target-samples", "t.parquet", "--query",
          "c.csv", "--out", "tr.csv"]
    C.append(Case("transfer fine", tr, "ok", outputs=("tr.csv",)))
    C += input_cases("transfer --source", lambda p: [tr[0], "--source", p, *tr[3:]], "src",
                     ".parquet", "d.parquet")
    C += input_cases("transfer --target-samples", lambda p: [*tr[:3], "--target-samples", p,
                                                             *tr[5:]], "tgt", ".parquet",
                     "t.parquet")
    C += input_cases("transfer --query", lambda p: [*tr[:5], "--query", p, *tr[7:]], "q",
                     ".csv", "c.csv")
    C += input_cases("transfer --kernels", lambda p: [*tr[:3], "--kernels", p, *tr[5:]], "kb",
                     ".parquet", "d.parquet")
    C += value_cases("transfer", tr, "--target", ["nope", ""])
    C += value_cases("transfer", tr, "--method", ["nope", ""])
    C.append(Case("transfer neither samples nor kernels", [*tr[:3], *tr[5:]], "refuse"))
    C.append(Case("transfer target = source", [*tr[:3], "--target-samples", "d.parquet",
                                               *tr[5:]], "refuse"))
    C += output_cases("transfer", lambda o, f: [*tr[:-1], o, *f], "tr.csv")
    # ----------------------------------------------------------------- convert-help
    ch = ["convert-help", "--out", "help.parquet"]
    for label, path, setup in [("missing", "nope", None), ("empty", "hf", folder("hf")),
                               ("a file", "afile", text("afile", "x")),
                               ("garbage files", "hg", steps(
                                   text("hg/latency_x.pt", b"junk"),
                                   text("hg/fpga.pt", b"junk"))),
                               ("pickle with code", "hp", _pickle_pt)]:
        C.append(Case(f"convert-help --folder {label}", [*ch, "--folder", path], "refuse",
                      setup))
    for area in ("results", "figures"):
        C.append(Case(f"convert-help --out inside {area}",
                      ["convert-help", "--folder", "hf", "--out",
                       f"@SCRATCH@/{area}/help.parquet"], "refuse", folder("hf")))
    C.append(Case("convert-help --out a user file", [*ch, "--folder", "hf"], "refuse",
                  steps(folder("hf"), text("help.parquet", "mine"))))
    # ---------------------------------------------------------------------- publish
    pb = ["publish", "run"]
    for label, path, setup in [("missing", "nope", None), ("empty", "er", folder("er")),
                               ("a file", "afile", text("afile", "x")),
                               ("garbage summary", "gr", text("gr/summary.json", "{bad")),
                               ("summary a list", "lr", text("lr/summary.json", "[]")),
                               ("notebook garbage", "nr", steps(
                                   text("nr/summary.json", '{"profile": "x", "runs": []}'),
                                   text("nr/01_x.ipynb", "{bad")))]:
        C.append(Case(f"publish run:{label}", ["publish", path, "--dest", "pages"], "refuse",
                      setup))
    C.append(Case("publish --dest the run folder", [*pb, "--dest", "run"], "refuse",
                  _fake_run))
    C.append(Case("publish --dest inside the run", [*pb, "--dest", "run/pages"], "refuse",
                  _fake_run))
    C.append(Case("publish --dest with a user html", [*pb, "--dest", "pages"], "refuse",
                  steps(_fake_run, text("pages/mine.html", "<p>mine</p>"))))
    for area in SHIPPED:
        C.append(Case(f"publish --dest inside {area}", [*pb, "--dest",
                                                       f"@SCRATCH@/{area}/pages"], "refuse",
                      _fake_run))
    C.append(ro_case("publish --dest in a read-only folder", [*pb, "--dest", "ro/pages"],
                     _fake_run))
    C.append(Case("publish --dest read-only", [*pb, "--dest", "/sys/pages"], "refuse",
                  _fake_run))
    C.append(Case("publish --dest a file", [*pb, "--dest", "afile"], "refuse",
                  steps(_fake_run, text("afile", "x"))))
    C += value_cases("publish", [*pb, "--dest", "pages"], "--max-image-width",
                     ["0", "-1", "abc"], setup=_fake_run)
    C += value_cases("publish", [*pb, "--dest", "pages"], "--max-mb", ["0", "-1", "nan",
                                                                       "abc"], setup=_fake_run)
    # -------------------------------------------------------------------- reproduce
    rp = ["reproduce", "--runs-file", "runs.yaml", "--profile", "p", "--run-dir", "rd",
          "--no-update-readme"]
    empty_runs = text("runs.yaml", "profiles:\n  p: []\n")
    C.append(Case("reproduce an empty profile", rp, "any", empty_runs))
    C += value_cases("reproduce", rp, "--profile", ["nope", ""], setup=empty_runs)
    C += value_cases("reproduce", rp, "-p", ["bad", "=1", "a=[unclosed", "a"],
                     setup=empty_runs)
    for label, content in [("empty", ""), ("garbage", "{{{: ["), ("a list", "- 1\n- 2\n"),
                           ("profiles a list", "profiles: [1, 2]\n"),
                           ("runs not a list", "profiles:\n  p: 3\n"),
                           ("run without notebook", "profiles:\n  p:\n    - {x: 1}\n"),
                           ("missing notebook", "profiles:\n  p:\n    - notebook: nope.ipynb"
                                                "\n")]:
        C.append(Case(f"reproduce --runs-file {label}", rp, "refuse",
                      text("runs.yaml", content)))
    C.append(Case("reproduce --runs-file missing", rp, "refuse"))
    C.append(Case("reproduce --runs-file a folder", rp, "refuse", folder("runs.yaml")))
    for area in SHIPPED:
        C.append(Case(f"reproduce --run-dir inside {area}",
                      [*rp[:5], "--run-dir", f"@SCRATCH@/{area}/rd", *rp[7:]], "any",
                      empty_runs))
    C.append(Case("reproduce --run-dir a file", [*rp[:5], "--run-dir", "afile", *rp[7:]],
                  "refuse", steps(empty_runs, text("afile", "x"))))
    C.append(Case("reproduce --out-root a file", [*rp, "--out-root", "afile"], "refuse",
                  steps(empty_runs, text("afile", "x"))))
    # ----------------------------------------------------------------------- readme
    C.append(Case("readme no README here", ["readme", "--check"], "refuse"))
    for label, setup in [("empty", text("README.md", "")),
                         ("garbage", text("README.md", b"\xff\xfe\x00garbage")),
                         ("unclosed marker", text("README.md", "<!-- carb:zoo -->\nx\n")),
                         ("unknown marker", text("README.md", "<!-- carb:nope -->\nx\n"
                                                              "<!-- /carb:nope -->\n")),
                         ("a folder", folder("README.md"))]:
        C.append(Case(f"readme --readme {label}", ["readme", "--check", "--readme",
                                                   "README.md"], "any", setup))
        C.append(Case(f"readme write --readme {label}", ["readme", "--readme", "README.md",
                                                         "--results-dir", "@SCRATCH@/results"],
                      "any", setup))
    C.append(Case("readme --results-dir missing", ["readme", "--readme", "README.md",
                                                   "--results-dir", "nope"], "refuse",
                  copy_as("README.md", "README.md")))
    C.append(Case("readme --results-dir a file", ["readme", "--readme", "README.md",
                                                  "--results-dir", "afile"], "refuse",
                  steps(copy_as("README.md", "README.md"), text("afile", "x"))))
    # -------------------------------------------------------------------------- zoo
    zl = ["zoo", "list", "--out"]
    C += output_cases("zoo list", lambda o, f: [*zl, o, *f], "zl.csv", full=True)
    C.append(Case("zoo list --out .txt", [*zl, "zl.txt"], "refuse"))
    zp = ["zoo", "predict", "--model", "m.skops", "--networks", "resnet18", "--resolutions",
          "32"]
    C += model_cases(["zoo", "predict"], "--model", zp[4:], "zoo predict")
    C += value_cases("zoo predict", zp, "--networks", ["nope", "resnet18,nope", ","])
    C += value_cases("zoo predict", zp, "--batches", ["0", "-1", "abc", "", "99999"])
    C += value_cases("zoo predict", zp, "--precisions", ["fp8", ""])
    C += value_cases("zoo predict", zp[:-2], "--resolutions", ["0", "7", "99999", "abc", ""])
    C += value_cases("zoo predict", zp, "--coverage", ["0", "1", "nan"])
    C += value_cases("zoo predict", zp, "--cache-dir", ["afile"], "any",
                     setup=text("afile", "x"))
    C += value_cases("zoo predict", zp, "--cache-dir", ["/sys/carb_cache"], "any")
    C += output_cases("zoo predict", lambda o, f: [*zp, "--out", o, *f], "zp.csv")
    zc = ["zoo", "configs", "--networks", "resnet18", "--resolutions", "32", "--out"]
    C += output_cases("zoo configs", lambda o, f: [*zc, o, *f], "zc.csv")
    C += value_cases("zoo configs", [*zc, "zc.csv"], "--phase", ["0", "3", "abc"])
    C += value_cases("zoo configs", ["zoo", "configs", "--out", "zc.csv", "--resolutions",
                                     "32"], "--networks", ["nope", ","])
    C += value_cases("zoo configs", ["zoo", "configs", "--out", "zc.csv", "--networks",
                                     "resnet18"], "--resolutions", ["0", "abc"])
    zs = ["zoo", "screen", "--model", "m.skops", "--networks", "resnet18", "--resolutions",
          "32", "--out", "zs.csv"]
    C += model_cases(["zoo", "screen"], "--model", zs[4:], "zoo screen")
    C += value_cases("zoo screen", zs, "--budget", ["latency_ms", "nope<=3", "latency_ms<=x",
                                                    "latency_ms<=nan"])
    C += value_cases("zoo screen", zs, "--objective", ["nope", "max:nope"])
    C += value_cases("zoo screen", zs, "--quality", ["nope"])
    C += value_cases("zoo screen", zs, "--k", ["0", "-1"])
    C += value_cases("zoo screen", zs, "--method", ["nope"])
    C += value_cases("zoo screen", zs, "--coverage", ["1", "-1"])
    C.append(Case("zoo screen --budget twice", [*zs, "--budget", "latency_ms<=5", "--budget",
                                                "latency_ms<=5"], "refuse"))
    C += output_cases("zoo screen", lambda o, f: [*zs[:-1], o, *f], "zs.csv",
                      siblings=("zs_front.csv", "zs_summary.json"))
    return C


# ================================================================== fixture helpers
def _edit_csv(path: Path, column: str, value: str) -> None:
    lines = (FIX / "d.csv").read_text().splitlines()
    header = lines[0].split(",")
    i = header.index(column)
    status = header.index("status")
    for k in range(1, len(lines)):
        cells = lines[k].split(",")
        if cells[status] == "ok":
            cells[i] = value
            lines[k] = ",".join(cells)
            break
    path.write_text("\n".join(lines) + "\n")


def _user_tables(folder_: Path, names: tuple[str, ...] = ("audit_rows.parquet",
                                                          "audit_summary.csv")) -> None:
    folder_.mkdir(parents=True, exist_ok=True)
    for n in names:
        (folder_ / n).write_text("my own table\n")


def _trunc_part(d: Path, name: str) -> None:
    (d / name).mkdir()
    part = next((FIX / "parts").glob("*.parquet"))
    raw = part.read_bytes()
    (d / name / part.name).write_bytes(raw[: len(raw) // 2])


def _mixed_parts(d: Path) -> None:
    shutil.copytree(FIX / "parts", d)
    shutil.copytree(FIX / "parts2", d, dirs_exist_ok=True)


def _cpu_rows(path: Path, cpu: str) -> None:
    import pandas as pd

    rows = pd.read_parquet(FIX / "aud.parquet")
    rows["cpu_id"] = cpu
    rows.to_parquet(path, index=False)


def _pickle_pt(d: Path) -> None:
    import pickle

    (d / "hp").mkdir()

    class _Evil:
        def __reduce__(self):
            return (os.system, ("touch PWNED",))

    (d / "hp" / "latency_pixel3.pt").write_bytes(pickle.dumps(_Evil()))


def _fake_run(d: Path) -> None:
    run = d / "run"
    run.mkdir(exist_ok=True)
    (run / "summary.json").write_text(json.dumps({"profile": "quick", "runs": []}))


_PRE: dict[str, int] = {}


def _run_pre(d: Path, args: list[str]) -> None:
    """Run a command first (its output is the case's pre-existing own output)."""
    rc, _out, _err, _t = RUNNER.run(args, d, 120, pipe=False)
    _PRE[str(d)] = rc


# ================================================================ running a case
class Runner:
    def __init__(self, scratch: Path, fresh: bool):
        self.scratch = scratch
        self.fresh = fresh
        self.carb = Path(sys.executable).with_name("carb")
        self.env = {**os.environ, "PYTHONPATH": str(scratch), "COLUMNS": "120",
                    "CARB_CACHE_DIR": str(FIX / "zoo_cache"), "PYTHONUNBUFFERED": "0"}
        if not fresh:
            os.environ.update(self.env)
            sys.path.insert(0, str(scratch))
            for mod in ("carb_lib.app.cli", "pandas", "pyarrow.parquet", "torch",
                        "torchvision", "sklearn.ensemble", "skops.io", "xgboost", "lightgbm",
                        "carb_lib.ensemble", "carb_lib.screening", "carb_lib.measure.campaign",
                        "carb_lib.families.zoo", "carb_lib.transfer", "scipy.stats"):
                try:
                    __import__(mod)
                except Exception as exc:  # noqa: BLE001 - a missing extra: the case shows it
                    print(f"(prewarm: {mod}: {exc})")
            assert str(Path(sys.modules["carb_lib"].__file__).resolve()).startswith(
                str(scratch.resolve())), "CARB must run from the scratch copy"

    def run(self, args: list[str], cwd: Path, timeout: float, pipe: bool, as_user: bool = False
            ) -> tuple[int | None, str, str, float]:
        t0 = time.perf_counter()
        if pipe or self.fresh:
            return (*self._subprocess(args, cwd, timeout, pipe, as_user),
                    time.perf_counter() - t0)
        out_f, err_f = cwd.parent / f".{cwd.name}.out", cwd.parent / f".{cwd.name}.err"
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the case's process
            code = 3
            try:
                os.setpgid(0, 0)
                os.chdir(cwd)
                fd_in = os.open(os.devnull, os.O_RDONLY)
                fd_out = os.open(out_f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                fd_err = os.open(err_f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(fd_in, 0)
                os.dup2(fd_out, 1)
                os.dup2(fd_err, 2)
                if as_user:
                    _drop_privileges()
                sys.argv = ["carb", *args]
                from carb_lib.app.cli import app

                try:
                    app(prog_name="carb")
                    code = 0
                except SystemExit as exc:
                    c = exc.code
                    code = c if isinstance(c, int) else (0 if c is None else 1)
                    if not isinstance(c, int) and c is not None:
                        print(c, file=sys.stderr)
                except BaseException:  # noqa: BLE001 - what the interpreter would print
                    import traceback

                    traceback.print_exc()
                    code = 1
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                except BrokenPipeError:
                    code = 120
            finally:
                os._exit(code)
        rc = self._wait(pid, timeout)
        out = out_f.read_text(errors="replace")
        err = err_f.read_text(errors="replace")
        out_f.unlink()
        err_f.unlink()
        return rc, out, err, time.perf_counter() - t0

    @staticmethod
    def _wait(pid: int, timeout: float) -> int | None:
        end = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() > end:
                for sig in (signal.SIGTERM, signal.SIGKILL):
                    try:
                        os.killpg(pid, sig)
                    except ProcessLookupError:
                        pass
                    time.sleep(0.5)
                os.waitpid(pid, 0)
                return None
            time.sleep(0.02)

    def _subprocess(self, args: list[str], cwd: Path, timeout: float, pipe: bool,
                    as_user: bool = False) -> tuple[int | None, str, str]:
        import shlex

        line = " ".join(shlex.quote(a) for a in [str(self.carb), *args])
        if pipe:  # the reader goes away at once; the exit code is carb's
            script = f"{line} 2>.pipe_err | head -c 0; echo ${{PIPESTATUS[0]}} > .pipe_rc"
            try:
                subprocess.run(["bash", "-c", script], cwd=cwd, env=self.env, timeout=timeout,
                               start_new_session=True)
            except subprocess.TimeoutExpired:
                return None, "", ""
            err = (cwd / ".pipe_err").read_text(errors="replace")
            rc = int((cwd / ".pipe_rc").read_text().strip())
            (cwd / ".pipe_err").unlink()
            (cwd / ".pipe_rc").unlink()
            return rc, "", err
        try:
            p = subprocess.run([str(self.carb), *args], cwd=cwd, env=self.env,
                               capture_output=True, text=True, timeout=timeout,
                               start_new_session=True,
                               preexec_fn=_drop_privileges if as_user else None)
        except subprocess.TimeoutExpired:
            return None, "", ""
        return p.returncode, p.stdout, p.stderr


RUNNER: Runner


def _drop_privileges() -> None:
    """Give up root's right to write into any folder (``CAP_DAC_OVERRIDE``, from the effective
    and permitted sets), so that a folder's mode holds; the process stays root otherwise (it
    still reads the interpreter's files)."""
    if os.geteuid() != 0:
        return
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    libc = ctypes.CDLL(None, use_errno=True)
    head, data = Header(0x20080522, 0), (Data * 2)()
    if libc.capget(ctypes.byref(head), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    dac_override = 1 << 1
    data[0].effective &= ~dac_override
    data[0].permitted &= ~dac_override
    data[0].inheritable &= ~dac_override
    if libc.capset(ctypes.byref(head), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


# ================================================================ state and verdicts
class Hasher:
    """SHA-256 of every file under some folders (cached by size, mtime and inode for the
    large shipped folders)."""

    def __init__(self) -> None:
        self.cache: dict[str, tuple[tuple[int, int, int], str]] = {}

    def file(self, p: Path, cached: bool) -> str:
        st = p.stat()
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
        if cached and str(p) in self.cache and self.cache[str(p)][0] == key:
            return self.cache[str(p)][1]
        h = hashlib.sha256(p.read_bytes()).hexdigest()
        self.cache[str(p)] = (key, h)
        return h

    def tree(self, roots: list[Path], cached: bool) -> dict[str, str]:
        out: dict[str, str] = {}
        for root in roots:
            if not root.exists():
                continue
            for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
                for n in filenames + [d for d in dirnames if os.path.islink(
                        os.path.join(dirpath, d))]:
                    p = Path(dirpath) / n
                    if p.is_symlink():
                        out[str(p)] = "link:" + os.readlink(p)
                    elif p.is_file():
                        out[str(p)] = self.file(p, cached)
                    else:
                        out[str(p)] = "special"
        return out


def classify(case: Case, rc: int | None, out: str, err: str, before: dict[str, str],
             after: dict[str, str], cwd: Path) -> tuple[str, str, str]:
    """(verdict, category, detail)."""
    fails: list[tuple[str, str]] = []
    text_all = out + "\n" + err
    after_hashes = set(after.values())
    changed = [p for p, h in before.items() if after.get(p) != h]
    own = {str(cwd / o) for o in case.outputs} if case.replaces and rc == 0 else set()
    lost = [p for p in changed if before[p] not in after_hashes and p not in own]
    if rc is None:
        fails.append(("timeout", f"no exit within {case.timeout:.0f} s"))
    if lost:
        fails.append(("data loss", "gone: " + ", ".join(_rel(p, cwd) for p in lost[:4])))
    if TRACEBACK in text_all:
        fails.append(("traceback", _first(text_all, TRACEBACK)))
    if "internal error:" in text_all or rc == 2:
        fails.append(("internal error", _first(text_all, "internal error:")))
    new = [p for p in after if p not in before and not any(b in p for b in BENIGN)]
    err_lines = [ln for ln in err.splitlines() if ln.strip()]
    ok_expected = case.expect in ("ok", "any")
    refuse_expected = case.expect in ("refuse", "any")
    if rc == 0:
        if not ok_expected:
            fails.append(("wrong exit code", "a bad input was accepted (exit 0): "
                          + (err_lines[-1] if err_lines else (out.splitlines() or [""])[-1])))
        kept = [p for p in changed if p not in lost]
        bak_changed = [p for p in kept if ".bak" in Path(p).name]
        if bak_changed:
            fails.append(("file changed", "backup overwritten: "
                          + ", ".join(_rel(p, cwd) for p in bak_changed)))
        if kept and not (case.replaces or "--force" in case.args):
            fails.append(("file changed", "replaced without --force: "
                          + ", ".join(_rel(p, cwd) for p in kept[:4])))
        if case.outputs:
            have = [o for o in case.outputs if (cwd / o).exists()]
            if len(have) != len(case.outputs):
                fails.append(("half-written", f"wrote {have} of {list(case.outputs)}"))
        if case.check is not None and not fails:
            msg = case.check(cwd)
            if msg:
                fails.append(("wrong result", msg))
    elif rc is not None and case.pipe:  # the reader went away: quiet, whatever the code
        if err_lines and not (case.expect == "refuse" and len(err_lines) == 1):
            fails.append(("multi-line error", " | ".join(err_lines[-3:])[:300]))
        if changed and not lost:
            fails.append(("file changed", ", ".join(_rel(p, cwd) for p in changed[:4])))
        if case.outputs and 0 < sum((cwd / o).exists() for o in case.outputs) < len(
                case.outputs):
            fails.append(("half-written", "part of the output set"))
    elif rc is not None:
        if rc != 0 and not refuse_expected and rc not in (2,):
            fails.append(("wrong exit code", f"a fine input was refused (exit {rc}): "
                          + (err_lines[-1] if err_lines else "")))
        if rc not in (1, 2) and refuse_expected:
            fails.append(("wrong exit code", f"exit code {rc}, not 1"))
        if changed and not lost:
            fails.append(("file changed", "changed by a refused command: "
                          + ", ".join(_rel(p, cwd) for p in changed[:4])))
        if new:
            fails.append(("half-written", "left by a refused command: "
                          + ", ".join(_rel(p, cwd) for p in new[:4])))
        if rc == 1 and TRACEBACK not in text_all:
            errs = [i for i, ln in enumerate(err_lines) if ln.startswith("error: ")]
            if len(errs) != 1 or errs[0] != len(err_lines) - 1:
                fails.append(("multi-line error", " | ".join(err_lines[-3:])[:300]))
    if case.pipe and ("Exception ignored" in err or "BrokenPipe" in err):
        fails.append(("traceback", "closed pipe: " + _first(err, "Exception ignored")))
    if "PWNED" in "".join(after):
        fails.append(("data loss", "a pickle in the input ran code"))
    if not fails:
        return "PASS", "", (err_lines[-1] if err_lines else "")[:300]
    order = ["data loss", "half-written", "file changed", "internal error", "traceback",
             "timeout", "multi-line error", "wrong exit code", "wrong result"]
    fails.sort(key=lambda f: order.index(f[0]))
    return "FAIL", fails[0][0], "; ".join(f"{c}: {d}" for c, d in fails)[:600]


def _rel(p: str, cwd: Path) -> str:
    try:
        return str(Path(p).relative_to(cwd))
    except ValueError:
        return p


def _first(textv: str, needle: str) -> str:
    for ln in textv.splitlines():
        if needle in ln:
            return ln.strip()[:300]
    lines = [ln for ln in textv.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


# ======================================================================== fixtures
BUILD = r'''
import json, shutil, sys, warnings
from pathlib import Path
import numpy as np, pandas as pd
sys.path.insert(0, sys.argv[2])
fix = Path(sys.argv[1])
from carb_synthetic import make_carb_synthetic
d = make_carb_synthetic(300, seed=2, energy=False, telemetry=False, platform="synthetic_cpu")
d.to_parquet(fix / "d.parquet", index=False); d.to_csv(fix / "d.csv", index=False)
cols = ["family","block","depth","width","early_downsample","resolution","batch","precision",
        "num_classes"]
d[d.status == "ok"][cols].head(20).to_csv(fix / "c.csv", index=False)
o = make_carb_synthetic(200, seed=5, energy=False, telemetry=False, platform="other_cpu")
o.to_parquet(fix / "o.parquet", index=False)
o[o.status == "ok"].head(8).to_parquet(fix / "t.parquet", index=False)
from carb_lib.measure.devices import cpu_identity
a = d.copy(); a["cpu_id"] = cpu_identity(); a.to_parquet(fix / "aud.parquet", index=False)
from carb_lib.dataset.schema import empty_row
from carb_lib.families.space import CONFIG_COLUMNS, paper_grid
from carb_lib.measure import campaign as cp
def rows(configs, platform):
    out = []
    for i, rec in enumerate(configs.to_dict(orient="records")):
        r = empty_row()
        r.update({c: rec[c] for c in CONFIG_COLUMNS}, config_id=rec["config_id"])
        r.update(platform=platform, status="ok", error=None, latency_ms=2.0 + i,
                 peak_mem_mib=10.0 + i, energy_j=np.nan, energy_reason="SYNTHETIC row",
                 n_iters=6, window_s=0.3, latency_mean_ms=2.0 + i, latency_p10_ms=2.0 + i,
                 latency_p90_ms=2.0 + i, latency_cv=0.01, device_name="synthetic",
                 torch_version="x", host="h", measured_at=f"2026-01-01T00:00:{i:02d}.000+00:00",
                 threads=1, quality="clean")
        out.append(r)
    return out
g = paper_grid()
cp.PartWriter(fix / "parts", cp.RESULTS_PREFIX).write(rows(g.iloc[:6], "synthetic_cpu"))
cp.PartWriter(fix / "parts2", cp.RESULTS_PREFIX).write(rows(g.iloc[6:9], "other_cpu"))
(fix / "net.py").write_text("""import sys, os, time
import torch.nn as nn
def tiny():
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(4, 2))
def not_a_net():
    return 42
def raises():
    raise RuntimeError("the factory fails")
def exits():
    sys.exit(3)
def exits0():
    sys.exit(0)
def hangs():
    time.sleep(600)
""")
(fix / "bad.py").write_text("def f(:\n    pass\n")
shutil.copy(Path(sys.argv[3]) / "README.md", fix / "README.md")
from carb_lib.families import zoo
zoo.zoo_candidates("resnet18", (1,), ("fp32",), (32,), cache_dir=fix / "zoo_cache")
'''

PICKLE = r'''
import sys, joblib
from carb_lib.ensemble import load_model
m = load_model(sys.argv[1])
joblib.dump(m, sys.argv[2])
'''


def build_fixtures(fix: Path, scratch: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(scratch)}
    py = sys.executable
    t0 = time.perf_counter()
    subprocess.run([py, "-c", BUILD, str(fix), str(REPO / "tests"), str(REPO)], check=True,
                   env=env)
    carb = str(Path(py).with_name("carb"))
    for data, model in (("d.parquet", "m.skops"), ("o.parquet", "m2.skops")):
        subprocess.run([carb, "fit", "--quick", "--data", str(fix / data), "--out",
                        str(fix / model)], check=True, env=env, capture_output=True)
    subprocess.run([py, "-c", PICKLE, str(fix / "m.skops"), str(fix / "m.joblib")], check=True,
                   env=env)
    subprocess.run([carb, "profile", "--out", str(fix / "camp"), "--n-sample", "1",
                    "--threads", "1", "--no-progress", "--protocol", FAST, *SKIP_ALL],
                   check=True, env=env, capture_output=True)
    print(f"fixtures built in {time.perf_counter() - t0:.0f} s")


def make_scratch(dest: Path) -> Path:
    ignore = shutil.ignore_patterns(".git", "runs", ".venv", "__pycache__", ".pytest_cache",
                                    ".ruff_cache", "*.egg-info", "campaigns")
    shutil.copytree(REPO, dest, ignore=ignore, symlinks=True)
    return dest


def fixtures_for(case: Case) -> list[str]:
    names = {"d.parquet", "d.csv", "c.csv", "m.skops", "m2.skops", "m.joblib", "o.parquet",
             "t.parquet", "aud.parquet", "parts", "camp", "net.py", "bad.py"}
    used = set(case.needs)
    for a in case.args:
        for part in a.replace("=", " ").split():
            if part in names:
                used.add(part)
    if "m.skops" in used:
        used.add("m.skops.json")
    if "m2.skops" in used:
        used.add("m2.skops.json")
    return sorted(used)


def listing(path: Path) -> list[tuple[str, int, int]]:
    return sorted((str(p), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in path.rglob("*") if p.is_file())


def main() -> int:
    global FIX, RUNNER
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=None, help="run the cases whose name holds this")
    ap.add_argument("--fresh", action="store_true", help="each case in a fresh process")
    ap.add_argument("--list", action="store_true", help="list the cases and stop")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folders")
    ap.add_argument("--out", default=str(REPO / "runs" / "fault_sweep"))
    opts = ap.parse_args()

    all_cases = cases_all()
    names = Counter(c.name for c in all_cases)
    dup = [n for n, k in names.items() if k > 1]
    assert not dup, f"case names twice: {dup}"
    cases = [c for c in all_cases if opts.only is None or opts.only in c.name]
    if opts.list:
        for c in cases:
            print(f"{c.expect:7s} {c.name}")
        print(f"{len(cases)} cases")
        return 0
    report = Path(opts.out)
    report.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="carb_fault_sweep_"))
    real_before = {a: listing(REPO / a) for a in SHIPPED}
    try:
        scratch = make_scratch(work / "checkout")
        FIX = work / "fixtures"
        FIX.mkdir()
        build_fixtures(FIX, scratch)
        RUNNER = Runner(scratch, opts.fresh)
        hasher = Hasher()
        shipped = [scratch / a for a in SHIPPED]
        hasher.tree(shipped + [FIX], cached=True)
        rows = []
        t_start = time.perf_counter()
        for i, case in enumerate(cases):
            cwd = work / "cases" / f"{i:04d}"
            cwd.mkdir(parents=True)
            for name in fixtures_for(case):
                src = FIX / name
                (shutil.copytree if src.is_dir() else shutil.copy)(src, cwd / name)
            args = [a.replace("@SCRATCH@", str(scratch)) for a in case.args]
            case.args = args
            try:
                if case.setup is not None:
                    case.setup(cwd)
            except Exception as exc:  # noqa: BLE001 - a broken case is reported, not fatal
                rows.append(dict(case=case.name, command=" ".join(args), expect=case.expect,
                                 rc="", verdict="SETUP", category="setup", seconds=0,
                                 detail=f"{type(exc).__name__}: {exc}"))
                continue
            before = {**hasher.tree([cwd], cached=False), **hasher.tree(shipped, cached=True)}
            rc, out, err, secs = RUNNER.run(args, cwd, case.timeout, case.pipe, case.as_user)
            after = {**hasher.tree([cwd], cached=False), **hasher.tree(shipped, cached=True)}
            verdict, category, detail = classify(case, rc, out, err, before, after, cwd)
            rows.append(dict(case=case.name, command="carb " + " ".join(args)[:400],
                             expect=case.expect, rc=rc, verdict=verdict, category=category,
                             seconds=round(secs, 2), detail=detail))
            mark = "." if verdict == "PASS" else "F"
            print(f"{i + 1:4d}/{len(cases)} {mark} {secs:5.1f}s {case.name}"
                  + (f"  [{category}] {detail[:160]}" if verdict != "PASS" else ""),
                  flush=True)
            # restore the scratch copy's shipped folders for the next case
            for a in SHIPPED:
                for p in (scratch / a).rglob("carb_sweep*"):
                    (shutil.rmtree if p.is_dir() else os.unlink)(p)
            if not opts.keep:
                shutil.rmtree(cwd, ignore_errors=True)
        total = time.perf_counter() - t_start
        fix_after = hasher.tree([FIX], cached=False)
        real_after = {a: listing(REPO / a) for a in SHIPPED}
        assert real_after == real_before, "the real checkout's shipped folders changed!"
        _write_report(report, rows, total, fix_after)
    finally:
        if not opts.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")
    return 0


def _write_report(report: Path, rows: list[dict], total: float, _fix: dict) -> None:
    with open(report / "cases.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    verdicts = Counter(r["verdict"] for r in rows)
    cats = Counter(r["category"] for r in rows if r["verdict"] != "PASS")
    by_cmd: dict[str, Counter] = {}
    for r in rows:
        cmd = r["case"].split(" ")[0]
        by_cmd.setdefault(cmd, Counter())[r["verdict"]] += 1
    lines = ["# Fault sweep of the carb command line", "",
             f"{len(rows)} cases in {total / 60:.1f} min: "
             + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())), ""]
    lines += ["## Failures by category", "", "| category | cases |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in cats.most_common()] or ["| none | 0 |"]
    lines += ["", "## Cases by command", "", "| command | PASS | FAIL |", "|---|---|---|"]
    lines += [f"| {k} | {v['PASS']} | {v['FAIL'] + v['SETUP']} |" for k, v in by_cmd.items()]
    lines += ["", "## Failures", "", "| case | category | exit | detail |", "|---|---|---|---|"]
    for r in rows:
        if r["verdict"] != "PASS":
            det = str(r["detail"]).replace("|", "/")[:300]
            lines.append(f"| {r['case']} | {r['category']} | {r['rc']} | {det} |")
    (report / "report.md").write_text("\n".join(lines) + "\n")
    print(f"\n{len(rows)} cases, {total / 60:.1f} min: "
          + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())))
    for k, v in cats.most_common():
        print(f"  {k}: {v}")
    print(f"report: {report / 'report.md'}, {report / 'cases.csv'}")


if __name__ == "__main__":
    sys.exit(main())
