"""A Kubernetes API simulator for Kinetic's GKE and Pathways backends' tests.

`KubernetesSimulator` serves batch/v1 Jobs, core/v1 Pods (with logs) and
leaderworkerset.x-k8s.io/v1 LeaderWorkerSets to the official `kubernetes` client, runs each
pod's command as a local process, validates bodies with `kubernetes-validate`, and injects
faults (`ImagePullFailure`, `Unschedulable`, `Eviction`, `Preemption`, `NodeLoss`, `OOMKill`,
`SlowApi`, `ApiFailure`). The `k8s_sim` pytest fixture lives in `kinetic_testing.k8s.fixtures`.

Where it knowingly differs from a real cluster (each difference fails loudly, not silently):

- Verbs: create, get, list (label/field selectors, `limit`/`continue`), delete and
  delete-collection. `watch`, PUT and PATCH answer 400/405 with a message saying so.
- Pods run only their first container's `command` + `args` (an image's entrypoint cannot run:
  a container without `command` fails with `StartError`); other containers copy its state and
  log nothing. `workingDir` must exist on this machine. Secrets and config maps do not exist.
- LeaderWorkerSet leaders run once (a real LWS restarts them); workers run no process and
  mirror the leader. The LWS has no published schema: its shape is checked by hand and its pod
  templates against the core PodTemplate schema.
- Job retry back-off is `job_backoff_seconds` (default 0, not 10 s doubling) so tests stay fast.
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
