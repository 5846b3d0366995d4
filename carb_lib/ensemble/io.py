"""Persistence of a fitted :class:`~carb_lib.ensemble.CARBRegressor`: :func:`save_model` and
:func:`load_model`.

The model file holds ``{"metadata": ..., "model": ...}`` in skops' format (:mod:`skops.io`: a
zip of JSON and arrays, loaded without :mod:`pickle`, so that loading a file cannot run code it
holds). Only the types in :data:`TRUSTED_TYPES` are loaded: a file holding any other type
(tampered, or not written by :func:`save_model`) is refused with one line naming it. pandas
objects inside the model are stored as plain arrays (:func:`_encode`) and rebuilt on loading.

``<path>.json`` beside it repeats the metadata (feature list, feature set, platform, library
versions, a hash of the training data) for people and tools. :func:`load_model` refuses a model
whose features no longer match what this version builds, or that does not match the caller's
expected features or platform.

Model files of earlier versions are joblib (pickle) files: loading one can run any code it
holds, so :func:`load_model` reads them only with ``trust=True`` (``--trust`` on the command
line), for files the user wrote themselves.
"""

from __future__ import annotations

import copy
import hashlib
import json
import platform as _py_platform
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

import carb_lib.ensemble.matrix as matrix
from carb_lib.core.tables import atomic_write
from carb_lib.ensemble.estimator import CARBRegressor

if TYPE_CHECKING:
    from carb_lib.ensemble.estimator import CARBRegressor

__all__ = ["TRUSTED_TYPES", "ModelFileError", "is_model_file", "load_model", "save_model"]

#: The types, beyond skops' own defaults (numpy, builtins, scikit-learn's estimators), that a
#: CARB model file may hold. Loading refuses a file holding any other type.
TRUSTED_TYPES: tuple[str, ...] = (
    "carb_lib.ensemble.base_models.BaseLaw",
    "carb_lib.kernels.cache_probe.CacheKnee",
    "carb_lib.ensemble.estimator.CARBRegressor",
    "carb_lib.kernels.law.KernelModel",
    "collections.OrderedDict",
    "lightgbm.basic.Booster",
    "lightgbm.sklearn.LGBMRegressor",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
    "sklearn.tree._tree.Tree",
    "xgboost.core.Booster",
    "xgboost.sklearn.XGBRegressor",
)
#: The ``format`` field of a model file's metadata.
MODEL_FORMAT = "carb-model/2"
_PANDAS = "__carb_pandas__"


class ModelFileError(ValueError):
    """A model file cannot be loaded safely; the message names the file and why."""


def _plain(a: np.ndarray) -> Any:
    """An array skops stores without pickle (object arrays as lists of plain values)."""
    if a.dtype != object:
        return a
    return [v.item() if isinstance(v, np.generic) else v for v in a.tolist()]


def _encode(o: Any) -> Any:
    """``o`` with every pandas object replaced by plain arrays and lists (skops does not store
    pandas objects); the inverse is :func:`_decode`."""
    if isinstance(o, pd.DataFrame):
        return {_PANDAS: "frame", "columns": _encode(pd.Index(o.columns)),
                "index": _encode(o.index), "data": [_encode(o.iloc[:, i]) for i in range(o.shape[1])]}
    if isinstance(o, pd.Series):
        d: dict[str, Any] = {_PANDAS: "series", "name": o.name, "index": _encode(o.index)}
        if isinstance(o.dtype, pd.CategoricalDtype):
            d.update(kind="category", codes=o.cat.codes.to_numpy(),
                     categories=_encode(pd.Index(o.cat.categories)), ordered=bool(o.cat.ordered))
        elif pd.api.types.is_datetime64_any_dtype(o.dtype):  # e.g. a benchmark's measured_at
            tz = getattr(o.dt, "tz", None)
            naive = o if tz is None else o.dt.tz_convert("UTC").dt.tz_localize(None)
            d.update(kind="datetime", tz=None if tz is None else str(tz),
                     values=naive.to_numpy("datetime64[ns]").astype("int64"))
        else:
            d.update(kind=str(o.dtype), values=_plain(o.to_numpy()))
        return d
    if isinstance(o, pd.RangeIndex):
        return {_PANDAS: "range", "start": int(o.start), "stop": int(o.stop), "step": int(o.step),
                "name": o.name}
    if isinstance(o, pd.Index):
        return {_PANDAS: "index", "kind": str(o.dtype), "values": _plain(o.to_numpy()),
                "name": o.name}
    if type(o) is dict:
        return {k: _encode(v) for k, v in o.items()}
    if type(o) in (list, tuple):
        return type(o)(_encode(v) for v in o)
    if type(o).__module__.startswith("carb_lib") and hasattr(o, "__dict__"):
        c = copy.copy(o)
        vars(c).update({k: _encode(v) for k, v in vars(o).items()})
        return c
    return o


def _values(o: dict[str, Any]) -> np.ndarray:
    if o["kind"] == "object":
        return np.array(o["values"], dtype=object)
    return np.asarray(o["values"], dtype=o["kind"])


def _decode(o: Any) -> Any:
    """The inverse of :func:`_encode`."""
    if type(o) is dict:
        tag = o.get(_PANDAS)
        if tag is None:
            return {k: _decode(v) for k, v in o.items()}
        if tag == "frame":
            index = _decode(o["index"])
            df = pd.concat([_decode(c) for c in o["data"]], axis=1) if o["data"] else \
                pd.DataFrame(index=index)
            df.columns, df.index = _decode(o["columns"]), index
            return df
        if tag == "series":
            if o["kind"] == "category":
                values = pd.Categorical.from_codes(o["codes"], categories=_decode(o["categories"]),
                                                   ordered=o["ordered"])
                return pd.Series(values, index=_decode(o["index"]), name=o["name"])
            if o["kind"] == "datetime":  # int64 nanoseconds (UTC when tz-aware); NaT kept
                when = pd.to_datetime(np.asarray(o["values"], dtype="int64"), unit="ns")
                if o.get("tz") is not None:
                    when = when.tz_localize("UTC").tz_convert(o["tz"])
                return pd.Series(when, index=_decode(o["index"]), name=o["name"])
            return pd.Series(_values(o), index=_decode(o["index"]), name=o["name"])
        if tag == "range":
            return pd.RangeIndex(o["start"], o["stop"], o["step"], name=o["name"])
        if tag == "index":
            return pd.Index(_values(o), name=o["name"])
        raise ValueError(f"unknown stored object {tag!r}")
    if type(o) in (list, tuple):
        return type(o)(_decode(v) for v in o)
    if type(o).__module__.startswith("carb_lib") and hasattr(o, "__dict__"):
        vars(o).update({k: _decode(v) for k, v in vars(o).items()})
        return o
    return o


def is_model_file(path: str | Path) -> bool:
    """Whether ``path`` is a model file written by :func:`save_model` (read without loading
    the model: its metadata sidecar, or the skops archive's type list)."""
    path = Path(path)
    if not path.is_file():
        return False
    side = _meta_path(path)
    if side.is_file():
        try:
            if str(json.loads(side.read_text()).get("format", "")).startswith("carb-model/"):
                return True
        except (OSError, ValueError):
            pass
    if not zipfile.is_zipfile(path):
        return False
    try:
        import skops.io as sio

        return "carb_lib.ensemble.estimator.CARBRegressor" in sio.get_untrusted_types(file=path)
    except Exception:
        return False


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    import joblib
    import lightgbm
    import sklearn
    import skops
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
        "skops": skops.__version__,
    }


def _learners_meta(learners: Sequence[Any]) -> list[Any]:
    """The ``learners`` parameter in JSON values: a name stays a name, a ``(name, estimator)``
    pair is ``{"name", "class", "params"}`` (parameters other than numbers, strings, booleans
    and None as text)."""
    out: list[Any] = []
    for item in learners:
        if isinstance(item, str):
            out.append(item)
            continue
        name, est = item
        params = est.get_params(deep=False) if hasattr(est, "get_params") else {}
        out.append({"name": name, "class": f"{type(est).__module__}.{type(est).__qualname__}",
                    "params": {k: v if v is None or isinstance(v, (bool, int, float, str))
                               else repr(v) for k, v in params.items()}})
    return out


def _metadata(model: CARBRegressor) -> dict[str, Any]:
    return {
        "format": MODEL_FORMAT,
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
        # the latency law fitted and why (``latency_law="auto"`` chooses; models fitted before
        # the choice was stored: none)
        **getattr(model, "latency_law_choice_", {}),
        "params": {
            k: (_learners_meta(v) if k == "learners" else list(v) if isinstance(v, tuple) else
                f"<{len(v)} {'timed operators' if k == 'kernel_bench' else 'rows'}>"
                if isinstance(v, pd.DataFrame) else v)
            for k, v in model.get_params(deep=False).items()
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


def save_model(model: CARBRegressor, path: str | Path, backup: bool = False,
               extra: dict[str, Any] | None = None) -> Path:
    """Save a fitted model and its metadata to ``path`` (skops' format, loaded without pickle)
    and the metadata again to ``<path>.json``.

    Both files are written atomically (a temporary file in the same folder, renamed): a full
    disk or a crash leaves the previous model and its sidecar, never half a file.

    Parameters
    ----------
    model : CARBRegressor
        A fitted model.
    path : str or Path
    backup : bool
        Keep the previous ``path`` as ``<name>.bak``.
    extra : dict, optional
        More metadata keys (JSON values), e.g. ``carb fit``'s protocol and data files; the
        model's own keys win (among them the latency law fitted and why: ``latency_law``,
        ``latency_law_reason``, ``kernel_bench``, ``cache_probe``).

    Returns
    -------
    pathlib.Path
        The model path.
    """
    import skops.io as sio

    check_is_fitted(model)
    path = Path(path)
    meta = {**(extra or {}), **_metadata(model)}
    data = sio.dumps({"metadata": _encode(meta), "model": _encode(model)})
    # the sidecar names the model file it describes by its content (checked by load_model)
    side = json.dumps({**meta, MODEL_HASH: hashlib.sha256(data).hexdigest()}, indent=2,
                      default=str) + "\n"
    atomic_write(path, lambda fh: fh.write(data), backup=backup)
    atomic_write(_meta_path(path), lambda fh: fh.write(side.encode()), backup=backup)
    return path


#: The sidecar's key holding the SHA-256 of the model file it describes.
MODEL_HASH = "model_sha256"


def _check_sidecar(path: Path, side: Path, side_meta: dict[str, Any],
                   meta: dict[str, Any]) -> None:
    """The sidecar belongs to the model file: its ``model_sha256`` (sidecars written since
    2026-12-07) is the file's, and every other key equals the metadata inside the file.

    Raises
    ------
    ModelFileError
        Naming both files and the first key that differs.
    """
    want = side_meta.get(MODEL_HASH)
    if want is not None:
        have = hashlib.sha256(path.read_bytes()).hexdigest()
        if want != have:
            raise ModelFileError(f"{side} describes another model file than {path} (its "
                                 f"{MODEL_HASH} is not {path.name}'s): the two files do not "
                                 "belong together; remove the .json or save the model again")
    inside = json.loads(json.dumps(meta, default=str))
    for key in sorted((set(side_meta) | set(inside)) - {MODEL_HASH}):
        if want is None and key not in side_meta:
            continue  # an older sidecar lacks keys added since
        if side_meta.get(key) != inside.get(key):
            raise ModelFileError(f"{side} disagrees with {path} on {key!r}: it was edited or "
                                 "belongs to another model; remove the .json or save the model "
                                 "again")


def load_model(
    path: str | Path,
    expected_features: Sequence[str] | None = None,
    expected_platform: str | None = None,
    *,
    trust: bool = False,
    trusted: Sequence[str] = (),
) -> CARBRegressor:
    """Load a model saved by :func:`save_model` and refuse one whose features do not match.

    Checks, each a ``ValueError`` with the difference spelled out:

    * the file is a skops archive holding only :data:`TRUSTED_TYPES` (a
      :class:`ModelFileError` otherwise: nothing in the file is run); a joblib (pickle) file
      of an earlier version is read only with ``trust``;
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
    trust : bool
        Also read a joblib (pickle) model file of an earlier version. Loading a pickle file
        runs any code it holds: only for files you wrote yourself.
    trusted : sequence of str, default=()
        More types (``"module.Class"``) to load beyond :data:`TRUSTED_TYPES`: those of a
        learner given as a ``(name, estimator)`` pair that skops does not trust by default
        (the refusal names them). Only for files you wrote yourself.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no CARB model at {path}")
    if path.is_dir():
        raise ModelFileError(f"{path} is a folder, not a CARB model file")
    payload = _read_skops(path, trusted) if zipfile.is_zipfile(path) else _read_pickle(path, trust)
    if not isinstance(payload, dict) or "model" not in payload or "metadata" not in payload \
            or not isinstance(payload["model"], CARBRegressor):
        raise ModelFileError(f"{path} is not a CARB model file (written by carb fit / "
                             "carb_lib.ensemble.save_model)")
    model, meta = payload["model"], payload["metadata"]
    side = _meta_path(path)
    if side.exists():
        try:
            side_meta = json.loads(side.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ModelFileError(f"{side} (the metadata of {path.name}) is not readable JSON "
                                 f"({type(exc).__name__}: {exc}); remove it or save the model "
                                 "again") from None
        if not isinstance(side_meta, dict):
            raise ModelFileError(f"{side} (the metadata of {path.name}) is not a JSON object")
        _check_sidecar(path, side, side_meta, meta)
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


def _read_skops(path: Path, trusted: Sequence[str] = ()) -> Any:
    """The payload of a skops model file, refused (nothing loaded) if it holds a type outside
    :data:`TRUSTED_TYPES` and ``trusted``."""
    import skops.io as sio

    try:
        types = sio.get_untrusted_types(file=path)
    except Exception as exc:
        raise ModelFileError(f"{path} is not a readable CARB model file "
                             f"({type(exc).__name__}: {exc})") from None
    foreign = sorted(set(types) - set(TRUSTED_TYPES) - set(trusted))
    if foreign:
        raise ModelFileError(
            f"{path} refused: it holds types a CARB model never holds ({', '.join(foreign[:5])}"
            f"{', ...' if len(foreign) > 5 else ''}); it was not written by carb fit or was "
            "altered since, or a learner given as (name, estimator) holds them: then, for a file "
            "you wrote yourself, load_model(path, trusted=[...]) with those names")
    try:
        return _decode(sio.load(path, trusted=types))
    except Exception as exc:
        raise ModelFileError(f"{path} is not a readable CARB model file "
                             f"({type(exc).__name__}: {exc})") from None


def _read_pickle(path: Path, trust: bool) -> Any:
    """The payload of a joblib (pickle) model file of an earlier version: only with
    ``trust``, since unpickling runs any code the file holds."""
    if not trust:
        raise ModelFileError(
            f"{path} is not a CARB model file in the safe format (a model written by carb fit "
            "is a skops archive); if it is a joblib model you wrote yourself with an earlier "
            "version, load it with --trust (trust=True) and save it again: loading a "
            "joblib/pickle file runs any code it holds")
    import joblib

    try:
        return joblib.load(path)
    except Exception as exc:
        raise ModelFileError(f"{path} is not a CARB model file "
                             f"({type(exc).__name__}: {exc})") from None


def _diff(have: Sequence[str], want: Sequence[str], a: str, b: str) -> str:
    only_a = [c for c in have if c not in set(want)]
    only_b = [c for c in want if c not in set(have)]
    return f"only in {a}: {only_a}; only in {b}: {only_b}" + (
        "" if only_a or only_b else " (same names, different order)"
    )
