"""Attempts whose record does not verify: whether each exists, read from what its job left.

A store writer cannot forge a child record, but can leave something that does not verify at an
attempt's key: a copy of another record, or a true record changed. Readers leave it out, so on
its own it would make an input that ran (or one that succeeded long ago) read as never
submitted. An attempt's job id follows from the verified manifest alone, so whether the attempt
exists is read from what that job left: its backend resource, a result that verifies, or an
outcome or failure its batch kept when it collected it. None of these can a store writer forge.

An attempt confirmed so counts as recorded; one that is not stays out, and its input's reason
names the key (``resume`` records it anew, beside that key, and runs it once).
"""

from collections.abc import Callable

from kinetic.bookkeeping.records import BatchListing, BatchRecords
from kinetic.handle import JobHandle
from kinetic_protocol import Backend, BatchManifest, JobStatus, KineticError

__all__ = ["confirmed_listing", "lost_inputs"]


def confirmed_listing(
    records: BatchRecords, manifest: BatchManifest, backend: Backend
) -> BatchListing:
    """:meth:`BatchRecords.listing`, each attempt whose key holds what does not verify counted
    when its job left a trace; ``unverified`` keeps only the inputs with no attempt at all."""
    listing = records.listing(manifest.total_expected, retries=manifest.retries)
    if listing.unverified:
        _confirm(listing, manifest, records, backend)
    return listing


def _confirm(
    listing: BatchListing, manifest: BatchManifest, records: BatchRecords, backend: Backend
) -> None:
    # The latest attempt first: once one of an input is confirmed, earlier ones do not matter.
    pairs = sorted(listing.unverified, key=lambda pair: (pair[0], -pair[1]))
    jobs = {pair: JobHandle.from_record(manifest.child_record(*pair)) for pair in pairs}
    states = backend.statuses([job.record for job in jobs.values()])
    kept: dict[int, str] | None = None

    def kept_job_ids() -> dict[int, str]:
        nonlocal kept  # read once, and only for an attempt the backend does not know
        if kept is None:
            failures = records.collected_failures()
            kept = {i: said.job_id for i, said in failures.items()}
            kept |= {i: outcome.job_id for i, outcome in records.collected().items()}
        return kept

    confirmed: set[int] = set()
    for (index, attempt), job in jobs.items():
        if index in confirmed or not _left_a_trace(job, states[job.job_id].status, kept_job_ids):
            continue
        confirmed.add(index)
        if attempt > listing.latest_attempts.get(index, -1):
            listing.latest_attempts[index] = attempt
    listing.unverified = {
        pair: key
        for pair, key in listing.unverified.items()
        if pair[0] not in listing.latest_attempts
    }


def _left_a_trace(
    job: JobHandle, status: JobStatus, kept_job_ids: Callable[[], dict[int, str]]
) -> bool:
    if status is not JobStatus.NOT_FOUND:
        return True
    assert job.group_index is not None
    if kept_job_ids().get(job.group_index) == job.job_id:
        return True
    try:
        job.read_envelope()  # verified: a planted result is no trace
    except KineticError:
        return False
    return True


def lost_inputs(listing: BatchListing, total: int) -> list[int]:
    """Inputs with no attempt and no submission error: in a batch whose submitter finished
    every input (no cancel, no fail-fast, no error of its own), their records were deleted
    or hidden, and nothing shows they ran."""
    return [
        index
        for index in range(total)
        if index not in listing.latest_attempts and index not in listing.submission_errors
    ]
