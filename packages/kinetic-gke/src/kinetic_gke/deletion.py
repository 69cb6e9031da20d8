"""Deleting a backend's objects, and confirming they are gone: a deletion returns only once
the objects and their pods are, so a job that was cancelled cannot still be running."""

import time
from collections.abc import Callable, Sequence

from kinetic_gke.k8s import ClusterConnection, Workload
from kinetic_gke.k8s.env_secrets import delete_env_secret, env_secret_name
from kinetic_protocol import BackendError

__all__ = ["await_gone", "delete_confirmed"]


def delete_confirmed(
    connection: ClusterConnection,
    names: Sequence[str],
    pods: str,
    *,
    workload: Workload,
    timeout: float,
    poll_interval: float,
    shortest: float,
) -> None:
    """Delete the objects ``names`` of ``workload`` (with their Secrets of captured values),
    then wait until they and the pods ``pods`` selects are gone."""
    for name in names:
        workload.delete(connection, name)
        delete_env_secret(connection, env_secret_name(name))
    await_gone(
        lambda: (
            any(workload.get(connection, name) is not None for name in names)
            or bool(connection.list_pods(pods))
        ),
        f"{workload.kind} {', '.join(names)}",
        pods,
        namespace=connection.namespace,
        timeout=timeout,
        poll_interval=poll_interval,
        shortest=shortest,
        kind=workload.kind.lower(),
    )


def await_gone(
    present: Callable[[], bool],
    what: str,
    pods: str,
    *,
    namespace: str,
    timeout: float,
    poll_interval: float,
    shortest: float,
    kind: str = "",
) -> None:
    """Poll until ``present()`` is False. A finished job usually goes within a moment, so the
    polls start at ``shortest`` (the backend's short poll bound) and double, never more than
    ``poll_interval`` apart."""
    deadline = time.monotonic() + timeout
    delay = min(shortest, poll_interval)
    while present():
        if time.monotonic() >= deadline:
            kinds = f"{kind},pods" if kind else "pods"
            raise BackendError(
                f"{what} in namespace {namespace} was still present {timeout:g}s after "
                f"its deletion; check it with `kubectl get {kinds} -n {namespace} "
                f"-l {pods}`."
            )
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, poll_interval)
