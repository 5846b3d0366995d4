"""A stand-in predictor with the screening interface of ``carb_lib.ensemble.CARBRegressor``.

SYNTHETIC: closed-form costs from static features, not fitted to any measurement. Used by the
screening tests and, where no fitted model is given, by the screening benchmark.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from carb_lib.core.vocab import TARGETS

_Z90 = 1.6448536269514722  # z(0.9): ``rel`` is the half-width at 90 % coverage


def _z(coverage: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + coverage / 2)


class StandInPredictor:
    """``predict`` / ``predict_interval`` from ``flops``, ``param_bytes``, ``peak_act_bytes``.

    Intervals are multiplicative: ``exp(+-rel * z(coverage) / z(0.9))`` around the point, so a
    higher coverage gives wider intervals and the upper bound is never below the point.
    """

    def __init__(self, platform: str = "synthetic_gpu", targets=TARGETS,
                 feature_set: str = "static", rel: float = 0.15) -> None:
        self.platform_ = platform
        self.targets_ = list(targets)
        self.feature_set = feature_set
        self.rel = rel
        self.feature_names_in_ = np.array(["batch", "precision", "flops", "param_bytes",
                                           "peak_act_bytes"], dtype=object)

    def predict(self, df: pd.DataFrame) -> pd.DataFrame:
        flops = df["flops"].to_numpy(dtype=float)
        fp16 = (df["precision"].astype(str) == "fp16").to_numpy()
        mem = (df["param_bytes"].to_numpy(dtype=float)
               + df["peak_act_bytes"].to_numpy(dtype=float)) / 2**20 + 16.0
        lat = 0.05 + flops / 2e10 * np.where(fp16, 0.6, 1.0)
        energy = lat * 1e-3 * 250.0
        out = {"peak_mem_mib": mem, "energy_j": energy, "latency_ms": lat}
        return pd.DataFrame({t: out[t] for t in self.targets_}, index=df.index)

    def predict_interval(self, df: pd.DataFrame, coverage: float = 0.9) -> pd.DataFrame:
        p = self.predict(df)
        f = np.exp(self.rel * _z(coverage) / _Z90)
        cols = {}
        for t in self.targets_:
            cols[t] = p[t].to_numpy()
            cols[f"{t}_lo"] = cols[t] / f
            cols[f"{t}_hi"] = cols[t] * f
        return pd.DataFrame(cols, index=df.index)
