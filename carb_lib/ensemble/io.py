"""Persistence of a fitted :class:`~carb_lib.ensemble.CARBRegressor`: :func:`save_model` and
:func:`load_model`.

The model file is a joblib payload ``{"metadata": ..., "model": ...}``; ``<path>.json`` beside
it repeats the metadata (feature list, feature set, platform, library versions, a hash of the
training data) for people and tools. :func:`load_model` refuses a model whose features no longer
match what this version builds, or that does not match the caller's expected features or
platform.
"""

from __future__ import annotations

import json
import platform as _py_platform
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

import carb_lib.ensemble.matrix as matrix

if TYPE_CHECKING:
    from carb_lib.ensemble.estimator import CARBRegressor

__all__ = ["load_model", "save_model"]


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    import joblib
    import lightgbm
    import sklearn
    import xgboost

    try:
        carb_version = version("carb_lib")
    except PackageNotFoundError:  # pragma: no cover - source checkout without install
        carb_version = "unknown"

    return {
        "carb_lib": carb_version,
        "python": _py_platform.python_version(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "scikit-learn": sklearn.__version__,
        "xgboost": xgboost.__version__,
        "lightgbm": lightgbm.__version__,
        "joblib": joblib.__version__,
    }


def _metadata(model: CARBRegressor) -> dict[str, Any]:
    return {
        "format": "carb-model/1",
        "class": type(model).__name__,
        "input_mode": model.input_mode_,
        "feature_set": model.feature_set,
        "feature_names_in": [str(c) for c in model.feature_names_in_]
        if hasattr(model, "feature_names_in_")
        else None,
        "base_features": list(model.base_features_),
        "targets": list(model.targets_),
        "skipped_targets": list(model.skipped_targets_),
        "platform": model.platform_,
        "training_data_hash": model.training_data_hash_,
        "n_train": int(model.n_train_),
        "blend": model.blend,
        "blend_weights": model.blend_weights_,
        "base_constants": model.base_constants().to_dict(orient="records"),
        "conformal_method": model.conformal_method_,
        "params": {
            k: (list(v) if isinstance(v, tuple) else
                f"<{len(v)} {'timed operators' if k == 'kernel_bench' else 'rows'}>"
                if isinstance(v, pd.DataFrame) else v)
            for k, v in model.get_params().items()
        },
        "kernel_model": (
            {"platform": model.kernel_model_.platform_, "n_ops": model.kernel_model_.n_ops_,
             "cache": (None if getattr(model.kernel_model_, "cache", None) is None else
                       {**vars(model.kernel_model_.cache), "traffic": model.kernel_model_.traffic})}
            if hasattr(model, "kernel_model_") else None
        ),
        "versions": _versions(),
    }


def _meta_path(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def save_model(model: CARBRegressor, path: str | Path) -> Path:
    """Save a fitted model to ``path`` (joblib) and its metadata to ``<path>.json``.

    Returns
    -------
    pathlib.Path
        The model path.
    """
    import joblib

    check_is_fitted(model)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = _metadata(model)
    joblib.dump({"metadata": meta, "model": model}, path)
    _meta_path(path).write_text(json.dumps(meta, indent=2, default=str) + "\n")
    return path


def load_model(
    path: str | Path,
    expected_features: Sequence[str] | None = None,
    expected_platform: str | None = None,
) -> CARBRegressor:
    """Load a model saved by :func:`save_model` and refuse one whose features do not match.

    Checks, each a ``ValueError`` with the difference spelled out:

    * the JSON sidecar (if present) agrees with the metadata inside the model file;
    * every stored model-matrix column is still built by this version of
      :func:`model_matrix` for the model's feature set (the model predicts from those columns
      only, so families registered since saving add columns without breaking it);
    * ``expected_features`` (if given) equals the model's input columns
      (``feature_names_in_``) or its model-matrix columns (``base_features_``);
    * ``expected_platform`` (if given) equals the model's ``platform_``.

    Library versions that differ from the saving ones give a warning.

    Parameters
    ----------
    path : str or Path
    expected_features : sequence of str, optional
    expected_platform : str, optional
    """
    import joblib

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no CARB model at {path}")
    payload = joblib.load(path)
    if not isinstance(payload, dict) or "model" not in payload or "metadata" not in payload:
        raise ValueError(f"{path} is not a CARB model file written by carb_lib.ensemble.save_model")
    model, meta = payload["model"], payload["metadata"]
    side = _meta_path(path)
    if side.exists():
        side_meta = json.loads(side.read_text())
        for key in (
            "feature_set",
            "feature_names_in",
            "base_features",
            "targets",
            "platform",
            "training_data_hash",
        ):
            if side_meta.get(key) != meta.get(key):
                raise ValueError(
                    f"{side} disagrees with {path} on {key!r}: {side_meta.get(key)!r} vs "
                    f"{meta.get(key)!r} (the two files do not belong together)"
                )
    if meta.get("input_mode") == "frame":
        current = matrix.model_matrix_columns(meta["feature_set"])
        if not set(meta["base_features"]) <= set(current):
            raise ValueError(
                f"model {path} was trained on model-matrix columns that this carb_lib no longer "
                f"builds for feature_set={meta['feature_set']!r}: "
                + _diff(meta["base_features"], current, "model", "current")
            )
    if expected_features is not None:
        exp = [str(c) for c in expected_features]
        options = {
            "input columns": meta.get("feature_names_in") or [],
            "model-matrix columns": list(meta["base_features"]),
        }
        if not any(sorted(exp) == sorted(v) for v in options.values()):
            raise ValueError(
                f"model {path} does not match the expected features: "
                + _diff(options["input columns"], exp, "model", "expected")
            )
    if expected_platform is not None and meta.get("platform") != expected_platform:
        raise ValueError(
            f"model {path} was trained on platform {meta.get('platform')!r}, expected "
            f"{expected_platform!r}: energy and latency models do not transfer across platforms"
        )
    now = _versions()
    changed = {k: (v, now.get(k)) for k, v in meta.get("versions", {}).items() if now.get(k) != v}
    changed.pop("python", None)
    if changed:
        warnings.warn(
            f"model {path} was saved with other library versions: {changed}",
            UserWarning,
            stacklevel=2,
        )
    return model


def _diff(have: Sequence[str], want: Sequence[str], a: str, b: str) -> str:
    only_a = [c for c in have if c not in set(want)]
    only_b = [c for c in want if c not in set(have)]
    return f"only in {a}: {only_a}; only in {b}: {only_b}" + (
        "" if only_a or only_b else " (same names, different order)"
    )
