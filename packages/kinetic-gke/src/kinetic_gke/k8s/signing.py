"""A namespace's signing keys, kept in one Secret that every Kinetic pod there mounts.

The Secret is the keyring's only copy for Kubernetes jobs: a client on any machine that can
read it can verify (and sign) the namespace's jobs; one that cannot gets a clear error rather
than results it cannot trust. It is created on the first submission to the namespace and
changed only by rotation (``kinetic keys rotate``), which adds a key and keeps the old ones.
"""

from __future__ import annotations

import base64
from typing import Any

from kinetic_gke.k8s.connection import ClusterConnection, Obj
from kinetic_gke.k8s.errors import AlreadyExists, NotFound, PermissionDenied
from kinetic_protocol import Keyring, SigningKeyError

__all__ = [
    "MOUNT_PATH",
    "SECRET_NAME",
    "namespace_keyring",
    "replace_namespace_keyring",
    "signing_volume",
]

SECRET_NAME = "kinetic-signing-keys"  # noqa: S105 - a name, not a secret
MOUNT_PATH = "/var/run/kinetic/signing-keys"
_VOLUME = "kinetic-signing-keys"


def signing_volume() -> tuple[dict[str, Any], dict[str, Any]]:
    """(pod volume, container mount) that put the namespace's keyring at ``MOUNT_PATH``."""
    # Readable by the pod's group (its fsGroup), so a non-root runtime can read it.
    volume = {"name": _VOLUME, "secret": {"secretName": SECRET_NAME, "defaultMode": 0o440}}
    return volume, {"name": _VOLUME, "mountPath": MOUNT_PATH, "readOnly": True}


def _source(connection: ClusterConnection) -> str:
    return f"Secret {SECRET_NAME} in namespace {connection.namespace}"


def _denied(connection: ClusterConnection, verb: str, exc: PermissionDenied) -> SigningKeyError:
    return SigningKeyError(
        f"Cannot {verb} {_source(connection)}, which holds the keys that verify this "
        f"namespace's job results ({exc}). Ask a cluster admin for 'get' and 'create' on "
        f"secrets in namespace {connection.namespace}, or use a context that has them."
    )


def _keyring(connection: ClusterConnection, secret: Obj) -> Keyring:
    data = secret.get("data") or {}
    entries = {name: base64.b64decode(value).decode() for name, value in data.items()}
    return Keyring.from_entries(entries, source=_source(connection))


def _body(connection: ClusterConnection, keyring: Keyring, resource_version: str = "") -> Obj:
    metadata: Obj = {
        "name": SECRET_NAME,
        "namespace": connection.namespace,
        "labels": {"app.kubernetes.io/managed-by": "kinetic"},
    }
    if resource_version:
        metadata["resourceVersion"] = resource_version
    data = {k: base64.b64encode(v.encode()).decode() for k, v in keyring.entries().items()}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": data}


def _read(connection: ClusterConnection) -> Obj | None:
    try:
        return connection.read_or_none(
            f"reading {_source(connection)}",
            connection.core.read_namespaced_secret,
            SECRET_NAME,
            connection.namespace,
        )
    except PermissionDenied as exc:
        raise _denied(connection, "get", exc) from exc


def namespace_keyring(connection: ClusterConnection, *, create: bool) -> Keyring:
    """The namespace's keyring; with ``create``, made first if the namespace has none."""
    secret = _read(connection)
    if secret is not None:
        return _keyring(connection, secret)
    if not create:
        raise SigningKeyError(
            f"{_source(connection)} does not exist, so no job in this namespace can be "
            "verified: it was deleted (every job signed with it is unreadable now) or no job "
            "was ever submitted here."
        )
    keyring = Keyring.generate(source=_source(connection))
    try:
        connection.send(
            f"creating {_source(connection)}",
            connection.core.create_namespaced_secret,
            connection.namespace,
            _body(connection, keyring),
        )
    except AlreadyExists:  # another client made it first: theirs is the namespace's
        secret = _read(connection)
        if secret is None:
            raise
        return _keyring(connection, secret)
    except PermissionDenied as exc:
        raise _denied(connection, "create", exc) from exc
    return keyring


def replace_namespace_keyring(connection: ClusterConnection, keyring: Keyring) -> None:
    """Store ``keyring`` as the namespace's (after a rotation): replaces the Secret's data,
    failing with ``Conflict`` if someone else changed it since it was read."""
    secret = _read(connection)
    if secret is None:
        raise NotFound(f"{_source(connection)} is gone; nothing to rotate.")
    version = secret["metadata"]["resourceVersion"]
    try:
        connection.send(
            f"replacing {_source(connection)}",
            connection.core.replace_namespaced_secret,
            SECRET_NAME,
            connection.namespace,
            _body(connection, keyring, version),
        )
    except PermissionDenied as exc:
        raise _denied(connection, "update", exc) from exc
