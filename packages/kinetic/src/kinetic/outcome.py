"""A terminal job's outcome as it stored it, or the error that explains its absence.

A job stores a signed result envelope; on a multi-host job each worker host may store its own
failure beside the leader's. What the job's handle returns or raises is read from these: the
lowest-index host's failure wins, and a leader's value is not trusted when another host failed
without storing an error (killed, out of memory).
"""

from kinetic import _log
from kinetic._context import store_for
from kinetic.kept_output import job_output
from kinetic.trust import SealedOutcome, open_outcome
from kinetic_protocol import (
    Failed,
    JobFailedError,
    JobNotFoundError,
    JobRecord,
    JobState,
    JobStatus,
    KineticError,
    ObjectNotFoundError,
    layout,
)
from kinetic_protocol.host_groups import record_hosts

__all__ = ["read_leader_outcome", "sealed_outcome"]


def read_leader_outcome(record: JobRecord) -> SealedOutcome:
    """The result the job (its leader) stored, verified; ``ObjectNotFoundError`` if it left
    none, ``IntegrityError`` if it is not the one the job signed."""
    key = layout.result_key(record.job_id)
    return open_outcome(record, store_for(record).read(key), key=key, kind="result")


def sealed_outcome(record: JobRecord, state: JobState) -> SealedOutcome:
    """The outcome of the job of ``record``, which ended in ``state``, with the signed bytes
    it was read from; the error that explains why there is none."""
    try:
        leader: SealedOutcome | None = read_leader_outcome(record)
    except ObjectNotFoundError:
        leader = None
    hosts = record_hosts(record)
    if (leader is not None and isinstance(leader.envelope, Failed)) or hosts == 1:
        if leader is None:
            raise _no_result_error(record, state)
        return leader
    failure = _worker_failure(record)
    if failure is not None:
        return failure
    if leader is None:
        raise _no_result_error(record, state)
    if state.status is JobStatus.FAILED:
        raise JobFailedError(
            f"Job {record.job_id} ended {state.describe()}: its leader returned a value, but "
            f"a host of its {hosts}-host slice failed without storing an error, so the "
            f"value is not trusted. Read that host's logs: kinetic jobs logs "
            f"{record.job_id} --all-hosts"
        )
    return leader


def _worker_failure(record: JobRecord) -> SealedOutcome | None:
    """The stored failure of the lowest-index worker host that stored one in the group's
    latest run (the latest any host claimed a start or stored a failure in): a host that
    failed in an earlier run, before the cluster ran the group again, says nothing of this
    one."""
    store = store_for(record)
    results: dict[tuple[int, int], str] = {}
    latest = 0
    for key in store.list(layout.hosts_prefix(record.job_id)):
        parsed = layout.parse_host_key(key)
        if parsed is None:
            _log.say(f"Ignoring {store.uri}/{key}: not a host's file (hosts/<i>/).")
            continue
        host, name = parsed
        run = layout.host_file_run(name, "result.msgpack")
        if run is not None:
            results[run, host] = key
        latest = max(latest, run or 0, layout.host_file_run(name, "started.json") or 0)
    mine = sorted(host for run, host in results if run == latest)
    if not mine:
        return None
    key = results[latest, mine[0]]
    outcome = open_outcome(record, store.read(key), key=key, kind="host-result")
    return outcome if isinstance(outcome.envelope, Failed) else None


def _has_record(record: JobRecord) -> bool:
    """Whether the store says the job was submitted (attempt 0 of an array batch's input
    has no record of its own: its batch's manifest is)."""
    if record.in_array and record.attempt == 0 and record.group_id is not None:
        key = layout.manifest_key(record.group_id)
    elif record.group_id is not None and record.group_index is not None:
        key = layout.child_key(record.group_id, record.group_index, record.attempt)
    else:
        key = layout.job_record_key(record.job_id)
    return store_for(record).exists(key)


def _no_result_error(record: JobRecord, state: JobState) -> Exception:
    job_id = record.job_id
    if state.status is JobStatus.NOT_FOUND and not _has_record(record):
        return JobNotFoundError(
            f"No job {job_id!r} in {record.store_uri}: it never existed or was "
            "cleaned up. `kinetic jobs list` shows the jobs that exist."
        )
    if state.status is JobStatus.NOT_FOUND:
        why = state.detail or "it was cancelled or cleaned up before it finished"
        return JobFailedError(f"Job {job_id} is gone (NOT_FOUND) and left no result: {why}.")
    return JobFailedError(
        f"Job {job_id} ended {state.describe()} without storing a result. "
        f"Read its logs: kinetic jobs logs {job_id}\n{_log_tail_for_error(record)}"
    )


def _log_tail_for_error(record: JobRecord, lines: int = 20) -> str:
    """The log's last lines to decorate an error; never replaces that error with its own."""
    try:
        return job_output(record, tail=lines)
    except KineticError as error:
        return f"(logs unavailable: {error})"
