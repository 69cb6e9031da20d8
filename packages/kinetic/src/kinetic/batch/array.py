"""The operations of a batch that its backend holds as one array object.

On a backend with ``Capabilities.array_batches`` every child exists once the array object
does; the backend runs, retries and stops them. So an array batch is cancelled and cleaned up
by deleting that one object, resumed by creating it (if its submitter died first), and this
process retries none of its children. :func:`array_of` chooses these versions once per batch;
a batch without an array object has none, and its per-child versions live in the handle.
"""

from collections.abc import Callable

import msgspec

from kinetic.bookkeeping.records import BatchRecords
from kinetic_protocol import ArrayBackend, BatchManifest, RetryRule

__all__ = ["ArrayBatch", "array_of", "client_rule", "submit_array"]


class ArrayBatch:
    """The array versions of cancel, resume and cleanup for the batch of ``manifest``."""

    def __init__(self, manifest: BatchManifest) -> None:
        self.manifest = manifest

    def _backend(self) -> ArrayBackend:
        from kinetic._context import array_backend_for

        return array_backend_for(self.manifest.job_template)

    def delete(self) -> None:
        """Delete the array object, every index with it (confirmed): whatever still runs
        stops."""
        self._backend().delete_array(self.manifest, timeout=60, poll_interval=0.5)

    def resume(
        self, records: BatchRecords, *, complete: bool, env: Callable[[], dict[str, str]]
    ) -> str:
        """An array batch is complete once its object exists: there is nothing to finish,
        unless its submitter died between storing the batch and creating the object.
        ``env`` reads the captured variables again, only if the object is created."""
        manifest = self.manifest
        if complete:
            return (
                f"Batch {manifest.group_id} is held by array objects ({_names(manifest)}) "
                "that its backend runs and retries itself; nothing to resume."
            )
        if records.cancel_requested():
            return f"Batch {manifest.group_id} was cancelled; nothing to resume."
        backend = self._backend()
        submit_array(backend, manifest, records, env())
        return (
            f"Resumed batch {manifest.group_id}: created its array objects "
            f"{_names(manifest)} (all {manifest.total_expected} inputs), where missing."
        )


def _names(manifest: BatchManifest) -> str:
    return ", ".join(manifest.array_part_name(part) for part in range(manifest.array_parts))


def array_of(manifest: BatchManifest) -> ArrayBatch | None:
    """The array versions of the batch's operations, or None for a per-child batch."""
    return ArrayBatch(manifest) if manifest.array_job else None


def client_rule(manifest: BatchManifest) -> RetryRule:
    """When this process runs a failed input again: never for an array batch, whose backend
    goes by the same rule itself."""
    rule = manifest.retry_rule
    return msgspec.structs.replace(rule, retries=0) if manifest.array_job else rule


def submit_array(
    backend: ArrayBackend, manifest: BatchManifest, records: BatchRecords, env: dict[str, str]
) -> None:
    """Create an array batch's object (again: "already exists" is success) and record that
    the batch is complete: what ``resume`` does when a submitter died in between."""
    backend.submit_array(manifest, env=env)
    records.mark_complete(manifest.total_expected, cancelled=False)
