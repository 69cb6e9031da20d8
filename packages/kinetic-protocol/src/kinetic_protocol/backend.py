"""The interface every backend implements, and the settings it is built from.

A backend receives fully prepared :class:`~kinetic_protocol.records.JobRecord` objects whose
artifacts are already in the store; it never sees a user callable. Backends are found through
the ``kinetic.backends`` entry-point group, whose entries are :data:`BackendFactory` callables.
"""

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import msgspec

from kinetic_protocol.records import JobRecord
from kinetic_protocol.status import JobState

__all__ = ["ENTRY_POINT_GROUP", "Backend", "BackendFactory", "BackendSettings"]

ENTRY_POINT_GROUP = "kinetic.backends"


class BackendSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Resolved settings (argument > env > profile > default) a backend is built from."""

    project: str = ""
    zone: str = ""
    cluster: str = ""
    namespace: str = "default"
    store_uri: str | None = None
    """Override of the backend's own default store (``KINETIC_STORE``)."""

    @classmethod
    def for_record(cls, record: JobRecord) -> "BackendSettings":
        """The settings of the cluster and store a stored job belongs to."""
        return cls(
            project=record.project,
            zone=record.zone,
            cluster=record.cluster_name,
            namespace=record.namespace,
            store_uri=record.store_uri,
        )


class Backend(Protocol):
    """Runs prepared jobs and reports on them. Every method is safe to repeat."""

    @property
    def name(self) -> str: ...

    @property
    def store_uri(self) -> str:
        """The store this backend's jobs keep their artifacts in."""
        ...

    @property
    def poll_bounds(self) -> tuple[float, float]:
        """Shortest and longest sensible wait between status polls, in seconds."""
        ...

    def submit(self, record: JobRecord) -> None:
        """Start the job. "Already exists" for the same job id is success, not a duplicate."""
        ...

    def statuses(self, records: Sequence[JobRecord]) -> dict[str, JobState]:
        """The state of each job, keyed by job id, from one backend call where possible."""
        ...

    def logs(self, record: JobRecord, *, tail: int | None = None) -> str:
        """The job's output so far (the last ``tail`` lines when given)."""
        ...

    def follow_logs(self, record: JobRecord) -> Iterator[str]:
        """Yield output lines as they appear until the job ends."""
        ...

    def delete(self, record: JobRecord, *, timeout: float, poll_interval: float) -> None:
        """Stop the job if running and remove its backend resource; confirm within ``timeout``."""
        ...

    def list_job_ids(self) -> list[str]:
        """Ids of the jobs this backend still holds a resource for."""
        ...


BackendFactory = Callable[[BackendSettings], Backend]
