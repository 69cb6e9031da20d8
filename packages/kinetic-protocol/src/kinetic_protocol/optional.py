"""The optional parts of the backend and store contracts, each a small ``Protocol``.

A backend or store may offer more than :class:`~kinetic_protocol.Backend` and
:class:`~kinetic_protocol.ObjectStore` require. The client looks for each extra by its
protocol (``isinstance``), never by a class or a name, and a capability flag that promises one
is checked against it (:func:`kinetic_protocol.conformance.contract_problems`, run over every
installed backend by the conformance test), so a backend that declares a flag without the
method fails there, not in a user's debug session.
"""

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from kinetic_protocol.records import JobRecord

__all__ = ["BucketStore", "PortForwarding", "SharesJobs"]


@runtime_checkable
class PortForwarding(Protocol):
    """A backend whose jobs' debug servers are reached through a forwarded port
    (``Capabilities.debug_port_forward``)."""

    def port_forward_command(
        self, record: JobRecord, local_port: int, remote_port: int
    ) -> list[str]:
        """The command that forwards ``local_port`` here to ``remote_port`` of the job."""
        ...


@runtime_checkable
class SharesJobs(Protocol):
    """A backend that shares its cluster and store with others: listing its jobs without a
    backend named lists theirs too (gke Jobs and pathways slices)."""

    related_backends: Sequence[str]


@runtime_checkable
class BucketStore(Protocol):
    """A store over a Cloud Storage bucket: bulk transfers use its client directly instead of
    one ``write`` per object."""

    @property
    def bucket_name(self) -> str: ...

    @property
    def prefix(self) -> str:
        """The store's object-name prefix inside the bucket (``""`` or ending in ``/``)."""
        ...

    def client(self) -> Any:
        """Its ``google.cloud.storage.Client``."""
        ...
