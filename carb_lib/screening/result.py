"""The result of a screening: the scored table, the shortlist, the funnel and its summary."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from carb_lib.screening.budgets import DeploymentSpec

__all__ = ["ScreeningResult"]


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

    @property
    def front(self) -> pd.DataFrame:
        return self.table[self.table["on_front"]]

    @property
    def tightest_budget(self) -> str | None:
        """The budget failed by most candidates (None without budgets)."""
        if self.budget_report.empty:
            return None
        return str(self.budget_report.sort_values("n_fail", ascending=False).index[0])

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
                b: {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                    for k, v in row.items()}
                for b, row in self.budget_report.to_dict(orient="index").items()
            },
            "tightest_budget": self.tightest_budget,
            "timings_s": {k: round(v, 6) for k, v in self.timings_s.items()},
            "notes": list(self.notes),
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

    def write(self, out: str | Path, full_table: bool = False, backup: bool = False) -> list[Path]:
        """Write the shortlist to ``out`` (.csv or .parquet), the front beside it
        (``<stem>_front``), the summary as ``<stem>_summary.json`` and, if ``full_table``,
        every scored candidate (``<stem>_all``); each file atomically, keeping the previous
        version as ``<name>.bak`` with ``backup``."""
        from carb_lib.core.tables import atomic_write, write_table

        out = Path(out)
        if out.suffix not in (".csv", ".parquet"):
            raise ValueError(f"output must end in .csv or .parquet, got {out.name!r}")
        out.parent.mkdir(parents=True, exist_ok=True)
        paths = [out, out.with_name(f"{out.stem}_front{out.suffix}"),
                 out.with_name(f"{out.stem}_summary.json")]
        frames = [self.shortlist, self.front]
        if full_table:
            paths.append(out.with_name(f"{out.stem}_all{out.suffix}"))
            frames.append(self.table)
        for p, f in zip(paths[:2] + paths[3:], frames, strict=True):
            write_table(f, p, backup=backup)
        text = json.dumps(self.summary(), indent=2, default=str)
        atomic_write(paths[2], lambda fh: fh.write(text.encode()), backup=backup)
        return paths
