"""Fake Nodes shaped like GKE node pools, so our backend's pod specs schedule as on GKE.

The labels, taints and extended resources are the ones ``kinetic_gke.scheduling`` asks for:
GPU pools carry ``cloud.google.com/gke-accelerator`` and a ``nvidia.com/gpu`` taint, TPU pools
``cloud.google.com/gke-tpu-accelerator`` / ``-topology`` and a ``google.com/tpu`` taint, spot
pools ``cloud.google.com/gke-spot=true`` with the matching taint, and a flex-start pool
``kinetic.dev/flex-start=true`` with its taint (the nodes a provisioning request would get: here
they exist from the start, and only a job Kueue admitted through its request lands there).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "NodeSpec",
    "cpu_node",
    "default_nodes",
    "gpu_node",
    "node_manifest",
    "ready_condition",
    "tpu_nodes",
]

GPU_RESOURCE = "nvidia.com/gpu"
TPU_RESOURCE = "google.com/tpu"
SPOT_LABEL = "cloud.google.com/gke-spot"
FLEX_START_LABEL = "kinetic.dev/flex-start"
_CPU_CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}


@dataclass(frozen=True)
class NodeSpec:
    """One fake Node: its name, labels, capacity (== allocatable) and taints."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    capacity: Mapping[str, str] = field(default_factory=lambda: dict(_CPU_CAPACITY))
    taints: tuple[Mapping[str, str], ...] = ()


def _taint(key: str, value: str = "present") -> dict[str, str]:
    return {"key": key, "value": value, "effect": "NoSchedule"}


def _pool(name: str, pool: str, spot: bool, extra: Mapping[str, str]) -> dict[str, str]:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "cloud.google.com/gke-nodepool": pool,
        **extra,
    }
    if spot:
        labels[SPOT_LABEL] = "true"
    return labels


def _spot_taints(spot: bool) -> tuple[dict[str, str], ...]:
    return (_taint(SPOT_LABEL, "true"),) if spot else ()


def cpu_node(name: str = "cpu-0", *, spot: bool = False, pool: str = "cpu-pool") -> NodeSpec:
    """An e2-standard-8-like node; with ``spot`` it carries GKE's spot label and taint."""
    return NodeSpec(name, _pool(name, pool, spot, {}), dict(_CPU_CAPACITY), _spot_taints(spot))


def gpu_node(
    name: str = "gpu-l4-0",
    *,
    accelerator: str = "nvidia-l4",
    count: int = 4,
    vcpus: int = 48,
    memory_gib: int = 192,
    spot: bool = False,
    flex_start: bool = False,
    pool: str = "gpu-l4-pool",
) -> NodeSpec:
    """A GPU node (default: g2-standard-48, 4 L4s) with the GPU taint.

    Size it as the machine GKE uses: ``kinetic_gke.machines`` requests 3/4 of that machine's
    vCPUs and memory for a pod, so a smaller node would reject our backend's pods.
    """
    labels = _pool(name, pool, spot, {"cloud.google.com/gke-accelerator": accelerator})
    capacity = {
        **_CPU_CAPACITY,
        "cpu": str(vcpus),
        "memory": f"{memory_gib}Gi",
        GPU_RESOURCE: str(count),
    }
    taints = (_taint(GPU_RESOURCE), *_spot_taints(spot))
    if flex_start:
        labels[FLEX_START_LABEL] = "true"
        taints += (_taint(FLEX_START_LABEL, "true"),)
    return NodeSpec(name, labels, capacity, taints)


def tpu_nodes(
    pool: str,
    *,
    accelerator: str = "tpu-v5-lite-podslice",
    topology: str = "2x4",
    chips_per_host: int = 8,
    hosts: int = 1,
    vcpus: int = 224,
    memory_gib: int = 384,
    spot: bool = False,
    machine_type: str = "ct5lp-hightpu-8t",
) -> list[NodeSpec]:
    """The ``hosts`` nodes of one TPU slice node pool (one node per TPU VM host).

    Default size: ct5lp-hightpu-8t; pass the host machine's type, vCPUs and memory for others.
    """
    nodes = []
    for index in range(hosts):
        name = f"{pool}-{index}"
        labels = _pool(
            name,
            pool,
            spot,
            {
                "cloud.google.com/gke-tpu-accelerator": accelerator,
                "cloud.google.com/gke-tpu-topology": topology,
                "node.kubernetes.io/instance-type": machine_type,
            },
        )
        capacity = {
            **_CPU_CAPACITY,
            "cpu": str(vcpus),
            "memory": f"{memory_gib}Gi",
            TPU_RESOURCE: str(chips_per_host),
        }
        nodes.append(NodeSpec(name, labels, capacity, (_taint(TPU_RESOURCE), *_spot_taints(spot))))
    return nodes


def default_nodes() -> list[NodeSpec]:
    """One node per pool kind the tests use: every catalogue accelerator in tests schedules.

    cpu (and a spot cpu), gpu-l4 x1/x2/x4 (4 L4s, plus a spot L4 node and a flex-start one of
    one L4), gpu-t4 (one T4), v5e
    single-host 1x1, 2x2 and 2x4, and the multi-host v5e slices 2x4 (four pools of 2 hosts of 4
    chips) and 4x4 (4 hosts).
    """
    host_4t = functools.partial(
        tpu_nodes, chips_per_host=4, vcpus=112, memory_gib=192, machine_type="ct5lp-hightpu-4t"
    )
    return [
        cpu_node("cpu-0"),
        cpu_node("cpu-spot-0", spot=True, pool="cpu-spot-pool"),
        gpu_node("gpu-l4-0"),
        gpu_node("gpu-l4-spot-0", spot=True, pool="gpu-l4-spot-pool"),
        gpu_node("gpu-l4-flex-0", count=1, flex_start=True, pool="gpu-l4-flex-pool"),
        # One T4 (n1-standard-4): a second GPU family member for fallback lists of one GPU.
        gpu_node(
            "gpu-t4-0",
            accelerator="nvidia-tesla-t4",
            count=1,
            vcpus=4,
            memory_gib=15,
            pool="gpu-t4-pool",
        ),
        # ct5lp-hightpu-1t / -4t / -8t hosts, as kinetic_gke.machines sizes them.
        *tpu_nodes(
            "tpu-v5e-1x1",
            topology="1x1",
            chips_per_host=1,
            vcpus=24,
            memory_gib=48,
            machine_type="ct5lp-hightpu-1t",
        ),
        *host_4t("tpu-v5e-2x2", topology="2x2"),
        *tpu_nodes("tpu-v5e-2x4", topology="2x4", chips_per_host=8),
        # Four 2-host slices, so scenarios can run several multi-host jobs at once.
        *(n for pool in "abcd" for n in host_4t(f"tpu-v5e-2x4-{pool}", topology="2x4", hosts=2)),
        *host_4t("tpu-v5e-4x4", topology="4x4", hosts=4),
    ]


def ready_condition(now: str, ready: bool = True) -> dict[str, Any]:
    """The Node's Ready condition, as a kubelet (or the lifecycle controller) reports it."""
    if ready:
        status, reason, message = "True", "KubeletReady", "kubelet is posting ready status"
    else:
        status, reason, message = (
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        )
    return {
        "type": "Ready",
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def node_manifest(spec: NodeSpec, log_port: int, now: str) -> dict[str, Any]:
    """The Node object a kubelet registers, with its log endpoint and full status."""
    capacity = dict(spec.capacity)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": spec.name, "labels": dict(spec.labels)},
        "spec": {"taints": [dict(t) for t in spec.taints]},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [ready_condition(now)],
            # No Hostname address: the apiserver prefers it for pods/log and cannot resolve it.
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": log_port}},
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "",
                "containerRuntimeVersion": "kinetic-nodeagent://0",
                "kernelVersion": "",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.36.3",
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "Kinetic node agent",
                "systemUUID": "",
            },
        },
    }
