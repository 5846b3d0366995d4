"""The latency law ``carb fit`` and ``CARBRegressor()`` use by default (``latency_law="auto"``):
the kernel law where the catalog holds an operator benchmark of the platform, the roofline law
otherwise. :func:`resolve_latency_law` is the one place the choice is made:
:meth:`carb_lib.ensemble.CARBRegressor.fit` calls it, and ``carb fit`` fits through it.

The catalog (:mod:`carb_lib.dataset.catalog`) lists each campaign's operators timed alone
(``carb kernels --out``; role ``kernels``, shipped as ``data/<platform>/<campaign>/kernels.parquet``
with its host-speed anchors beside it as ``kernels.anchors.parquet``) and the machine's
read-bandwidth probe (``carb kernels --cache-probe``, ``scripts/read_bandwidth_probe.py``; role
``cache_probe``). A folder without a catalog is looked up by name: ``kernels/<platform>[_<campaign>]
.parquet`` under it, a probe as ``<bench stem>_cache_probe.csv`` (or
``<platform>_cache_probe.csv``) beside the benchmark.

:func:`choose_latency_law` finds, for the training rows' platform, the benchmark that goes
with the rows' campaign (:meth:`carb_lib.dataset.catalog.Catalog.benchmarks`: its own, else one
timed with its heap, else the design campaign's), and checks that it was timed on the rows' CPU (``cpu_id``): a
benchmark of another CPU is refused (one ``ValueError`` naming both ids); rows or a benchmark
without a CPU model in ``cpu_id`` (no column, ``"unknown"``, or an id of the first campaigns
such as ``"AMD EPYC"``) cannot be checked, and the choice says so. The choice of this default
on validation rows of the five CPUs: ``benchmarks/choose_latency_law.py``
(``results/benchmarks/latency_law_choice.csv``).

Examples
--------
>>> from carb_lib.ensemble.latency_default import choose_latency_law
>>> choice = choose_latency_law(rows, "cpu_epyc_zen4_2c")  # doctest: +SKIP
>>> choice.law, choice.reason  # doctest: +SKIP
('kernel', 'operator benchmark data/cpu_epyc_zen4_2c/design/kernels.parquet of platform ...')
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from carb_lib.core.tables import read_table
from carb_lib.dataset.catalog import DESIGN, SHIPPED_CATALOG, data_folder_of, load_catalog
from carb_lib.kernels.cache_probe import cache_knee
from carb_lib.kernels.law import read_bench

__all__ = ["DATA_DIR", "LATENCY_LAWS", "LatencyLawChoice", "choose_latency_law", "cpu_ids",
           "estimator_latency_law", "find_benchmark", "find_cache_probe",
           "resolve_latency_law"]

#: The shipped catalog's folder (:data:`carb_lib.dataset.catalog.SHIPPED_CATALOG`): the data
#: folder whose catalog names each platform's operator benchmark.
DATA_DIR: Path = SHIPPED_CATALOG.parent
#: ``carb fit --latency-law`` and ``CARBRegressor(latency_law=...)`` choices; ``auto`` is the
#: default.
LATENCY_LAWS: tuple[str, ...] = ("auto", "roofline", "kernel")


@dataclass(frozen=True)
class LatencyLawChoice:
    """A latency law and why: ``law`` (``"kernel"`` or ``"roofline"``), ``reason`` (one line),
    the benchmark and read-bandwidth probe used (None: none), and ``root`` (the folder the
    paths are stored relative to: the repository)."""

    law: str
    reason: str
    kernel_bench: Path | None = None
    cache_probe: Path | None = None
    root: Path | None = None

    def _rel(self, path: Path | None) -> str | None:
        if path is None:
            return None
        if self.root is not None:
            try:
                return Path(path).resolve().relative_to(Path(self.root).resolve()).as_posix()
            except ValueError:
                pass
        return str(path)

    def metadata(self) -> dict[str, Any]:
        """The model metadata's keys: ``latency_law``, ``latency_law_reason``,
        ``kernel_bench`` and ``cache_probe`` (paths relative to the repository)."""
        return {"latency_law": self.law, "latency_law_reason": self.reason,
                "kernel_bench": self._rel(self.kernel_bench),
                "cache_probe": self._rel(self.cache_probe)}


def cpu_ids(frame: pd.DataFrame) -> list[str]:
    """The CPU models named in ``frame``'s ``cpu_id`` (sorted): ids without a family number
    (``"unknown"``, the first campaigns' ``"AMD EPYC"``) name no CPU model and are left out."""
    if "cpu_id" not in frame.columns:
        return []
    return sorted({str(v) for v in frame["cpu_id"].dropna().unique() if "family" in str(v)})


def _bench_platforms(path: Path) -> set[str]:
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(path).names
        if "platform" not in names:
            return set()
        col = pq.read_table(path, columns=["platform"]).column("platform").to_pylist()
    except Exception as exc:  # a broken file is not silently skipped
        raise ValueError(f"{path}: not a readable operator benchmark "
                         f"({type(exc).__name__}: {exc})") from None
    return {str(v) for v in col if v is not None}


def _catalogued_benchmark(platform: str, folder: Path | None, campaign: str | None,
                          rows_file: str | Path | None = None) -> Path | None:
    cat = load_catalog() if folder is None else load_catalog(shipped=folder / "catalog.yaml")
    entry = None if rows_file is None else cat.entry_of(rows_file)
    if entry is not None and entry.platform == platform:
        name = entry.campaign
    elif campaign and campaign != platform and campaign.startswith(f"{platform}_"):
        name = campaign[len(platform) + 1:]
    else:
        name = None
    for e in cat.benchmarks(platform, name):
        if _bench_platforms(e.path) in (set(), {platform}):
            return e.path
    return None


def find_benchmark(platform: str, data_dir: str | Path | None = None, *,
                   campaign: str | None = None,
                   rows_file: str | Path | None = None) -> Path | None:
    """The operator benchmark of ``platform`` (None: none).

    Without ``data_dir``, the catalogs in use say (:func:`carb_lib.dataset.catalog.load_catalog`:
    the shipped one where present, and the user catalogs); where ``data_dir`` holds a
    ``catalog.yaml``, that catalog (extended by the user catalogs). The rows' campaign is the
    catalog's campaign of ``rows_file`` where it is catalogued, else the one ``campaign``
    names (the rows' file name without suffix, ``<platform>_<name>``); its benchmark is
    :meth:`carb_lib.dataset.catalog.Catalog.benchmarks`' first (its own, else one timed with
    its heap, else the design campaign's). A folder without a catalog is looked up by name:
    ``<data_dir>/kernels/<campaign>.parquet``, else ``<platform>.parquet``. A file whose
    ``platform`` column names another platform is not that platform's benchmark.
    """
    if data_dir is None and Path(DATA_DIR) == SHIPPED_CATALOG.parent:
        # the catalogs in use: the shipped one (where present) and the user's
        return _catalogued_benchmark(platform, None, campaign, rows_file)
    folder = Path(DATA_DIR if data_dir is None else data_dir)
    if (folder / "catalog.yaml").is_file():
        return _catalogued_benchmark(platform, folder, campaign, rows_file)
    names = [f"{platform}.parquet"]
    if campaign and campaign != platform and campaign.startswith(f"{platform}_"):
        names.insert(0, f"{campaign}.parquet")
    for name in names:
        path = folder / "kernels" / name
        if path.is_file() and _bench_platforms(path) in (set(), {platform}):
            return path
    return None


def find_cache_probe(bench: Path, platform: str) -> Path | None:
    """The read-bandwidth probe that goes with the operator benchmark ``bench`` (None: none).

    Where ``bench`` is catalogued (the catalog of its data folder, extended by the user
    catalogs): the ``cache_probe`` of its campaign, else of the platform's design campaign.
    A benchmark no catalog lists: ``<bench stem>_cache_probe.csv`` beside it, else
    ``<platform>_cache_probe.csv``."""
    for folder in (None, data_folder_of(bench)):
        if folder is None or (folder / "catalog.yaml").is_file():
            cat = load_catalog() if folder is None else load_catalog(
                shipped=folder / "catalog.yaml")
            entry = cat.entry_of(bench)
            if entry is not None:
                found = [p for p in (*cat.files(entry.platform, entry.campaign, "cache_probe"),
                                     *cat.files(platform, DESIGN, "cache_probe")) if p.is_file()]
                return found[0] if found else None
    for name in (f"{bench.stem}_cache_probe.csv", f"{platform}_cache_probe.csv"):
        path = bench.with_name(name)
        if path.is_file():
            return path
    return None


def _check_cpu(rows_ids: list[str], other: pd.DataFrame, platform: str, rel: str) -> str:
    """Refuse ``other`` (a benchmark or probe, named ``rel``) timed on another CPU than the
    rows; the words on the check otherwise."""
    theirs = cpu_ids(other)
    if rows_ids and theirs and set(theirs) != set(rows_ids):
        raise ValueError(f"{rel} was timed on cpu_id {' / '.join(theirs)!r} but the rows of "
                         f"platform {platform} were measured on cpu_id "
                         f"{' / '.join(rows_ids)!r}: time the operators on the rows' CPU "
                         "(carb kernels --out), or fit with --latency-law roofline "
                         "(latency_law='roofline')")
    if not rows_ids:
        return "rows name no CPU model (cpu_id), cannot be checked"
    if not theirs:
        return f"{Path(rel).name} names no CPU model (cpu_id), cannot be checked"
    return "cpu_id checked"


def choose_latency_law(rows: pd.DataFrame, platform: str, *,
                       data_dir: str | Path | None = None, campaign: str | None = None,
                       rows_file: str | Path | None = None,
                       kernel_bench: str | Path | pd.DataFrame | None = None,
                       cache_probe: str | Path | pd.DataFrame | None = None) -> LatencyLawChoice:
    """The latency law to fit ``rows`` (network rows of ``platform``) with, and why.

    Parameters
    ----------
    rows : pandas.DataFrame
        The training rows (their ``cpu_id`` when present).
    platform : str
        Their platform.
    data_dir : str or Path, optional
        The data folder whose catalog is asked (default :data:`DATA_DIR`).
    campaign : str, optional
        The rows' file name without suffix: a benchmark of the same campaign comes first.
    rows_file : str or Path, optional
        The rows' file: where the catalog lists it, its campaign decides
        (:func:`find_benchmark`).
    kernel_bench, cache_probe : str, Path or pandas.DataFrame, optional
        A benchmark (and probe) chosen by the user (a file or its rows): checked against the
        rows' CPU the same way.

    Returns
    -------
    LatencyLawChoice
        ``kernel`` with the benchmark (and probe, if one is there) where one exists;
        ``roofline`` otherwise, with the reason ``"no operator benchmark of platform P in
        data/catalog.yaml: roofline law"`` (``in data/`` for a folder without a catalog).

    Raises
    ------
    ValueError
        The benchmark or probe names another CPU (``cpu_id``) than the rows: both ids named.
    """
    asked = data_dir if data_dir is not None else (
        None if Path(DATA_DIR) == SHIPPED_CATALOG.parent else DATA_DIR)  # None: the catalogs
    data_dir = Path(DATA_DIR if data_dir is None else data_dir)
    root = data_dir.parent
    if kernel_bench is None:
        bench = find_benchmark(platform, asked, campaign=campaign, rows_file=rows_file)
        if bench is None:
            if asked is None:
                sources = load_catalog().sources
                where = ", ".join(f"{p.parent.name}/{p.name}" if p == SHIPPED_CATALOG else str(p)
                                  for p in sources) or "no catalog"
            else:
                where = f"{data_dir.name}/" + ("catalog.yaml" if (data_dir / "catalog.yaml")
                                               .is_file() else "")
            return LatencyLawChoice("roofline", f"no operator benchmark of platform {platform} "
                                    f"in {where}: roofline law", root=root)
        probe = find_cache_probe(bench, platform)
        how = "found by platform"
    else:
        how = "given: --kernel-bench / kernel_bench"
        bench = None if isinstance(kernel_bench, pd.DataFrame) else Path(kernel_bench)
        probe = (None if cache_probe is None or isinstance(cache_probe, pd.DataFrame)
                 else Path(cache_probe))
    choice = LatencyLawChoice("kernel", "", bench, probe, root)

    rows_ids = cpu_ids(rows)
    given = ("" if bench is not None  # rows given: no file to name
             else f"given as rows ({len(kernel_bench)} timed operators)")
    bench_name = ("the operator benchmark " + given if bench is None
                  else (choice._rel(bench) or str(bench)))
    bench_ids = kernel_bench if bench is None else read_bench(bench)
    notes = [_check_cpu(rows_ids, bench_ids, platform, bench_name)]
    probe_ids = cache_probe if isinstance(cache_probe, pd.DataFrame) else pd.DataFrame()
    if probe is not None and probe.suffix == ".csv" and probe.is_file():
        try:
            probe_ids = pd.read_csv(probe)
        except Exception:  # noqa: BLE001 - the fit reads the probe and names what is wrong
            probe_ids = pd.DataFrame()
    if "cpu_id" in probe_ids.columns:
        probe_name = "the read-bandwidth probe given" if probe is None else (choice._rel(probe)
                                                                            or "")
        note = _check_cpu(rows_ids, probe_ids, platform, probe_name)
        if note not in notes:
            notes.append(note)
    with_probe = "" if probe is None else f" and read-bandwidth probe {choice._rel(probe)}"
    what = "operator benchmark " + (given if bench is None else choice._rel(bench))
    reason = (f"{what}{with_probe} of platform {platform} "
              f"({how}; {'; '.join(notes)}): kernel law")
    return LatencyLawChoice("kernel", reason, bench, probe, root)


def resolve_latency_law(rows: pd.DataFrame, law: str = "auto", *,
                        kernel_bench: str | Path | pd.DataFrame | None = None,
                        cache_probe: str | Path | pd.DataFrame | None = None,
                        rows_file: str | Path | None = None) -> LatencyLawChoice:
    """The latency law ``CARBRegressor(latency_law=law).fit(rows)`` uses, and why: the one place
    the choice is made (``carb fit`` fits through the estimator).

    ``"roofline"``: the roofline law. ``"kernel"``: the kernel law, its benchmark (when given)
    checked against the rows' CPU (:func:`choose_latency_law`). ``"auto"``: the platform is the
    one value of the rows' ``platform`` column (``status == "ok"`` rows, where the column is
    there); with one, :func:`choose_latency_law` decides (the catalogued benchmark, or the one
    given, checked against the rows' CPU); without a ``platform`` column, or with several
    platforms, the roofline law (a benchmark given is still used: the kernel law).

    Parameters
    ----------
    rows : pandas.DataFrame
        The training rows.
    law : {"auto", "roofline", "kernel"}, default="auto"
    kernel_bench, cache_probe : str, Path or pandas.DataFrame, optional
        A benchmark (and probe) chosen by the user.
    rows_file : str or Path, optional
        The file the rows were read from (``carb fit --data``): where the catalog lists it, the
        benchmark of its campaign comes first (:func:`find_benchmark`).

    Returns
    -------
    LatencyLawChoice

    Raises
    ------
    ValueError
        A benchmark or probe of another CPU than the rows' (one line naming both ids).
    """
    if law not in LATENCY_LAWS:
        raise ValueError(f"latency_law must be one of {' | '.join(LATENCY_LAWS)}, got {law!r}")
    if law == "roofline":
        return LatencyLawChoice("roofline", "latency_law 'roofline' given: roofline law")
    ok = rows
    if "status" in rows.columns:
        ok = rows[rows["status"].astype(str).eq("ok")]
    plats = (sorted(ok["platform"].dropna().astype(str).unique())
             if "platform" in ok.columns else [])
    if law == "kernel" and kernel_bench is None:
        return LatencyLawChoice("kernel", "latency_law 'kernel' given without a benchmark: the "
                                "rows' kernel_ms column: kernel law")
    if len(plats) != 1 and kernel_bench is None:
        why = ("the rows have no platform column" if "platform" not in ok.columns else
               f"the rows hold several platforms {plats}" if plats else
               "the rows name no platform")
        return LatencyLawChoice("roofline", f"{why}: no operator benchmark to look up: "
                                "roofline law")
    platform = plats[0] if len(plats) == 1 else " / ".join(plats) or "(none named)"
    if len(plats) == 1 and "platform" in ok.columns:
        ok = ok[ok["platform"].astype(str).eq(platform)]
    campaign = None if rows_file is None else Path(rows_file).name.split(".")[0]
    return choose_latency_law(ok, platform, campaign=campaign, rows_file=rows_file,
                              kernel_bench=kernel_bench, cache_probe=cache_probe)


def estimator_latency_law(est: Any, X: Any, rows_file: str | Path | None,
                          frame: bool) -> tuple[LatencyLawChoice, Any, Any]:
    """The latency law :meth:`carb_lib.ensemble.CARBRegressor.fit` fits ``X`` (a frame when
    ``frame``) with, by :func:`resolve_latency_law`, and the benchmark (its rows) and cache knee
    of its read-bandwidth probe to learn the kernel model from (None: none; a benchmark given is
    used as given). ``"auto"`` needs no look-up without a latency base law (array input,
    ``base=False``, no ``latency_ms`` target)."""
    law = est.latency_law
    if not frame:  # no named features, no base law
        choice = LatencyLawChoice("roofline" if law == "auto" else law,
                                  "array input: no latency base law")
    elif law == "auto" and (not est.base or "latency_ms" not in tuple(est.targets)):
        why = "base=False" if not est.base else "latency_ms is not a target"
        choice = LatencyLawChoice("roofline", f"{why}: no latency base law to choose")
    else:
        choice = resolve_latency_law(X, law, kernel_bench=est.kernel_bench,
                                     cache_probe=est.kernel_cache_probe, rows_file=rows_file)
    if choice.law != "kernel":
        return choice, None, None
    bench, probe = ((est.kernel_bench, est.kernel_cache_probe) if est.kernel_bench is not None
                    else (choice.kernel_bench, choice.cache_probe))
    if bench is None:  # the kernel law on the rows' own kernel_ms column
        return choice, None, None
    bench = bench if isinstance(bench, pd.DataFrame) else read_bench(bench)
    if probe is not None and not isinstance(probe, pd.DataFrame):
        probe = read_table(probe, "kernel_cache_probe")
    return choice, bench, None if probe is None else cache_knee(probe)
