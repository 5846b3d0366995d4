"""The kernel characterization: every operator a network runs, timed alone, predicted and
summed (:mod:`carb_lib.kernels.law`); what an operator is and the sampler that draws them,
the per-network operator lists and the inventory of every operator a network dispatches
(:mod:`carb_lib.kernels.inventory`: what the law sums and what it leaves out), anchor
operators re-timed in every campaign, the cache probe, probe networks, chains timed against
their parts (:mod:`carb_lib.kernels.chains`), a network's own calls recorded on ``meta``
(:mod:`carb_lib.kernels.calls`), timed once, cached and summed, a network or a screen of
design-space candidates (:mod:`carb_lib.kernels.replay`), the composition law over those sums
fitted on the host (:mod:`carb_lib.kernels.composition`), and the checks of the law's
assumption. Private helpers live in :mod:`carb_lib.kernels._memory`.
"""
