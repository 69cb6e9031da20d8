"""A Kueue queue of one test's own over pools' flavors, made as ``kinetic up`` makes them
(``kinetic_gke.provision.kueue_objects``) on the session's real control plane.

The ClusterQueue and its LocalQueue are the test's, and its ClusterQueue goes with it (the
LocalQueue goes with the test's namespace). The flavors, admission checks and priority classes
are named by their pools, so tests on other workers share them: they are made once and kept,
since deleting one under a test that is using it would leave that test's queue inactive.
"""

import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from kinetic_gke.pools import Autoprovisioning, PoolInfo
from kinetic_gke.provision.kueue_objects import kueue_objects
from kinetic_gke.provision.kueue_queues import PLURALS
from kinetic_gke.provision.queue_shares import QueueShares
from kinetic_protocol.queueing import DEFAULT_QUEUE
from kinetic_testing.controlplane.cluster import ControlPlane

__all__ = ["KUEUE", "own_queue"]

KUEUE = "/apis/kueue.x-k8s.io/v1beta2"


@contextmanager
def own_queue(plane: ControlPlane, namespace: str, pools: Sequence[PoolInfo]) -> Iterator[str]:
    """The name of a new queue over ``pools``' flavors, with one unit of quota each."""
    name = f"cq-{uuid.uuid4().hex[:8]}"
    objects, _ = kueue_objects(
        list(pools), Autoprovisioning(), QueueShares.of([(name, 1)]), namespace, {}
    )
    queues = []
    for obj in objects:
        kind, path = obj["kind"], f"{KUEUE}/{PLURALS[obj['kind']]}"
        if obj["metadata"]["name"] == DEFAULT_QUEUE:
            continue  # always made by `kinetic up`; the session has its own
        if kind == "LocalQueue":
            plane.request("POST", f"{KUEUE}/namespaces/{namespace}/localqueues", obj)
        elif kind == "ClusterQueue":
            plane.request("POST", path, obj)
            queues.append(f"{path}/{obj['metadata']['name']}")
        else:
            plane.post_or_get(path, obj)
    try:
        yield name
    finally:
        for path in queues:
            plane.request("DELETE", path)
