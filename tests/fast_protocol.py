"""Measurement settings for tests about bookkeeping, signals and scale-out, not timing.

Short windows (one warm-up, two timed iterations, 10 ms), and the interference detector off
(it has its own tests in ``test_interference.py``). ``FAST_SETTINGS`` are ``Protocol`` fields:
``Protocol(threads=1, **FAST_SETTINGS)`` in process, ``json.dumps(FAST_SETTINGS)`` for
``carb profile --protocol``.
"""

from carb_lib.measure.protocol import DETECTOR_OFF

#: The interference detector's thresholds, set so that no window is ever rejected.
NO_DETECTOR = dict(DETECTOR_OFF)
#: Short windows with the detector off.
FAST_SETTINGS = {"cpu_warmup_iters": 1, "cpu_min_iters": 2, "cpu_min_window_s": 0.01,
                 **NO_DETECTOR}
