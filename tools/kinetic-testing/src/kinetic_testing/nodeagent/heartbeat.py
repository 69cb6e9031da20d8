"""Node registration and Lease renewal: what keeps the node lifecycle controller content.

A Node whose Lease goes stale turns ``Ready=Unknown`` and gets tainted within about a minute;
renewing every 10 s (as the kubelet does) keeps every live node Ready.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

from .api import Kube, Obj, describe, now_rfc3339
from .nodes import NodeSpec, node_manifest

__all__ = ["Heartbeat"]

RENEW_SECONDS = 10.0


def _micro_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Heartbeat:
    """Registers the nodes, then renews their Leases until stopped (skipping lost nodes)."""

    def __init__(
        self,
        kube: Kube,
        nodes: Iterable[NodeSpec],
        log_port: int,
        is_alive: Callable[[str], bool],
        report: Callable[[str], None],
    ) -> None:
        self._kube = kube
        self._nodes = list(nodes)
        self._log_port = log_port
        self._is_alive = is_alive
        self._report = report
        self._uids: dict[str, str | None] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="nodeagent-lease")

    def register(self, spec: NodeSpec, existing: Obj | None = None) -> None:
        """Create (or refresh) the Node and its Lease now; ``existing``: as listed before."""
        self._uids[spec.name] = self._kube.apply_node(
            node_manifest(spec, self._log_port, now_rfc3339()), existing
        )
        self._kube.renew_lease(spec.name, self._uids[spec.name], _micro_now())

    def start(self) -> None:
        registered = self._kube.nodes()
        with ThreadPoolExecutor(max_workers=4) as pool:  # 2-4 API calls per node: overlap them
            list(pool.map(lambda spec: self.register(spec, registered.get(spec.name)), self._nodes))
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.5)

    def _run(self) -> None:
        while not self._stop.wait(RENEW_SECONDS):
            for spec in self._nodes:
                if not self._is_alive(spec.name):
                    continue
                try:
                    self._kube.renew_lease(spec.name, self._uids.get(spec.name), _micro_now())
                except Exception as exc:
                    if not self._stop.is_set():
                        self._report(f"lease of {spec.name}: {describe(exc)}")
