"""The measuring instrument: devices and their telemetry, the measurement protocol, one
config's profile, interference detection, the C heap and allocator counters, campaigns (their
part files, passes, noise study, lock and wall-clock watchdog), the audit that re-measures a
dataset, and the one-shot GPU campaign (``python -m carb_lib.measure.gpu_campaign``).
"""
