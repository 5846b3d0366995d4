"""A fitted model and its transfer model, each for the rows it serves.

``carb fit`` stores, beside a model that encodes families (``feature_set="static"``), a
*transfer model* fitted on the same rows with the family-agnostic ``shared`` features
(``transfer_model_``). :class:`FamilyRouter` predicts with the main model the rows of families
the fit held and with the transfer model every other row (another design family, a torchvision
network or a user's module), and says how many rows each served (:meth:`FamilyRouter.served`).
A model without a transfer model is used as it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from carb_lib.core.vocab import EXTRA_STATIC_FEATURES
from carb_lib.dataset.features import fill_static_features

__all__ = ["FamilyRouter", "routed"]


class FamilyRouter:
    """``predict`` and ``predict_interval`` of ``model`` for rows of the families it was fitted
    on, of ``model.transfer_model_`` for the others; every other attribute is ``model``'s.

    Examples
    --------
    >>> class M:
    ...     families_ = ["resnet"]
    ...     def predict(self, X):
    ...         return pd.DataFrame({"latency_ms": np.ones(len(X))}, index=X.index)
    >>> class T(M):
    ...     def predict(self, X):
    ...         return pd.DataFrame({"latency_ms": np.full(len(X), 2.0)}, index=X.index)
    >>> m = M(); m.transfer_model_ = T()
    >>> r = FamilyRouter(m)
    >>> r.predict(pd.DataFrame({"family": ["resnet", "module"]}))["latency_ms"].tolist()
    [1.0, 2.0]
    >>> r.served
    {'main': 1, 'transfer': 1}
    """

    def __init__(self, model: Any) -> None:
        self._model = model
        self._transfer = getattr(model, "transfer_model_", None)
        self.served: dict[str, int] = {"main": 0, "transfer": 0}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def transfer_rows(self, X: pd.DataFrame) -> np.ndarray:
        """Rows of ``X`` the transfer model serves (their family was not in the fit)."""
        if self._transfer is None or "family" not in getattr(X, "columns", ()):
            return np.zeros(len(X), dtype=bool)
        known = {str(f) for f in (getattr(self._model, "families_", None) or [])}
        return ~X["family"].astype(str).isin(known).to_numpy()

    def _route(self, method: str, X: Any, *args: Any, **kwargs: Any) -> Any:
        other = self.transfer_rows(X)
        self.served = {"main": int((~other).sum()), "transfer": int(other.sum())}
        if not other.any():
            return getattr(self._model, method)(X, *args, **kwargs)

        Xt = fill_static_features(X.loc[other], EXTRA_STATIC_FEATURES)
        got_t = getattr(self._transfer, method)(Xt, *args, **kwargs)
        if other.all():
            return got_t
        got_m = getattr(self._model, method)(X.loc[~other], *args, **kwargs)
        if isinstance(got_m, pd.DataFrame):
            return pd.concat([got_m, got_t.reindex(columns=got_m.columns)]).loc[X.index]
        out = np.empty(len(X), dtype=float)
        out[~other], out[other] = np.asarray(got_m, float), np.asarray(got_t, float)
        return out

    def predict(self, X: Any, *args: Any, **kwargs: Any) -> Any:
        return self._route("predict", X, *args, **kwargs)

    def predict_interval(self, X: Any, *args: Any, **kwargs: Any) -> Any:
        return self._route("predict_interval", X, *args, **kwargs)

    def served_line(self) -> str:
        """One line: rows per model of the last prediction."""
        fams = list(getattr(self._model, "families_", None) or [])
        return (f"models: {self.served['main']} row(s) by the fitted model (families {fams}), "
                f"{self.served['transfer']} by its transfer model (shared features: families "
                "the fit did not hold)")


def routed(model: Any) -> Any:
    """``model`` wrapped in a :class:`FamilyRouter` where it carries a transfer model."""
    return FamilyRouter(model) if getattr(model, "transfer_model_", None) is not None else model
