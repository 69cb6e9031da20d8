"""The few API calls the node agent makes, on plain dicts.

Every call uses ``_preload_content=False``: client v37 turns responses into pydantic models that
reject some valid answers (a Binding's response is a ``Status``), and dicts are cheaper. Patches
name their content type, because v37 otherwise sends a dict body as a JSON *patch* list.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

__all__ = ["Kube", "Obj", "describe", "is_gone", "now_rfc3339"]

Obj = dict[str, Any]
_SMP = "application/strategic-merge-patch+json"
_MERGE = "application/merge-patch+json"
_TIMEOUT = (5, 30)
_CONTROLLER_TAINTS = "node.kubernetes.io/"


def now_rfc3339() -> str:
    """The current time as the API server writes it (seconds, UTC)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_gone(exc: BaseException) -> bool:
    """Whether ``exc`` only says the object is already gone (a normal race, not an error).

    A write into a namespace being deleted is refused (403, "being terminated"): its pods are
    going too, so like kube-scheduler and kubelet the agent lets them go.
    """
    if not isinstance(exc, ApiException):
        return False
    if exc.status in (404, 409):
        return True
    return exc.status == 403 and "because it is being terminated" in str(exc.body or "")


def describe(exc: BaseException) -> str:
    """A one-line account of an error (an API error's status and message, not its headers)."""
    if isinstance(exc, ApiException):
        try:
            message = json.loads(exc.body or "{}").get("message") or exc.reason
        except ValueError:
            message = exc.reason
        return f"HTTP {exc.status}: {message}"
    return f"{type(exc).__name__}: {exc}"


def _registered_as(existing: Obj, node: Obj) -> bool:
    """Whether ``existing`` has every label of ``node`` and exactly its taints, leaving out
    those the node lifecycle controller keeps (``node.kubernetes.io/not-ready`` while a new
    Node has no Ready condition yet): it takes them off itself once the status says Ready."""
    labels = existing["metadata"].get("labels") or {}
    wanted = node["metadata"]["labels"]
    same_labels = all(labels.get(key) == value for key, value in wanted.items())
    spec = existing.get("spec") or {}
    taints = [t for t in spec.get("taints") or [] if not t["key"].startswith(_CONTROLLER_TAINTS)]
    return same_labels and not spec.get("unschedulable") and taints == node["spec"]["taints"]


def _status_current(existing: Obj, node: Obj) -> bool:
    """Whether ``existing`` reports ``node``'s status, Ready: then, as a kubelet does between
    its status reports, the agent only renews the node's Lease, which keeps it Ready."""
    status, wanted = existing.get("status") or {}, node["status"]
    ready = any(
        condition["type"] == "Ready" and condition["status"] == "True"
        for condition in status.get("conditions") or []
    )
    fields = ("capacity", "allocatable", "addresses", "daemonEndpoints", "nodeInfo")
    return ready and all(status.get(field) == wanted[field] for field in fields)


def _call(method: Callable[..., Any], *args: Any, **kwargs: Any) -> Obj:
    """One API call, its answer a dict, read whole: an answer left unread keeps its
    connection from the client's pool, and the next call opened a new one (a TLS handshake
    on both sides, about 40 of them per test for node registration alone)."""
    response = method(*args, _preload_content=False, _request_timeout=_TIMEOUT, **kwargs)
    try:
        data = response.data
    finally:
        response.release_conn()
    return json.loads(data) if data else {}


class Kube:
    """A thin typed facade over CoreV1Api and CoordinationV1Api, speaking dicts."""

    def __init__(self, factory: Callable[[], client.ApiClient]) -> None:
        self.api_client = factory()
        self.core = client.CoreV1Api(self.api_client)
        self.coordination = client.CoordinationV1Api(self.api_client)

    def close(self) -> None:
        self.api_client.close()  # type: ignore[no-untyped-call]

    # Pods
    def list_pods(self) -> tuple[list[Obj], str]:
        """Every pod, and the resourceVersion to watch from."""
        body = _call(self.core.list_pod_for_all_namespaces)
        return list(body.get("items") or []), str(body["metadata"]["resourceVersion"])

    def watch_pods(self, resource_version: str, timeout: int) -> Any:
        """A streaming watch response (urllib3); the caller reads lines and closes it."""
        return self.core.list_pod_for_all_namespaces(
            watch=True,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout,
            _preload_content=False,
            _request_timeout=(5, timeout + 10),
        )

    def bind(self, namespace: str, name: str, node: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        _call(
            self.core.create_namespaced_pod_binding,
            name,
            namespace,
            client.V1Binding.model_validate(body),
        )

    def patch_pod_status(
        self, namespace: str, name: str, status: Obj, uid: str | None = None
    ) -> None:
        """Patch a pod's status; with ``uid``, only that pod's, never a namesake's (as the
        kubelet does: the apiserver answers 409 when the uid differs)."""
        body: Obj = {"status": status}
        if uid:
            body["metadata"] = {"uid": uid}
        _call(self.core.patch_namespaced_pod_status, name, namespace, body, _content_type=_SMP)

    def delete_pod(self, namespace: str, name: str, uid: str | None = None) -> None:
        """Confirm a deletion (grace 0), guarded by uid so a namesake is never hit."""
        body: Obj = {"gracePeriodSeconds": 0}
        if uid:
            body["preconditions"] = {"uid": uid}
        _call(
            self.core.delete_namespaced_pod,
            name,
            namespace,
            grace_period_seconds=0,
            body=client.V1DeleteOptions.model_validate(body),
        )

    def secret_value(self, namespace: str, name: str, key: str) -> str | None:
        data = self._data("secret", namespace, name)
        raw = None if data is None else data.get(key)
        return None if raw is None else base64.b64decode(raw).decode()

    def config_map_value(self, namespace: str, name: str, key: str) -> str | None:
        data = self._data("configmap", namespace, name)
        value = None if data is None else data.get(key)
        return None if value is None else str(value)

    def _data(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A Secret's or ConfigMap's ``data``; None if the object does not exist."""
        read = (
            self.core.read_namespaced_secret
            if kind == "secret"
            else self.core.read_namespaced_config_map
        )
        try:
            found = _call(read, name, namespace)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return dict(found.get("data") or {})

    def service_account_token(self, namespace: str, account: str, pod: Obj, seconds: int) -> str:
        """A token for ``account``, bound to ``pod`` (as the kubelet asks for one)."""
        meta = pod["metadata"]
        bound = {"kind": "Pod", "apiVersion": "v1", "name": meta["name"], "uid": meta["uid"]}
        body: Any = {"spec": {"expirationSeconds": seconds, "boundObjectRef": bound}}
        answer = _call(self.core.create_namespaced_service_account_token, account, namespace, body)
        return str(answer["status"]["token"])

    def service_env(self) -> dict[str, str]:
        """The ``KUBERNETES_SERVICE_*`` variables every pod gets: the API server's address."""
        url = urllib.parse.urlsplit(self.api_client.configuration.host)
        port = str(url.port or 443)
        return {"KUBERNETES_SERVICE_HOST": url.hostname or "", "KUBERNETES_SERVICE_PORT": port}

    def config_map_data(self, namespace: str, name: str, secret: bool) -> dict[str, str] | None:
        """All keys of a ConfigMap or Secret (for ``envFrom``); None if it does not exist."""
        data = self._data("secret" if secret else "configmap", namespace, name)
        if data is None:
            return None
        if secret:
            return {k: base64.b64decode(v).decode() for k, v in data.items()}
        return {k: str(v) for k, v in data.items()}

    # Nodes and leases
    def nodes(self) -> dict[str, Obj]:
        """Every Node there is, by name."""
        listing = _call(self.core.list_node)
        return {node["metadata"]["name"]: node for node in listing.get("items") or []}

    def apply_node(self, node: Obj, existing: Obj | None = None) -> str:
        """Create the Node, or replace its labels/taints/status if it exists; returns its uid.

        ``existing``: the Node as listed just before. A Node an earlier agent registered with
        these labels and taints (the usual case: one agent per test, the same nodes each
        time) needs its status only, two API calls fewer, and no call at all when that status
        is still current."""
        name = node["metadata"]["name"]
        if existing is not None and _registered_as(existing, node):
            if not _status_current(existing, node):
                self.patch_node_status(name, node["status"], replace_lists=True)
            return str(existing["metadata"]["uid"])
        try:
            created = _call(self.core.create_node, client.V1Node.model_validate(node))
        except ApiException as exc:
            if exc.status != 409:
                raise
            spec = {**node["spec"], "unschedulable": None}  # uncordoned, as registered
            patch = {"metadata": {"labels": node["metadata"]["labels"]}, "spec": spec}
            created = _call(self.core.patch_node, name, patch, _content_type=_MERGE)
        self.patch_node_status(name, node["status"], replace_lists=True)
        return str(created["metadata"]["uid"])

    def patch_node_status(self, name: str, status: Obj, *, replace_lists: bool = False) -> None:
        """Patch the Node's status; ``replace_lists`` drops stale addresses and conditions."""
        _call(
            self.core.patch_node_status,
            name,
            {"status": status},
            _content_type=_MERGE if replace_lists else _SMP,
        )

    def delete_node(self, name: str) -> None:
        _call(self.core.delete_node, name)

    def renew_lease(self, node: str, node_uid: str | None, now_micro: str) -> None:
        """Create or renew the node's heartbeat Lease in ``kube-node-lease``."""
        spec = {"holderIdentity": node, "leaseDurationSeconds": 40, "renewTime": now_micro}
        try:
            _call(
                self.coordination.patch_namespaced_lease,
                node,
                "kube-node-lease",
                {"spec": spec},
                _content_type=_MERGE,
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
            meta: Obj = {"name": node, "namespace": "kube-node-lease"}
            if node_uid:
                meta["ownerReferences"] = [
                    {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid}
                ]
            lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta}
            lease["spec"] = spec
            create = self.coordination.create_namespaced_lease
            _call(create, "kube-node-lease", client.V1Lease.model_validate(lease))


def iter_lines(response: Any) -> Iterator[str]:
    """The newline-separated JSON lines of a watch response."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield line.decode("utf-8", errors="replace")
