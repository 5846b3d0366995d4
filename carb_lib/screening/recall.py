"""How much of the front of *measured* costs a screening finds (:func:`front_recall`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from carb_lib.families.zoo import zoo_table
from carb_lib.screening.pareto import pareto_front


def front_recall(result: Any, measured: pd.DataFrame) -> dict[str, Any]:
    """How much of the *measured* Pareto front a screening of the same networks finds.

    The budgets and objectives of ``result.spec`` are applied to the measured costs of
    ``measured`` (zoo rows of the screened batch and precision, with the quality column of the
    spec); a row is named by network and resolution.

    Returns
    -------
    dict
        ``true_front`` and ``predicted_front`` (names), ``recall`` (share of the true front on
        the predicted front), ``shortlist_on_true_front`` (share of the shortlist on it).
    """
    spec = result.spec
    m = measured.copy()
    if spec.quality and spec.quality not in m.columns:
        acc = zoo_table(sorted(m["network"].unique())).set_index("network")[spec.quality]
        m[spec.quality] = acc.loc[m["network"]].to_numpy()
    ok = np.ones(len(m), bool)
    for b in spec.budgets:
        ok &= m[b.metric].to_numpy(float) <= b.limit
    m = m[ok]
    cols, senses = [], []
    for o in spec.objectives:
        cols.append(o.column)
        senses.append(o.sense)
    if spec.quality and spec.quality not in cols:
        cols.append(spec.quality)
        senses.append("max")

    def names(df: pd.DataFrame) -> set[str]:
        return {f"{n}@{int(r)}" for n, r in zip(df["network"], df["resolution"], strict=True)}

    true = names(m[pareto_front(m[cols].to_numpy(float), senses)]) if len(m) else set()
    pred = names(result.front) if len(result.front) else set()
    short = names(result.shortlist) if len(result.shortlist) else set()
    return dict(true_front=sorted(true), predicted_front=sorted(pred),
                recall=len(true & pred) / len(true) if true else float("nan"),
                shortlist_on_true_front=len(short & true) / len(short) if short else float("nan"))
