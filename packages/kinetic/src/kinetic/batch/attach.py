"""Rebuild a batch's handle from its stored records, from any process or machine."""

import threading
from dataclasses import dataclass

from kinetic import _log
from kinetic._context import open_store
from kinetic._waiting import Deadline
from kinetic.backends import get_backend
from kinetic.batch.array import client_rule
from kinetic.batch.children import ChildJobs
from kinetic.batch.handle import BatchHandle
from kinetic.batch.lease import submitter_status
from kinetic.batch.state import BatchState
from kinetic.batch.submitter import FailurePolicy
from kinetic.batch.unverified import confirmed_listing
from kinetic.bookkeeping.records import BatchListing, BatchRecords, read_manifest
from kinetic.bookkeeping.sealed import BatchSeal
from kinetic.config import resolve_settings
from kinetic_protocol import (
    Backend,
    BatchCompletion,
    BatchManifest,
    CorruptRecordError,
    IntegrityError,
    ObjectNotFoundError,
    RemoteError,
    SchemaVersionError,
    layout,
)
from kinetic_protocol.signing import peek_json

__all__ = ["BatchSummary", "attach_batch", "list_batches"]

log = _log.get_logger(__name__)


def _backend(project: str | None, cluster: str | None, backend: str | None) -> Backend:
    settings = resolve_settings(backend=backend, project=project, cluster=cluster, quiet=True)
    return get_backend(settings.backend_name, settings.backend_settings())


def _apply(state: BatchState, listing: BatchListing) -> None:
    """Bring ``state`` up to date with what the store lists."""
    with state.lock:
        for index, error in listing.submission_errors.items():
            state.submission_errors.setdefault(
                index, RemoteError(error.exc_type, error.message, "")
            )
        # An input whose submission failed: any record of it is not a job that ran.
        state.jobs.follow(listing.latest_attempts, skip=state.submission_errors)
        if listing.complete is not None:
            state.stopped_because = _ended_early(listing.complete)
            state.submitted_all = state.stopped_because is None
        state.unverified = {index: key for (index, _), key in sorted(listing.unverified.items())}
    state.notify()


def _ended_early(completion: BatchCompletion) -> str | None:
    if completion.cancelled:
        return "the batch was cancelled"
    if completion.fail_fast:
        return "fail_fast stopped the batch after a failure"
    if completion.error:
        return f"the batch stopped submitting on an error: {completion.error}"
    if completion.cost_capped:
        return f"max_cost stopped the batch: {completion.cost_capped}"
    return None


def _known(listing: BatchListing) -> int:
    return len(set(listing.latest_attempts) | set(listing.submission_errors))


def _follow(
    state: BatchState, manifest: BatchManifest, records: BatchRecords, listing: BatchListing
) -> bool:
    """Apply ``listing``; True once no more children or attempts will appear: the submitter
    said it is done, or it is gone (then ``state`` says what became of it)."""
    _apply(state, listing)
    status = submitter_status(records, listing.complete)
    if status.gone:
        with state.lock:
            state.submitter_gone = status.describe(
                manifest.group_id, _known(listing), manifest.total_expected
            )
    return status.state != "submitting"


def _poll_until_complete(
    state: BatchState,
    manifest: BatchManifest,
    records: BatchRecords,
    backend: Backend,
    poll_interval: float,
    poll_timeout: float | None,
) -> None:
    deadline = Deadline(poll_timeout)
    try:
        while not state.stopping.wait(poll_interval) and not state.detached.is_set():
            if _follow(state, manifest, records, confirmed_listing(records, manifest, backend)):
                break
            if deadline.expired:
                log.warning("attach_batch stopped polling", group_id=manifest.group_id)
                break
    except Exception:
        log.warning("attach_batch stopped polling", group_id=manifest.group_id, exc_info=True)
    if not state.detached.is_set():
        state.submission_done.set()
    state.notify()


def attach_batch(
    group_id: str,
    project: str | None = None,
    cluster: str | None = None,
    poll_interval: float = 10.0,
    poll_timeout: float | None = None,
    *,
    backend: str | None = None,
) -> BatchHandle:
    """Reattach to batch ``group_id``: one manifest read and one listing of its children.

    ``jobs`` keeps input order, with ``None`` for inputs not (yet) submitted. While the original
    process is still submitting, a background thread picks up new children every
    ``poll_interval`` seconds until submission ends, its submitter is gone (no heartbeat for
    ``KINETIC_BATCH_LEASE`` seconds), or ``poll_timeout`` passes. Waiting on the handle never
    outlasts a dead submitter: its results then say what was never submitted, and
    :meth:`BatchHandle.resume` submits it.
    """
    chosen = _backend(project, cluster, backend)
    store = open_store(chosen.store_uri)
    manifest = read_manifest(store, group_id)
    if not manifest.signed_records:
        raise IntegrityError(
            f"Batch {group_id} was written by a Kinetic from before signed batch records: its "
            "child records, leases and completion cannot be verified, so this Kinetic does not "
            "act on them. Use the Kinetic that wrote it, or run it again; "
            f"`kinetic batch cleanup {group_id}` still removes it.",
            job_id=group_id,
            key=f"{store.uri}/{layout.manifest_key(group_id)}",
        )
    seal = BatchSeal.of_record(manifest.job_template)
    records = BatchRecords(store, group_id, seal, array=manifest)
    listing = confirmed_listing(records, manifest, chosen)
    total = manifest.total_expected
    jobs = ChildJobs(total, manifest)
    state = BatchState(total=total, rule=client_rule(manifest), jobs=jobs)
    complete = _follow(state, manifest, records, listing)
    state.more_attempts_possible = lambda: not state.submission_done.is_set()
    if _known(listing) < total:
        status = state.submitter_gone or (
            state.stop_reason() if complete else "it is still being submitted"
        )
        _log.say(
            f"Batch {group_id} has {_known(listing)} of {total} children so far: "
            f"{status or 'its submission ended early'}."
        )
    policy = FailurePolicy(state, fail_fast=False, cancel_running=False)
    handle = BatchHandle(
        manifest=manifest, state=state, backend=chosen, records=records, policy=policy
    )
    if complete:
        state.submission_done.set()
    else:
        threading.Thread(
            target=_poll_until_complete,
            args=(state, manifest, records, chosen, poll_interval, poll_timeout),
            name=f"kinetic-attach-{group_id}",
            daemon=True,
        ).start()
    return handle


@dataclass(frozen=True)
class BatchSummary:
    """One stored batch, as ``kinetic batch list`` shows it."""

    group_id: str
    name: str | None
    func_name: str
    total_expected: int
    created_at: str
    tags: dict[str, str]


def list_batches(
    project: str | None = None, cluster: str | None = None, *, backend: str | None = None
) -> list[BatchSummary]:
    """Every batch whose manifest is in the store, newest first.

    A manifest that cannot be read (corrupt, or from a newer Kinetic) is left out with a
    warning naming its store key; the other batches are still listed.
    """
    store = open_store(_backend(project, cluster, backend).store_uri)
    summaries = []
    for key in store.list(layout.MANIFESTS_PREFIX):
        try:
            # Shown, not acted on: a listing does not need every namespace's keys.
            where = f"{store.uri}/{key}"
            manifest = peek_json(store.read(key), BatchManifest, subject=key, key=where)
        except ObjectNotFoundError:
            continue  # cleaned up between the listing and the read
        except (CorruptRecordError, IntegrityError, SchemaVersionError) as exc:
            _log.say(f"Skipping a batch in the listing: {exc}")
            continue
        summaries.append(
            BatchSummary(
                group_id=manifest.group_id,
                name=manifest.name,
                func_name=manifest.func_name,
                total_expected=manifest.total_expected,
                created_at=manifest.created_at,
                tags=dict(manifest.tags),
            )
        )
    return sorted(summaries, key=lambda s: (s.created_at, s.group_id), reverse=True)
