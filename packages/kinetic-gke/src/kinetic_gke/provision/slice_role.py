"""The namespace Role with which a multi-host job stops its own slice when it finishes.

A LeaderWorkerSet pod's restarted runtime (``kinetic_runtime.release``) reads its slice and
the slice's pods and their logs, then records the outcome on the LeaderWorkerSet and scales it
to zero, so a finished slice is released with no client polling. This Role grants exactly
that, in the jobs' namespace, to the service account the jobs run as.
"""

from __future__ import annotations

from typing import Any

from kinetic_gke.k8s import AlreadyExists, ClusterConnection

__all__ = ["ROLE_NAME", "apply_slice_role", "slice_role", "slice_role_binding"]

ROLE_NAME = "kinetic-slice-release"
_RBAC = "rbac.authorization.k8s.io"


def slice_role(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{_RBAC}/v1",
        "kind": "Role",
        "metadata": {"name": ROLE_NAME, "namespace": namespace},
        "rules": [
            {
                "apiGroups": ["leaderworkerset.x-k8s.io"],
                "resources": ["leaderworkersets"],
                "verbs": ["get", "patch"],
            },
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
            {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        ],
    }


def slice_role_binding(namespace: str, account: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{_RBAC}/v1",
        "kind": "RoleBinding",
        "metadata": {"name": ROLE_NAME, "namespace": namespace},
        "roleRef": {"apiGroup": _RBAC, "kind": "Role", "name": ROLE_NAME},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }


def slice_role_granted(connection: ClusterConnection, namespace: str, account: str) -> bool:
    """Whether the binding exists for ``account`` (and the Role it names)."""
    from kubernetes import client

    rbac = client.RbacAuthorizationV1Api(connection.api_client)
    binding = connection.read_or_none(
        f"reading RoleBinding {namespace}/{ROLE_NAME}",
        rbac.read_namespaced_role_binding, ROLE_NAME, namespace,
    )  # fmt: skip
    role = connection.read_or_none(
        f"reading Role {namespace}/{ROLE_NAME}", rbac.read_namespaced_role, ROLE_NAME, namespace
    )
    if binding is None or role is None:
        return False
    wanted: list[Any] = slice_role_binding(namespace, account)["subjects"]
    return bool(binding.get("subjects") == wanted)


def apply_slice_role(connection: ClusterConnection, namespace: str, account: str) -> None:
    """Create the Role and its binding to ``account``, or bring them up to date."""
    from kubernetes import client

    rbac = client.RbacAuthorizationV1Api(connection.api_client)
    role, binding = slice_role(namespace), slice_role_binding(namespace, account)
    for kind, body, create, replace in (
        ("Role", role, rbac.create_namespaced_role, rbac.replace_namespaced_role),
        ("RoleBinding", binding, rbac.create_namespaced_role_binding,
         rbac.replace_namespaced_role_binding),
    ):  # fmt: skip
        try:
            connection.send(f"creating {kind} {namespace}/{ROLE_NAME}", create, namespace, body)
        except AlreadyExists:
            connection.send(
                f"updating {kind} {namespace}/{ROLE_NAME}", replace, ROLE_NAME, namespace, body
            )
