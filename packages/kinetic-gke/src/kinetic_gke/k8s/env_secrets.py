"""The per-job Secret that carries a job's captured environment variables to its pods.

The values never go through the store: the client creates the Secret before the job's object,
whose pods read it with ``envFrom.secretRef``, then makes the object its owner, so the garbage
collector removes it with the job. Deleting the job deletes it explicitly too, and a job
whose object could not be created takes its Secret away with it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping

from kinetic_gke.k8s.connection import ClusterConnection, Obj
from kinetic_gke.k8s.errors import AlreadyExists, NotFound
from kinetic_gke.k8s.workload import Workload
from kinetic_protocol import BackendError

__all__ = [
    "create_env_secret",
    "create_with_env",
    "delete_env_secret",
    "env_secret_name",
    "own_env_secret",
]


def create_with_env(
    connection: ClusterConnection,
    workload: Workload,
    name: str,
    manifest: Callable[[str | None], Obj],
    *,
    labels: Mapping[str, str],
    env: Mapping[str, str],
) -> None:
    """Create the job's object ``name`` from ``manifest(secret name or None)``; with ``env``,
    first its Secret, then made owned by the object. A failure leaves neither behind.

    "Already exists" means a retried submit: fine (the Secret gets this try's values and the
    existing object as its owner).
    """
    secret = env_secret_name(name) if env else None
    if secret is not None:
        create_env_secret(connection, secret, labels, env)
    created: Obj | None = None
    try:
        created = workload.create(connection, manifest(secret))
        if secret is not None:
            owner = created or workload.get(connection, name)
            if owner is None:
                raise BackendError(
                    f"{workload.kind} {name} was gone right after its creation; nothing runs."
                )
            own_env_secret(connection, secret, owner)
    except BaseException:
        if secret is not None:
            with contextlib.suppress(Exception):  # the submission's own error says more
                if created is not None:  # nothing of a refused submission may run
                    workload.delete(connection, name)
                delete_env_secret(connection, secret)
        raise


def env_secret_name(k8s_name: str) -> str:
    """The Secret of the job whose object is named ``k8s_name``."""
    return f"{k8s_name}-env"


def create_env_secret(
    connection: ClusterConnection, name: str, labels: Mapping[str, str], env: Mapping[str, str]
) -> None:
    """Create the Secret holding ``env``; one left by an earlier try of the same submission
    is given these values."""
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": connection.namespace, "labels": dict(labels)},
        "type": "Opaque",
        "stringData": dict(env),
    }
    doing = f"creating Secret {name} (the job's captured variables) in {connection.namespace}"
    try:
        connection.send(doing, connection.core.create_namespaced_secret, connection.namespace, body)
    except AlreadyExists:
        connection.send(
            doing,
            connection.core.patch_namespaced_secret,
            name,
            connection.namespace,
            {"stringData": dict(env)},
        )


def own_env_secret(connection: ClusterConnection, name: str, owner: Obj) -> None:
    """Make ``owner`` (the job's Job or LeaderWorkerSet, as read back) the Secret's owner."""
    metadata = owner["metadata"]
    reference = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": metadata["name"],
        "uid": metadata["uid"],
    }
    connection.send(
        f"making {owner['kind']} {metadata['name']} the owner of Secret {name}",
        connection.core.patch_namespaced_secret,
        name,
        connection.namespace,
        {"metadata": {"ownerReferences": [reference]}},
    )


def delete_env_secret(connection: ClusterConnection, name: str) -> None:
    """Delete the Secret; already gone is fine."""
    with contextlib.suppress(NotFound):
        connection.send(
            f"deleting Secret {name}",
            connection.core.delete_namespaced_secret,
            name,
            connection.namespace,
        )
