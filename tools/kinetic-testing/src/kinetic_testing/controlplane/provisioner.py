"""A stand-in for GKE's autoscaler answering ProvisioningRequests, driven by the test.

Kueue's provisioning admission check makes one ProvisioningRequest per attempt of a workload
(``autoscaling.x-k8s.io/v1``) and admits the workload once the request is ``Provisioned``.
GKE's autoscaler (queued provisioning) first sets ``Accepted``, then ``Provisioned`` when it
has created every node at once, or ``Failed``; a request whose nodes are taken back later gets
``CapacityRevoked``. Here the test says which, when: the nodes a request would bring exist
already (the node agent's flex-start pool), so setting ``Provisioned`` is what admits the job.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cluster import ControlPlane

__all__ = ["StandInProvisioner"]

_API = "/apis/autoscaling.x-k8s.io/v1"
_WAIT_S = 30.0


class StandInProvisioner:
    """Answers the ProvisioningRequests of one namespace."""

    def __init__(self, plane: ControlPlane, namespace: str) -> None:
        self._plane = plane
        self._path = f"{_API}/namespaces/{namespace}/provisioningrequests"

    def names(self) -> list[str]:
        """The requests of the namespace, oldest first."""
        listing = self._plane.request("GET", self._path)
        items = sorted(listing["items"], key=lambda r: r["metadata"]["creationTimestamp"])
        return [item["metadata"]["name"] for item in items]

    def next_request(self, after: tuple[str, ...] = ()) -> str:
        """The name of the first request not in ``after``, once Kueue has made it."""
        deadline = time.monotonic() + _WAIT_S
        while True:
            fresh = [name for name in self.names() if name not in after]
            if fresh:
                return fresh[0]
            assert time.monotonic() < deadline, f"no ProvisioningRequest in {self._path}"
            time.sleep(0.05)

    def read(self, name: str) -> dict[str, Any]:
        return dict(self._plane.request("GET", f"{self._path}/{name}"))

    def accept(self, name: str) -> None:
        """GKE has queued the request: it waits for capacity."""
        self._set(name, ("Accepted", "True", "Accepted", "Provisioning Request was accepted"))

    def provision(self, name: str) -> None:
        """Every node of the request exists: Kueue admits the workload."""
        self._set(
            name,
            ("Accepted", "True", "Accepted", "Provisioning Request was accepted"),
            ("Provisioned", "True", "Provisioned", "Provisioning Request was provisioned"),
        )

    def fail(self, name: str, message: str) -> None:
        """GKE gave up on the request (no capacity in time, a quota, a bad shape)."""
        self._set(name, ("Failed", "True", "FailedToProvision", message))

    def revoke(self, name: str, message: str) -> None:
        """The request's nodes are taken back (its run time is over, or GKE reclaimed them)."""
        self._set(name, ("CapacityRevoked", "True", "CapacityRevoked", message))

    def _set(self, name: str, *conditions: tuple[str, str, str, str]) -> None:
        """Write ``conditions`` (type, status, reason, message) over those of the same type."""
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        found = self.read(name)
        status = found.setdefault("status", {})
        kept = [
            c
            for c in status.get("conditions") or []
            if c["type"] not in {t for t, *_ in conditions}
        ]
        status["conditions"] = kept + [
            {"type": kind, "status": value, "reason": reason, "message": message,
             "lastTransitionTime": now, "observedGeneration": found["metadata"]["generation"]}
            for kind, value, reason, message in conditions
        ]  # fmt: skip
        self._plane.request("PUT", f"{self._path}/{name}/status", found)
