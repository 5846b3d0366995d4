import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(autouse=True, scope="session")
def _torch_threads():
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover
        pass
