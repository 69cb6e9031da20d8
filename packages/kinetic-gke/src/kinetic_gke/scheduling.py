"""How an accelerator is asked for on GKE: node selectors, tolerations and resource limits."""

from typing import Any

from kinetic_gke.machines import pod_requests
from kinetic_protocol import Accelerator

__all__ = ["FLEX_START_LABEL", "RESERVATION_LABEL", "SPOT_LABEL", "Scheduling", "scheduling_for"]

GPU_RESOURCE = "nvidia.com/gpu"
TPU_RESOURCE = "google.com/tpu"
SPOT_LABEL = "cloud.google.com/gke-spot"
RESERVATION_LABEL = "kinetic.dev/reservation"
"""On the nodes of a pool ``kinetic pool add --reservation NAME`` made, as a label (value
NAME) and a NoSchedule taint, so that only jobs that asked for the reservation land there."""
FLEX_START_LABEL = "kinetic.dev/flex-start"
"""On the nodes of a pool ``kinetic pool add --flex-start`` made (queued provisioning), as a
label and a NoSchedule taint (value ``true``): only flex-start jobs, admitted through their
provisioning request, land there, and Kueue gives the pool a flavor of its own."""
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


class Scheduling:
    """The pod-spec fragments that place a job on the right nodes."""

    def __init__(self) -> None:
        self.node_selector: dict[str, str] = {}
        self.tolerations: list[dict[str, Any]] = []
        self.limits: dict[str, str] = {}
        self.requests: dict[str, str] = {}


def _toleration(key: str, value: str | None = None) -> dict[str, Any]:
    if value is None:
        return {"key": key, "operator": "Exists", "effect": "NoSchedule"}
    return {"key": key, "operator": "Equal", "value": value, "effect": "NoSchedule"}


def scheduling_for(
    accelerator: Accelerator,
    *,
    spot: bool = False,
    reservation: str = "",
    flex_start: bool = False,
    cpu: str | None = None,
    memory: str | None = None,
) -> Scheduling:
    """GKE's scheduling terms for ``accelerator`` (one host's share, for a multi-host slice).

    CPU and memory are requested too (see :mod:`kinetic_gke.machines`); ``cpu`` / ``memory``
    override the defaults. ``spot``, ``reservation`` (a reservation's name) or ``flex_start``
    pins the kind of capacity; none: on-demand nodes, which carry none of their taints.
    """
    placed = Scheduling()
    placed.requests.update(pod_requests(accelerator))
    if cpu:
        placed.requests["cpu"] = cpu
    if memory:
        placed.requests["memory"] = memory
    if accelerator.category == "gpu":
        placed.node_selector["cloud.google.com/gke-accelerator"] = accelerator.k8s_accelerator
        placed.limits[GPU_RESOURCE] = str(accelerator.count)
        placed.requests[GPU_RESOURCE] = str(accelerator.count)
        placed.tolerations.append(_toleration(GPU_RESOURCE))
    elif accelerator.category == "tpu":
        placed.node_selector["cloud.google.com/gke-tpu-accelerator"] = accelerator.k8s_accelerator
        placed.node_selector["cloud.google.com/gke-tpu-topology"] = accelerator.topology
        if accelerator.machine_type:  # one topology can be one 8-chip host or two 4-chip ones
            placed.node_selector[INSTANCE_TYPE_LABEL] = accelerator.machine_type
        placed.limits[TPU_RESOURCE] = str(accelerator.chips_per_host)
        placed.requests[TPU_RESOURCE] = str(accelerator.chips_per_host)
        placed.tolerations.append(_toleration(TPU_RESOURCE))
    if spot:
        placed.node_selector[SPOT_LABEL] = "true"
        placed.tolerations.append(_toleration(SPOT_LABEL, "true"))
    if reservation:
        placed.node_selector[RESERVATION_LABEL] = reservation
        placed.tolerations.append(_toleration(RESERVATION_LABEL, reservation))
    if flex_start:
        placed.node_selector[FLEX_START_LABEL] = "true"
        placed.tolerations.append(_toleration(FLEX_START_LABEL, "true"))
    return placed
