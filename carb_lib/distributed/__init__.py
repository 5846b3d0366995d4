"""Campaigns and screening on a Dask cluster (the optional extra ``carb_lib[dask]``).

A lab measures on many GPUs at once and a screening study can outgrow one machine. This
package runs both on an existing distributed engine, Dask, from a laptop's ``LocalCluster``
to a multi-GPU workstation (``dask-cuda``) to a SLURM cluster (``dask-jobqueue``), with the
guarantees of the local path:

``cluster``
    :func:`parse_cluster_spec` and :func:`open_cluster`: ``--cluster local:N | cuda |
    slurm:FILE.yaml | tcp://host:port`` to a ``distributed.Client`` (dashboard link logged,
    client and cluster closed on exit or Ctrl-C); CPU workers pinned to one core each.
``profile``
    :func:`run_cluster_campaign`: configs dispatched as tasks, measured on the workers with
    the unchanged protocol (:func:`carb_lib.measure.profiling.profile_config`), written by the client
    as the local campaign's atomic part files (resume, merge and de-duplication unchanged).
``screen``
    :func:`screen_on_cluster`: candidates generated or read in partitions, stage 1 per
    partition on the workers, only stage-2 candidates collected; the shortlist equals
    :func:`carb_lib.screening.screen` on the same candidates.

Dask is imported lazily: importing this package (and everything else in ``carb_lib``)
works without it; using a cluster without it raises one ``ImportError`` line naming the
extra to install.
"""

from __future__ import annotations

from carb_lib.distributed.cluster import (
    ClusterSpec,
    ClusterSpecError,
    ClusterUnavailableError,
    open_cluster,
    parse_cluster_spec,
    require_dask,
)
from carb_lib.distributed.profile import ClusterCampaignResult, run_cluster_campaign
from carb_lib.distributed.screen import extended_partitions, screen_on_cluster

__all__ = [
    "ClusterCampaignResult",
    "ClusterSpec",
    "ClusterSpecError",
    "ClusterUnavailableError",
    "extended_partitions",
    "open_cluster",
    "parse_cluster_spec",
    "require_dask",
    "run_cluster_campaign",
    "screen_on_cluster",
]
