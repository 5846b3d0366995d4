"""Workload characterization: how energy, latency and peak memory scale with the workload
(:mod:`carb_lib.characterize.scaling`), the data it reads
(:mod:`carb_lib.characterize.scaling_data`) and the paper's characterization claims tested on
a dataset (:mod:`carb_lib.characterize.scaling_claims`).
"""
