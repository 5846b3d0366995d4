"""Measurement settings for tests about bookkeeping, signals and scale-out, not timing.

Short windows (one warm-up, two timed iterations, 10 ms), and the interference detector off
(it has its own tests in ``test_interference.py``). ``FAST_SETTINGS`` are ``Protocol`` fields:
``Protocol(threads=1, **FAST_SETTINGS)`` in process, ``json.dumps(FAST_SETTINGS)`` for
``carb profile --protocol``.
"""

#: The interference detector's thresholds, set so that no window is ever rejected.
NO_DETECTOR = {"min_cpu_share": 0.0, "max_other_busy": 1e9, "max_window_spread": 1e9}
#: Short windows with the detector off.
FAST_SETTINGS = {"cpu_warmup_iters": 1, "cpu_min_iters": 2, "cpu_min_window_s": 0.01,
                 **NO_DETECTOR}
