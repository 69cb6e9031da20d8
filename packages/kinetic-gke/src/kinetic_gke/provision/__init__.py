"""Cluster set-up: ``kinetic up``, ``down`` and ``pool add/remove`` as plans read from the
cloud and applied step by step (:mod:`kinetic_gke.provision.engine`).

One module per kind of resource: ``cloud`` (APIs, bucket, registry, service accounts and
roles), ``cluster`` (the GKE cluster), ``pools`` (its node pools), ``incluster`` (namespace,
service account, LeaderWorkerSet, GPU driver). The Google client libraries are imported only
when a plan is made.
"""

from __future__ import annotations

from kinetic_gke.provision.clients import GoogleClients
from kinetic_gke.provision.cluster import get_cluster
from kinetic_gke.provision.engine import Plan, Report, Step, apply
from kinetic_gke.provision.pools import PoolRequest, plan_pool, unplan_pool
from kinetic_gke.provision.spec import ClusterSpec
from kinetic_gke.provision.up import down_plan, up_plan

__all__ = [
    "ClusterSpec",
    "GoogleClients",
    "Plan",
    "PoolRequest",
    "Report",
    "Step",
    "apply",
    "down_plan",
    "get_cluster",
    "plan_pool",
    "unplan_pool",
    "up_plan",
]
