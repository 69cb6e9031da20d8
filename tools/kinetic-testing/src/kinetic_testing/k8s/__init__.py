"""A Kubernetes API simulator for Kinetic's GKE and Pathways backends' tests.

`KubernetesSimulator` serves batch/v1 Jobs, core/v1 Pods (with logs) and
leaderworkerset.x-k8s.io/v1 LeaderWorkerSets to the official `kubernetes` client, runs each
pod's command as a local process, validates bodies with `kubernetes-validate`, and injects
faults (`ImagePullFailure`, `Unschedulable`, `Eviction`, `Preemption`, `NodeLoss`, `OOMKill`,
`SlowApi`, `ApiFailure`).
"""

from .faults import (
    ApiFailure,
    ApiFault,
    Eviction,
    Fault,
    ImagePullFailure,
    NodeLoss,
    OOMKill,
    PodFault,
    Preemption,
    SlowApi,
    Unschedulable,
)
from .selectors import LabelSelector, SelectorError
from .server import RecordedRequest
from .simulator import KubernetesSimulator
from .validation import ValidationFailure

__all__ = [
    "ApiFailure",
    "ApiFault",
    "Eviction",
    "Fault",
    "ImagePullFailure",
    "KubernetesSimulator",
    "LabelSelector",
    "NodeLoss",
    "OOMKill",
    "PodFault",
    "Preemption",
    "RecordedRequest",
    "SelectorError",
    "SlowApi",
    "Unschedulable",
    "ValidationFailure",
]
