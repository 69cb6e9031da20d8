"""A Python stand-in for kube-scheduler and kubelet, for tests against a real control plane.

:class:`NodeAgent` registers fake GKE-like Nodes, binds pending pods that fit them, runs each
pod's container command as a local process, reports pod status as a kubelet would, serves
``pods/log``, and injects the faults a GKE cluster produces (see ``agent.py``).
"""

from .agent import NodeAgent
from .env import base_host_env
from .faults import PodFault
from .nodes import NodeSpec, cpu_node, default_nodes, gpu_node, tpu_nodes

__all__ = [
    "NodeAgent",
    "NodeSpec",
    "PodFault",
    "base_host_env",
    "cpu_node",
    "default_nodes",
    "gpu_node",
    "tpu_nodes",
]
