"""scikit-learn's worker threads reset the process's warning filters (not thread-safe), so the
learners' filter for its per-tree ``delayed`` warning can be lost in a notebook kernel: the
message is also dropped where warnings are shown (carb_lib.ensemble.learners)."""

from __future__ import annotations

import subprocess
import sys

DELAYED = ("`sklearn.utils.parallel.delayed` should be used with "
           "`sklearn.utils.parallel.Parallel` to make it possible to propagate the scikit-learn "
           "configuration of the current thread to the joblib workers.")


def test_the_delayed_warning_stays_silent_after_the_filters_are_reset():
    code = (
        "import importlib, warnings\n"
        "import carb_lib.ensemble.learners as L\n"
        "hook = warnings.showwarning\n"
        "importlib.reload(L)\n"
        "assert warnings.showwarning is hook  # installed once\n"
        "warnings.resetwarnings()  # what racing scikit-learn worker threads can leave behind\n"
        f"warnings.warn({DELAYED!r}, UserWarning)\n"
        "warnings.warn('a warning that matters', UserWarning)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "a warning that matters" in proc.stderr
    assert "sklearn.utils.parallel.delayed" not in proc.stderr
