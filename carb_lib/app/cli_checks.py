"""Checks the ``carb`` commands run before any work: a model's ``--out``, a ``--coverage``
the model can honour, and ``--module`` built under a wall-clock cap. (The rule for output
paths itself is :mod:`carb_lib.core.safe_io`.)"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from carb_lib.core.vocab import coverage_value
from carb_lib.dataset.catalog import DESIGN, load_catalog
from carb_lib.measure.campaign_folder import check_campaign_folder

__all__ = ["check_campaign_start", "check_cluster_options", "check_threads_available", "check_coverage", "check_model_out", "check_platform_name", "check_platform_threads",
           "check_shipped_threads", "module_configs_capped"]

#: A platform name: it names folders and files (``data/<platform>/<campaign>/``, file names).
PLATFORM_NAME = r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}"


def check_platform_name(platform: str | None, option: str = "--platform") -> None:
    """Refuse a ``--platform`` that cannot name a file: empty, with a ``/``, starting with a
    dot (``../x``) or holding other characters than letters, digits, ``_ . + -``."""
    import re

    if platform is not None and not re.fullmatch(PLATFORM_NAME, platform):
        raise ValueError(f"{option} {platform!r}: a platform name is 1-128 letters, digits, "
                         "'_', '.', '+' or '-', starting with a letter or digit (it names "
                         "folders such as data/<platform>/)")


def module_configs_capped(module: str | None, input_shape: str | None, module_kwargs: str,
                          batches: str, precisions: str, timeout_s: float) -> Any:
    """The configs of ``--module`` (None without it), built and run once under a wall-clock
    cap of ``timeout_s`` (:mod:`carb_lib.measure.watchdog`): a network whose build or forward never
    returns is one error line, not a hang."""
    from carb_lib.families.module import cli_configs
    from carb_lib.measure.protocol import ConfigTimeoutError
    from carb_lib.measure.watchdog import exits_trapped, wall_clock_cap

    if module is None:
        return cli_configs(module, input_shape, module_kwargs, batches, precisions)
    try:
        with (wall_clock_cap(timeout_s, f"building and running --module {module}"),
              exits_trapped(f"--module {module}")):
            return cli_configs(module, input_shape, module_kwargs, batches, precisions)
    except ConfigTimeoutError:
        raise ConfigTimeoutError(f"--module {module}: building it and running it once took "
                                 f"more than --timeout-s {timeout_s:g} s (a forward that never "
                                 "returns?)") from None


def check_coverage(model: Any, coverage: float, path: Path) -> None:
    """``--coverage`` that the model's calibration scores can honour: with n scores the
    highest finite split-conformal bound is at coverage n / (n + 1); above it the intervals
    would be [0, inf].

    Raises
    ------
    ValueError
        Naming the coverage, the scores it needs and the model file.
    """
    coverage_value(coverage, "--coverage")
    scores = getattr(model, "conformal_scores_", None) or {}
    sizes = [len(s) for groups in scores.values() for s in groups.values()]
    if not sizes:
        return
    n = min(sizes)
    if coverage > n / (n + 1):
        need = math.ceil(coverage / (1 - coverage) - 1e-9)
        raise ValueError(f"--coverage {coverage} needs at least {need} calibration scores per "
                         f"target; model {path} has {n} (its highest coverage is "
                         f"{n / (n + 1):.3f}): lower --coverage or fit on more rows")


def check_model_out(out: Path, force: bool, inputs: list[tuple[str, Path | None]]) -> bool:
    """``fit --out``: the rule of :mod:`carb_lib.core.safe_io` for the model file and its metadata
    file; returns whether the write keeps a backup."""
    from carb_lib.core.safe_io import check_output
    from carb_lib.ensemble import is_model_file

    def is_sidecar(path: Path) -> bool:
        return str(json.loads(path.read_text()).get("format", "")).startswith("carb-model/")

    backup = check_output(out, "--out", inputs=inputs, own=is_model_file, force=force,
                          command="carb fit")
    check_output(out.with_name(out.name + ".json"), "--out (its metadata file)", inputs=inputs,
                 own=is_sidecar, force=force, command="carb fit")  # fmt: skip
    return backup


def check_platform_threads(platform: str | None, threads: int | None, device: str) -> None:
    """``profile --platform NAME_<k>t`` on the CPU: the campaign times with ``k`` threads
    (``--threads``, else PyTorch's default), or the rows would carry a name that says another
    thread count than the one they were timed with.

    Raises
    ------
    ValueError
        Naming the platform, both thread counts and the option to pass.
    """
    import re

    found = re.search(r"_(\d+)t$", platform or "")
    if found is None or not str(device).startswith("cpu"):
        return
    import torch

    named = int(found.group(1))
    used = threads if threads is not None else torch.get_num_threads()
    if used != named:
        how = "--threads" if threads is not None else "PyTorch's default, no --threads given"
        raise ValueError(f"--platform {platform} names {named} thread(s) but this campaign would "
                         f"time with {used} ({how}): pass --threads {named}, or name the "
                         "platform after the threads it is timed with")


def check_shipped_threads(platform: str | None, threads: int | None, device: str,
                          root: Path | None = None) -> None:
    """``profile --platform P`` on the CPU, where the catalog holds rows of ``P`` (its design
    campaign's rows files, :mod:`carb_lib.dataset.catalog`): the campaign times with the thread
    count those rows were timed with, or its rows would join the platform's with another thread
    count under the same name.

    Parameters
    ----------
    root : Path, optional
        A repository whose ``data/catalog.yaml`` is asked in place of the shipped catalog (the
        user catalogs extend either).

    Raises
    ------
    ValueError
        Naming the platform, the file, both thread counts and the option to pass.
    """
    if platform is None or not str(device).startswith("cpu"):
        return
    import pyarrow.parquet as pq

    cat = load_catalog(shipped=None if root is None else Path(root) / "data" / "catalog.yaml")
    for entry in cat.entries(platform, DESIGN, "rows"):
        f = entry.path
        if not f.is_file() or "threads" not in pq.read_schema(f).names:
            continue
        table = pq.read_table(f, columns=["threads"]).column("threads").to_pylist()
        recorded = sorted({int(t) for t in table if t is not None})
        if not recorded:
            continue
        import torch

        used = threads if threads is not None else torch.get_num_threads()
        if used not in recorded:
            how = "--threads" if threads is not None else "PyTorch's default, no --threads given"
            shown = f"{entry.root.name}/{entry.rel}"
            raise ValueError(f"--platform {platform}: its rows in {shown} were timed "
                             f"with {'/'.join(map(str, recorded))} thread(s) but this campaign "
                             f"would time with {used} ({how}): pass --threads {recorded[0]}, or "
                             "give the campaign its own --platform")


def check_cluster_options(cluster: str, timeout_s: float, device: str, max_tries: int,
                          chunk_size: int) -> None:
    """``carb profile --cluster``: check the cluster options before anything is read or
    started."""
    from carb_lib.distributed import parse_cluster_spec, require_dask

    spec = parse_cluster_spec(cluster)
    if spec.kind == "cuda" and device != "cuda":
        raise ValueError(f"--cluster cuda runs one worker per GPU: pass --device cuda, not {device!r}")
    for name, value in (("--max-tries", max_tries), ("--chunk-size", chunk_size)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if not timeout_s > 0:
        raise ValueError(f"--cluster-timeout-s must be > 0 seconds, got {timeout_s}")
    require_dask()


def check_threads_available(threads: int | None, option: str = "--threads") -> None:
    """A thread count no larger than the CPUs this process may run on
    (``os.sched_getaffinity``): more threads than CPUs time contention, not the network.

    Raises
    ------
    ValueError
        Naming the option, the count and the CPUs available.
    """
    import os

    if threads is None:
        return
    try:
        n_cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - no affinity on this system
        n_cpus = os.cpu_count() or 1
    if threads > n_cpus:
        raise ValueError(f"{option} {threads}: this process may use {n_cpus} CPU(s); timing "
                         f"{threads} threads on them measures contention: pass --threads "
                         f"{n_cpus} or fewer")


def check_campaign_start(out: Path, protocol: Any, *, platform: str | None, device: str,
                         threads: int | None, shard: str | None) -> dict[str, Any]:
    """``carb profile``: every check of the options and of the ``--out`` folder that can be
    made before anything is written (device, shard, thread count, the folder's place and
    identity: :mod:`carb_lib.measure.campaign_folder`). Returns the campaign's identity (the
    protocol with its thread count resolved), for ``protocol.json``."""
    import re

    from carb_lib.core.safe_io import check_folder
    from carb_lib.measure.campaign_parts import parse_shard

    if not re.fullmatch(r"cpu|cuda(:\d+)?", str(device)):
        raise ValueError(f"--device {device}: unknown; use cpu, cuda or cuda:N")
    parse_shard(shard)
    check_threads_available(threads)
    check_folder(out, "--out", command="carb profile", create=False)
    import torch

    used = threads if threads is not None else int(torch.get_num_threads())
    identity = {**protocol.to_dict(), "threads": used}
    check_campaign_folder(out, identity, platform=platform, threads=used,
                          cpu=str(device).startswith("cpu"),
                          how="--threads" if threads is not None else "PyTorch's default")
    return identity
