"""A fake of the GKE (container v1) API: clusters, node pools and their long-running operations.

Operations are GKE's own (``Operation`` with ``status: RUNNING | DONE``, not
``google.longrunning``). Each read of an operation, or of the cluster it works on, is one poll;
after ``polls_until_done`` polls the operation is DONE and its effect shows (a cluster or pool
``RUNNING``, or gone). While an operation runs on a cluster, other changes to it are refused
with FAILED_PRECONDITION, as GKE does. ``fail_operation`` makes the next operation of a type end
in an error, leaving its cluster or pool in ``ERROR``.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from typing import Any

from kinetic_testing.gcp_fake.server import ApiError, RoutedServer, Unrouted

__all__ = ["FakeContainer"]

_LOC = r"/v1/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)"
_CLUSTER = _LOC + r"/clusters/(?P<cluster>[^/:]+)"


@dataclass
class _Operation:
    id: str
    type: str
    cluster: str
    """The cluster's full name; the pool's too for pool operations."""
    pool: str = ""
    polls_left: int = 1
    error: str = ""
    done: bool = False
    location: str = ""
    target: str = ""


@dataclass
class FakeContainer:
    """Cluster state keyed by full name (``projects/P/locations/L/clusters/C``)."""

    server: RoutedServer
    polls_until_done: int = 1
    clusters: dict[str, dict[str, Any]] = field(default_factory=dict)
    operations: dict[str, _Operation] = field(default_factory=dict)
    failing: dict[str, str] = field(default_factory=dict)
    """Operation type -> error message for the next such operation."""
    endpoint: str = "127.0.0.1"
    """The control plane address new clusters report (a test's real API server, or a proxy
    in front of it: ``127.0.0.1:PORT``)."""
    ca_certificate: str = ""
    """The base64 PEM of the CA their endpoint's certificate is signed by."""
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        def route(method: str, pattern: str, name: str, handler: Any) -> None:
            self.server.route(method, pattern, name, handler, service="container.googleapis.com")

        route("POST", _LOC + r"/clusters", "container.clusters.create", self._create_cluster)
        route("GET", _LOC + r"/clusters", "container.clusters.list", self._list_clusters)
        route("GET", _CLUSTER, "container.clusters.get", self._get_cluster)
        route("PUT", _CLUSTER, "container.clusters.update", self._update_cluster)
        route("DELETE", _CLUSTER, "container.clusters.delete", self._delete_cluster)
        route("POST", _CLUSTER + r"/nodePools", "container.nodePools.create", self._create_pool)
        route("GET", _CLUSTER + r"/nodePools", "container.nodePools.list", self._list_pools)
        pool = _CLUSTER + r"/nodePools/(?P<pool>[^/:]+)"
        route("GET", pool, "container.nodePools.get", self._get_pool)
        route("DELETE", pool, "container.nodePools.delete", self._delete_pool)
        # No API check: Artifact Registry's operations share the path (see ``_op``), and an
        # operation is only known to whoever could start it.
        self.server.route(
            "GET", _LOC + r"/operations/(?P<op>[^/:]+)", "container.operations.get", self._op
        )
        route("GET", _LOC + r"/operations", "container.operations.list", self._list_ops)

    # -- scripting ---------------------------------------------------------------------------

    def fail_operation(self, op_type: str, message: str = "injected operation failure") -> None:
        """The next operation of ``op_type`` (CREATE_CLUSTER, CREATE_NODE_POOL, ...) fails."""
        with self.server.lock:
            self.failing[op_type] = message

    def add_cluster(self, project: str, location: str, body: dict[str, Any]) -> None:
        """A cluster that exists already (made elsewhere), RUNNING."""
        with self.server.lock:
            cluster = self._new_cluster(project, location, body)
            cluster["status"] = "RUNNING"
            for pool in cluster["nodePools"]:
                pool["status"] = "RUNNING"

    def cluster(self, project: str, location: str, name: str) -> dict[str, Any] | None:
        with self.server.lock:
            found = self.clusters.get(f"projects/{project}/locations/{location}/clusters/{name}")
            return copy.deepcopy(found)

    # -- helpers -----------------------------------------------------------------------------

    def _name(self, groups: dict[str, str]) -> str:
        return (
            f"projects/{groups['project']}/locations/{groups['location']}/clusters/"
            + groups["cluster"]
        )

    def _tick(self, cluster: str) -> None:
        """One poll of every running operation on ``cluster``."""
        for op in self.operations.values():
            if op.cluster == cluster and not op.done:
                op.polls_left -= 1
                if op.polls_left <= 0:
                    self._finish(op)

    def _finish(self, op: _Operation) -> None:
        op.done = True
        cluster = self.clusters.get(op.cluster)
        if cluster is None:
            return
        pool = next((p for p in cluster["nodePools"] if p["name"] == op.pool), None)
        if op.error:
            broken = pool if pool is not None else cluster
            broken.update(status="ERROR", statusMessage=op.error)
            return
        if op.type == "DELETE_CLUSTER":
            del self.clusters[op.cluster]
        elif op.type == "DELETE_NODE_POOL" and pool is not None:
            cluster["nodePools"].remove(pool)
        elif pool is not None:
            pool["status"] = "RUNNING"
        else:
            cluster["status"] = "RUNNING"
            for created in cluster["nodePools"]:
                if created.get("status") == "PROVISIONING":
                    created["status"] = "RUNNING"

    def _start(self, op_type: str, cluster: str, pool: str = "") -> dict[str, Any]:
        op_id = f"operation-{next(self._ids)}"
        location = cluster.split("/")[3]
        op = _Operation(
            op_id, op_type, cluster, pool, max(1, self.polls_until_done),
            error=self.failing.pop(op_type, ""), location=location,
            target=cluster + (f"/nodePools/{pool}" if pool else ""),
        )  # fmt: skip
        self.operations[op_id] = op
        return self._render(op)

    def _render(self, op: _Operation) -> dict[str, Any]:
        project = op.cluster.split("/")[1]
        rendered: dict[str, Any] = {
            "name": op.id,
            "operationType": op.type,
            "status": "DONE" if op.done else "RUNNING",
            "location": op.location,
            "zone": op.location,
            "selfLink": f"projects/{project}/locations/{op.location}/operations/{op.id}",
            "targetLink": op.target,
        }
        if op.done and op.error:
            rendered["error"] = {"code": 13, "message": op.error}
            rendered["statusMessage"] = op.error
        return rendered

    def _busy(self, cluster: str) -> None:
        running = [op for op in self.operations.values() if op.cluster == cluster and not op.done]
        if running:
            raise ApiError(
                400,
                f"Operation {running[0].id} is currently {running[0].type.lower()} on cluster "
                f"{cluster.rsplit('/', 1)[-1]}. Please wait and try again once it is done.",
                "FAILED_PRECONDITION",
            )

    def _cluster_or_404(self, name: str) -> dict[str, Any]:
        if name not in self.clusters:
            raise ApiError(404, f"Not found: {name}.")
        return self.clusters[name]

    def _new_cluster(self, project: str, location: str, body: dict[str, Any]) -> dict[str, Any]:
        cluster = copy.deepcopy(body)
        name = f"projects/{project}/locations/{location}/clusters/{cluster['name']}"
        cluster.update(
            location=location, zone=location, status="PROVISIONING", endpoint=self.endpoint,
            masterAuth={"clusterCaCertificate": self.ca_certificate},
            currentMasterVersion="1.33.5-gke.100", selfLink=name,
        )  # fmt: skip
        if not cluster.get("nodePools"):
            count = int(cluster.pop("initialNodeCount", 0) or 0)
            cluster["nodePools"] = [{"name": "default-pool", "initialNodeCount": count}]
        for pool in cluster["nodePools"]:
            pool["status"] = "PROVISIONING"
        self.clusters[name] = cluster
        return cluster

    # -- routes ------------------------------------------------------------------------------

    def _create_cluster(self, g: dict[str, str], _q: Any, body: Any) -> Any:
        cluster = (body or {}).get("cluster") or {}
        if not cluster.get("name"):
            raise ApiError(400, "Cluster.name is required")
        name = f"projects/{g['project']}/locations/{g['location']}/clusters/{cluster['name']}"
        if name in self.clusters:
            raise ApiError(409, f"Already exists: {name}.")
        self._new_cluster(g["project"], g["location"], cluster)
        return self._start("CREATE_CLUSTER", name)

    def _list_clusters(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        prefix = f"projects/{g['project']}/locations/"
        wanted = g["location"]
        return {
            "clusters": [
                copy.deepcopy(c)
                for n, c in self.clusters.items()
                if n.startswith(prefix) and wanted in ("-", c["location"])
            ]
        }

    def _get_cluster(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        name = self._name(g)
        self._tick(name)
        return copy.deepcopy(self._cluster_or_404(name))

    def _update_cluster(self, g: dict[str, str], _q: Any, body: Any) -> Any:
        name = self._name(g)
        cluster = self._cluster_or_404(name)
        self._busy(name)
        update = (body or {}).get("update") or {}
        mapping = {
            "desiredAddonsConfig": "addonsConfig",
            "desiredWorkloadIdentityConfig": "workloadIdentityConfig",
            "desiredClusterAutoscaling": "autoscaling",
        }
        for desired, field_name in mapping.items():
            if desired in update:
                merged = {**cluster.get(field_name, {}), **update[desired]}
                cluster[field_name] = merged
        cluster["status"] = "RECONCILING"
        return self._start("UPDATE_CLUSTER", name)

    def _delete_cluster(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        name = self._name(g)
        cluster = self._cluster_or_404(name)
        self._busy(name)
        cluster["status"] = "STOPPING"
        return self._start("DELETE_CLUSTER", name)

    def _create_pool(self, g: dict[str, str], _q: Any, body: Any) -> Any:
        name = self._name(g)
        cluster = self._cluster_or_404(name)
        pool = copy.deepcopy((body or {}).get("nodePool") or {})
        if any(p["name"] == pool.get("name") for p in cluster["nodePools"]):
            raise ApiError(409, f"Already exists: {name}/nodePools/{pool.get('name')}.")
        self._busy(name)
        pool["status"] = "PROVISIONING"
        cluster["nodePools"].append(pool)
        return self._start("CREATE_NODE_POOL", name, pool["name"])

    def _list_pools(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        name = self._name(g)
        self._tick(name)
        return {"nodePools": copy.deepcopy(self._cluster_or_404(name)["nodePools"])}

    def _get_pool(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        name = self._name(g)
        self._tick(name)
        for pool in self._cluster_or_404(name)["nodePools"]:
            if pool["name"] == g["pool"]:
                return copy.deepcopy(pool)
        raise ApiError(404, f"Not found: {name}/nodePools/{g['pool']}.")

    def _delete_pool(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        name = self._name(g)
        pool = self._get_pool(g, _q, _b)
        self._busy(name)
        for stored in self.clusters[name]["nodePools"]:
            if stored["name"] == pool["name"]:
                stored["status"] = "STOPPING"
        return self._start("DELETE_NODE_POOL", name, pool["name"])

    def _list_ops(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        prefix = f"projects/{g['project']}/locations/{g['location']}/"
        return {
            "operations": [
                self._render(op) for op in self.operations.values() if op.cluster.startswith(prefix)
            ]
        }

    def _op(self, g: dict[str, str], _q: Any, _b: Any) -> Any:
        op = self.operations.get(g["op"])
        if op is None:
            raise Unrouted  # Artifact Registry's operations share the path
        self._tick(op.cluster)
        return self._render(op)
