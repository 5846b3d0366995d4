"""The result of a screening: the scored table, the shortlist, the funnel and its summary."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from carb_lib.core.safe_io import check_outputs, table_bytes, write_set
from carb_lib.screening.budgets import DeploymentSpec

__all__ = ["ScreeningResult", "check_shortlist_outs", "shortlist_paths", "tightest_budget"]


@dataclass
class ScreeningResult:
    """Everything a screening produced.

    Attributes
    ----------
    spec : DeploymentSpec
    table : pandas.DataFrame
        One row per scored candidate: ``config_id``, config columns, predictions ``{t}``,
        ``{t}_lo``, ``{t}_hi``, per-sample metrics used, ``ok_<budget metric>``, ``within_budget``,
        ``first_failing_budget``, ``on_front``, ``shortlist_rank`` (-1 outside).
    shortlist : pandas.DataFrame
        The ``k`` (or fewer) selected rows of ``table``, in rank order.
    counts : dict
        The funnel: ``candidates``, ``after_cross_platform``, ``eliminated_stage1``,
        ``survivors``, ``front``, ``shortlist``.
    budget_report : pandas.DataFrame
        Per budget: ``n_fail`` (all failing it), ``n_first_fail``, ``n_only_fail``,
        ``min_upper`` (the best upper bound among candidates), ``limit``.
    timings_s : dict
        Seconds per stage.
    notes : list of str
        Human-readable remarks (capacity proxy, tightest budget, ...).
    extra : dict
        More JSON-ready keys of the summary (``carb screen`` adds the protocol its model
        predicts for and the host calibration).
    """

    spec: DeploymentSpec
    table: pd.DataFrame
    shortlist: pd.DataFrame
    counts: dict[str, int]
    budget_report: pd.DataFrame
    timings_s: dict[str, float]
    notes: list[str] = field(default_factory=list)
    platform: str | None = None
    platform_a: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def front(self) -> pd.DataFrame:
        return self.table[self.table["on_front"]]

    @property
    def tightest_budget(self) -> str | None:
        """The budget failed by most candidates (None without budgets)."""
        if self.budget_report.empty:
            return None
        return tightest_budget(self.budget_report)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary: spec, funnel, per-budget eliminations, times, notes."""
        return {
            "spec": self.spec.describe(),
            "platform": self.platform,
            "platform_a": self.platform_a,
            "counts": dict(self.counts),
            "eliminated_fraction_to_front": 1 - self.counts["front"] / self.counts["candidates"],
            "eliminated_fraction_to_shortlist": (1 - self.counts["shortlist"]
                                                 / self.counts["candidates"]),
            "budgets": {
                str(b): {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                         for k, v in row.items()}
                for b, row in self.budget_report.iterrows()
            },
            "tightest_budget": self.tightest_budget,
            "timings_s": {k: round(v, 6) for k, v in self.timings_s.items()},
            "notes": list(self.notes),
            **self.extra,
        }

    def summary_text(self) -> str:
        """The summary as a few printable lines."""
        c, t = self.counts, self.timings_s
        s = self.spec.describe()
        lines = [
            f"screening on {self.platform or '?'}"
            + (f" (ranked first on {self.platform_a})" if self.platform_a else ""),
            f"  objectives: {', '.join(s['objectives'])}; coverage {s['coverage']:.2f}; "
            f"shortlist k={s['k']} by {s['shortlist_method']}",
            f"  candidates            {c['candidates']:>10,}",
        ]
        if self.platform_a:
            lines.append(f"  kept by A-ranking     {c['after_cross_platform']:>10,}")
        lines += [
            f"  eliminated, stage 1   {c['eliminated_stage1']:>10,}  (upper bound over a budget)",
            f"  survivors             {c['survivors']:>10,}",
            f"  Pareto front          {c['front']:>10,}",
            f"  shortlist             {c['shortlist']:>10,}",
        ]
        for b, row in self.budget_report.iterrows():
            lines.append(
                f"    {b:<34} fails {int(row['n_fail']):>9,}  first {int(row['n_first_fail']):>9,}"
                f"  only {int(row['n_only_fail']):>9,}"
            )
        lines.append("  time per stage: "
                     + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in t.items()))
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def write(self, out: str | Path, full_table: bool = False,
              backup: bool | Iterable[str | Path] = False) -> list[Path]:
        """Write the shortlist to ``out`` (.csv or .parquet), the front beside it
        (``<stem>_front``), the summary as ``<stem>_summary.json`` and, if ``full_table``,
        every scored candidate (``<stem>_all``): all or none of them
        (:func:`carb_lib.core.safe_io.write_set`: the summary and tables are made before the
        first file is written), keeping a numbered backup of the files in ``backup`` (every
        existing one with ``backup=True``)."""
        paths = shortlist_paths(out, full_table)
        out = paths[0]
        frames = [self.shortlist, self.front] + ([self.table] if full_table else [])
        text = json.dumps(self.summary(), indent=2, default=str)
        files = {p: table_bytes(f, p) for p, f in zip(paths[:2] + paths[3:], frames, strict=True)}
        files[paths[2]] = text
        write_set({p: files[p] for p in paths}, backup)
        return paths


def tightest_budget(report: pd.DataFrame) -> str | None:
    """The budget of a budget report that removes the most candidates; among budgets that
    remove as many, the one whose limit is lowest against the lowest predicted bound
    (``limit / min_upper``): of ``latency_ms<=10`` and ``latency_ms<=5`` failed by all, the
    second."""
    if report.empty:
        return None
    ratio = (pd.to_numeric(report["limit"], errors="coerce")
             / pd.to_numeric(report["min_upper"], errors="coerce"))
    order = pd.DataFrame({"n_fail": report["n_fail"].to_numpy(),
                          "ratio": ratio.fillna(math.inf).to_numpy()})
    best = order.sort_values(["n_fail", "ratio"], ascending=[False, True], kind="stable").index[0]
    return str(report.index[best])


def shortlist_paths(out: str | Path, full_table: bool = False) -> list[Path]:
    """The files a shortlist ``out`` is written as: ``out``, ``<stem>_front``,
    ``<stem>_summary.json`` (and ``<stem>_all`` with ``full_table``)."""
    out = Path(out)
    if out.suffix not in (".csv", ".parquet"):
        raise ValueError(f"output must end in .csv or .parquet, got {out.name!r}")
    paths = [out, out.with_name(f"{out.stem}_front{out.suffix}"),
             out.with_name(f"{out.stem}_summary.json")]
    if full_table:
        paths.append(out.with_name(f"{out.stem}_all{out.suffix}"))
    return paths


def check_shortlist_outs(out: str | Path, force: bool, command: str = "carb screen", *,
                         inputs: Iterable[tuple[str, str | Path | None]] = (),
                         extra: Iterable[str | Path] = ()) -> set[Path]:
    """The output rule (:mod:`carb_lib.core.safe_io`) for a shortlist and its companions
    (``_front``, ``_summary.json``, and ``extra`` files such as ``_hardware.csv``): an earlier
    shortlist is recognised by its ``_summary.json`` (a JSON object with ``counts`` and
    ``spec``); anything else is refused unless ``force``. Returns the files to back up."""
    paths = shortlist_paths(out)
    summary = paths[2]

    def own(_path: Path) -> bool:
        data = json.loads(summary.read_text())
        return isinstance(data, dict) and {"counts", "spec"} <= set(data)

    return check_outputs([*paths, *extra], "--out", inputs=list(inputs), own=own, force=force,
                         command=command)
