"""What every stage shares: the vocabulary (targets, column groups, units), accuracy metrics,
the one table reader/writer, the safe-write rule for output files, and the claims table.

Nothing here imports another stage of carb_lib.
"""
