"""The resource types the simulator serves, and the discovery documents that describe them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "JOBS",
    "LWS",
    "LWS_GROUP",
    "LWS_VERSION",
    "PODS",
    "RESOURCES",
    "ResourceType",
    "discovery_document",
]

LWS_GROUP = "leaderworkerset.x-k8s.io"
LWS_VERSION = "v1"


@dataclass(frozen=True)
class ResourceType:
    """One namespaced REST resource: how its URLs, kinds and list documents are spelled."""

    plural: str
    kind: str
    group: str
    version: str
    short_names: tuple[str, ...] = ()
    #: Built-in types drop `kind`/`apiVersion` from list items; custom resources keep them.
    builtin: bool = True

    @property
    def api_version(self) -> str:
        """`v1` for the core group, `group/version` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        """The kind of this resource's list documents."""
        return f"{self.kind}List"


PODS = ResourceType("pods", "Pod", "", "v1", ("po",))
JOBS = ResourceType("jobs", "Job", "batch", "v1")
LWS = ResourceType("leaderworkersets", "LeaderWorkerSet", LWS_GROUP, LWS_VERSION, ("lws",), False)
RESOURCES = (PODS, JOBS, LWS)


def _resource_list(group_version: str, resources: list[tuple[ResourceType | str, str]]) -> Any:
    entries = []
    for res, sub in resources:
        name = res.plural if isinstance(res, ResourceType) else res
        kind = res.kind if isinstance(res, ResourceType) else "Pod"
        verbs = (
            ["create", "delete", "deletecollection", "get", "list"]
            if not sub
            else (["get"] if sub in ("log", "status") else [])
        )
        entries.append(
            {
                "name": f"{name}/{sub}" if sub else name,
                "singularName": "" if sub else kind.lower(),
                "namespaced": True,
                "kind": "Pod" if sub == "log" else kind,
                "verbs": verbs,
            }
        )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": entries,
    }


def discovery_document(path: str, address: str, kubernetes_version: str) -> Any | None:
    """The body for a discovery path (`/version`, `/api`, `/apis`, `/apis/g/v`), or None."""
    major, minor = kubernetes_version.split(".")[:2]
    if path == "/version":
        return {
            "major": major,
            "minor": minor,
            "gitVersion": f"v{major}.{minor}.0-kinetic-sim",
            "gitCommit": "0" * 40,
            "gitTreeState": "clean",
            "buildDate": "2024-01-01T00:00:00Z",
            "goVersion": "go1.22.0",
            "compiler": "gc",
            "platform": "linux/amd64",
        }
    if path == "/api":
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
        }
    if path == "/apis":
        groups = []
        for group, version in (("batch", "v1"), (LWS_GROUP, LWS_VERSION)):
            gv = {"groupVersion": f"{group}/{version}", "version": version}
            groups.append({"name": group, "versions": [gv], "preferredVersion": gv})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
    if path == "/api/v1":
        return _resource_list("v1", [(PODS, ""), (PODS, "log"), (PODS, "status")])
    if path == "/apis/batch/v1":
        return _resource_list("batch/v1", [(JOBS, ""), (JOBS, "status")])
    if path == f"/apis/{LWS_GROUP}/{LWS_VERSION}":
        return _resource_list(LWS.api_version, [(LWS, ""), (LWS, "status")])
    return None
