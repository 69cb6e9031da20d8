"""The Google Cloud clients provisioning uses, built on first use, and the waits for their
long-running operations.

Every client goes through :func:`kinetic_gke.gcp.client_kwargs` (REST transport, the
``KINETIC_GCP_API_ENDPOINT`` override). A failure comes back as a Kinetic error saying what was
being done (:func:`kinetic_gke.gcp.google_error`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kinetic_gke import settings as declared
from kinetic_gke.backend_settings import poll_bounds
from kinetic_gke.gcp import GoogleApiError, client_kwargs, container_client, google_error
from kinetic_protocol import BackendError

__all__ = [
    "GoogleClients",
    "calling",
    "exists_or_none",
    "tolerate_exists",
    "wait_container_operation",
    "wait_operation",
]

T = TypeVar("T")
OPERATION_TIMEOUT = 3600.0
"""A cluster takes 5 to 15 minutes to create; a TPU pool can take longer."""


def calling(doing: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call a client method; any failure becomes a Kinetic error saying what was being done."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        raise google_error(exc, doing) from exc


class GoogleClients:
    """One client per API for one run of a command.

    ``unreadable`` names the APIs that were off when the plan was made: what they serve cannot
    be read yet, so planning takes it as missing (the steps that make it accept finding it).
    """

    def __init__(self, *, unreadable: frozenset[str] = frozenset()) -> None:
        self.unreadable = unreadable

    def readable(self, api: str) -> bool:
        return api not in self.unreadable

    @functools.cached_property
    def container(self) -> Any:
        return container_client()

    @functools.cached_property
    def service_usage(self) -> Any:
        from google.cloud import service_usage_v1

        return service_usage_v1.ServiceUsageClient(**client_kwargs())

    @functools.cached_property
    def machine_types(self) -> Any:
        from google.cloud import compute_v1

        return compute_v1.MachineTypesClient(**client_kwargs())

    @functools.cached_property
    def projects(self) -> Any:
        from google.cloud import resourcemanager_v3

        return resourcemanager_v3.ProjectsClient(**client_kwargs())

    @functools.cached_property
    def registry(self) -> Any:
        from google.cloud import artifactregistry_v1

        return artifactregistry_v1.ArtifactRegistryClient(**client_kwargs())

    @functools.cached_property
    def iam(self) -> Any:
        from kinetic_gke.provision.iam_api import IamApi

        return IamApi()

    @functools.cached_property
    def storage(self) -> Any:
        from google.cloud import storage

        return storage.Client()


def exists_or_none(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """The resource ``fn`` reads, or None if the API says it does not exist."""
    from google.api_core import exceptions

    try:
        return fn(*args, **kwargs)
    except exceptions.NotFound:
        return None


def tolerate_exists(doing: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Create; "already exists" (an earlier run, or a concurrent one) is success (None)."""
    try:
        return calling(doing, fn, *args, **kwargs)
    except GoogleApiError as exc:
        if exc.code == 409:
            return None
        raise


def wait_operation(doing: str, operation: Any, timeout: float = OPERATION_TIMEOUT) -> Any:
    """Wait for a ``google.api_core`` long-running operation; its result, or a Kinetic error.

    Polled at ``google.api_core``'s own pace (within a second, then less and less often, up
    to every 20 s), or between the bounds ``KINETIC_GKE_POLL`` sets."""
    polling = _polling()
    if polling is None:
        return calling(doing, operation.result, timeout=timeout)
    return calling(doing, operation.result, timeout=timeout, polling=polling)


def _polling() -> Any:
    """``google.api_core``'s polling with the delays ``KINETIC_GKE_POLL`` bounds; None if unset."""
    raw = declared.POLL.from_env()
    if not raw:
        return None
    from google.api_core.future.polling import DEFAULT_POLLING

    low, high = poll_bounds(raw)
    return DEFAULT_POLLING.with_delay(initial=low, maximum=high)


def wait_container_operation(
    clients: GoogleClients,
    doing: str,
    operation: Any,
    *,
    project: str,
    location: str,
    report: Callable[[str], None] | None = None,
    poll: tuple[float, float] = (0.05, 10.0),
    timeout: float = OPERATION_TIMEOUT,
) -> None:
    """Poll a GKE operation until it is DONE; raise a Kinetic error if it ended in one."""
    from google.cloud import container_v1

    name = f"projects/{project}/locations/{location}/operations/{operation.name}"
    deadline = time.monotonic() + timeout
    delay, shown = poll[0], time.monotonic()
    current = operation
    while current.status != container_v1.Operation.Status.DONE:
        if time.monotonic() > deadline:
            raise BackendError(
                f"{doing}: GKE operation {operation.name} still running after {timeout:g}s; it "
                "goes on, and running the command again waits for it."
            )
        time.sleep(delay)
        delay = min(delay * 2, poll[1])
        current = calling(doing, clients.container.get_operation, name=name)
        if report is not None and time.monotonic() - shown > 30:
            shown = time.monotonic()
            report(f"  ... {doing} ({current.status.name.lower()})")
    if current.error.message or current.status_message:
        raise BackendError(
            f"{doing}: GKE operation {operation.name} failed: "
            f"{current.error.message or current.status_message}"
        )
