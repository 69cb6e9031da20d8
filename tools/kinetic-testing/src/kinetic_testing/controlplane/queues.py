"""The Kueue objects a test cluster starts with, as ``kinetic up`` would make them: one flavor,
one cluster queue with room for everything the tests run, Kinetic's priority classes, and the
default LocalQueue in each test's namespace. Tests of queueing make scarcer queues of their own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kinetic_protocol.queueing import DEFAULT_PRIORITY_CLASSES, DEFAULT_QUEUE

if TYPE_CHECKING:
    from .cluster import ControlPlane

__all__ = [
    "ROOMY",
    "ROOMY_CLUSTER_QUEUE",
    "cluster_queue",
    "local_queue",
    "make_namespace_queue",
    "make_session_queues",
    "resource_flavor",
]

API = "/apis/kueue.x-k8s.io/v1beta2"
ROOMY_CLUSTER_QUEUE = "kinetic-test"
"""The cluster queue of every test namespace's default LocalQueue: never the reason to wait."""
FLAVOR = "default-flavor"
ROOMY = {
    "cpu": "100000",
    "memory": "400Ti",
    "ephemeral-storage": "1000Ti",
    "nvidia.com/gpu": "1000",
    "google.com/tpu": "1000",
}
"""A quota no test's pods reach (10,000 pods of a benchmark included): a cluster queue with it
never makes a workload wait, unless a test narrows one resource of it."""


def resource_flavor(name: str = FLAVOR, node_labels: dict[str, str] | None = None) -> Any:
    spec = {"nodeLabels": node_labels} if node_labels else {}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": spec,
    }


def cluster_queue(name: str, quota: dict[str, str], *, flavor: str = FLAVOR) -> Any:
    """A ClusterQueue for every namespace, covering ``quota``'s resources in one flavor, where
    a workload of a higher priority preempts lower ones."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [
                {
                    "coveredResources": sorted(quota),
                    "flavors": [
                        {
                            "name": flavor,
                            "resources": [
                                {"name": name, "nominalQuota": amount}
                                for name, amount in sorted(quota.items())
                            ],
                        }
                    ],
                }
            ],
        },
    }


def local_queue(namespace: str, name: str, cluster_queue_name: str) -> Any:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue_name},
    }


def make_session_queues(plane: ControlPlane) -> None:
    """The flavor, the roomy cluster queue and the priority classes, once per plane."""
    plane.post_or_get(f"{API}/resourceflavors", resource_flavor())
    plane.post_or_get(f"{API}/clusterqueues", cluster_queue(ROOMY_CLUSTER_QUEUE, ROOMY))
    for name, value in DEFAULT_PRIORITY_CLASSES.items():
        plane.post_or_get(
            f"{API}/workloadpriorityclasses",
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )


def make_namespace_queue(
    plane: ControlPlane,
    namespace: str,
    name: str = DEFAULT_QUEUE,
    cluster_queue_name: str = ROOMY_CLUSTER_QUEUE,
) -> None:
    plane.request(
        "POST",
        f"{API}/namespaces/{namespace}/localqueues",
        local_queue(namespace, name, cluster_queue_name),
    )
