"""The one place that imports torchvision (the ``zoo`` extra: ``pip install 'carb_lib[zoo]'``).

CARB needs torchvision's *model definitions* only (pure Python, ``torchvision.models``), never
its C++ operators (``nms``, ``roi_align``: detection). A torchvision wheel built for another
torch (another version, or a CUDA build beside the CPU torch wheel) loads none of its operators,
and ``import torchvision`` then fails in ``torchvision/_meta_registrations.py`` with
``operator torchvision::nms does not exist``: that file registers fake (meta) kernels of the
detection operators unconditionally. :func:`import_torchvision` imports torchvision normally;
on that failure it imports it again with that one file replaced by an empty module, which
leaves every model definition intact (the detection operators stay unusable, as they were).

Any other failure, and a torchvision that is not installed, raise a
:class:`TorchvisionUnavailable` (an ``ImportError``) with one line saying what to install.
"""

from __future__ import annotations

import importlib
import logging
import sys
import types
import warnings
from typing import Any

logger = logging.getLogger(__name__)

#: torchvision release paired with each torch release (major.minor), from torchvision's
#: compatibility table; the Makefile installs the pair (``TORCHVISION_SPEC``).
TORCHVISION_FOR_TORCH: dict[str, str] = {
    "2.4": "0.19", "2.5": "0.20", "2.6": "0.21", "2.7": "0.22", "2.8": "0.23", "2.9": "0.24",
    "2.10": "0.25", "2.11": "0.26", "2.12": "0.27", "2.13": "0.28", "2.14": "0.29",
}  # fmt: skip
_MISMATCH = "torchvision::"  # the operator-registration failure names an operator of torchvision
_META_REGISTRATIONS = "torchvision._meta_registrations"
_STATE: dict[str, Any] = {"ops_skipped": False}


class TorchvisionUnavailable(ImportError):
    """torchvision is not installed or cannot be imported (one-line message)."""


def _torch_minor() -> str:
    import torch

    return ".".join(torch.__version__.split("+")[0].split(".")[:2])


def install_hint() -> str:
    """How to install the torchvision paired with this torch (``--no-deps``: the installed
    torch stays)."""
    tv = TORCHVISION_FOR_TORCH.get(_torch_minor())
    spec = f"torchvision=={tv}.*" if tv else "the torchvision paired with your torch"
    return (f"pip install --no-deps '{spec}' (or pip install 'carb_lib[zoo]'; torch "
            f"{_torch_minor()} pairs with torchvision {tv or '?'})")


def _forget_torchvision() -> None:
    for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
        del sys.modules[name]


def operators_skipped() -> bool:
    """True when torchvision was imported without its operator registrations (mismatch)."""
    return bool(_STATE["ops_skipped"])


def import_torchvision(_import: Any = None) -> types.ModuleType:
    """``torchvision`` with ``torchvision.models`` imported, whatever its C++ operators do.

    Parameters
    ----------
    _import : callable, optional
        The import function (``importlib.import_module``); tests pass one that fails.

    Raises
    ------
    TorchvisionUnavailable
        torchvision is not installed, or fails to import for another reason than its
        operators (the message names the error and the install command).
    """
    imp = _import or importlib.import_module
    done = sys.modules.get("torchvision")
    if _import is None and done is not None and "torchvision.models" in sys.modules:
        return done
    try:
        tv = imp("torchvision")
    except ModuleNotFoundError as exc:
        if exc.name not in (None, "torchvision"):
            raise TorchvisionUnavailable(f"torchvision cannot be imported: {exc}") from None
        raise TorchvisionUnavailable(f"torchvision is not installed: {install_hint()}") from None
    except Exception as exc:  # noqa: BLE001 - any failure of a third-party import is reported
        if _MISMATCH not in str(exc):
            raise TorchvisionUnavailable(
                f"torchvision cannot be imported ({type(exc).__name__}: "
                f"{' '.join(str(exc).split())[:200]}); {install_hint()}") from None
        _forget_torchvision()
        sys.modules[_META_REGISTRATIONS] = types.ModuleType(_META_REGISTRATIONS)
        try:
            tv = imp("torchvision")
        except Exception as exc2:  # noqa: BLE001
            _forget_torchvision()
            raise TorchvisionUnavailable(
                f"torchvision cannot be imported, even without its C++ operators "
                f"({type(exc2).__name__}: {' '.join(str(exc2).split())[:200]}); "
                f"{install_hint()}") from None
        _STATE["ops_skipped"] = True
        logger.debug("torchvision %s imported without its C++ operators (%s): they do not match "
                     "torch %s; the model definitions need none of them",
                     getattr(tv, "__version__", "?"), exc, _torch_minor())
    imp("torchvision.models")
    # GoogLeNet and Inception v3 warn at every build that their default initialisation will
    # change: CARB never uses the initial weights
    warnings.filterwarnings("ignore", message="The default weight initialization of",
                            category=FutureWarning)
    return tv


__all__ = ["TORCHVISION_FOR_TORCH", "TorchvisionUnavailable", "import_torchvision",
           "install_hint", "operators_skipped"]
