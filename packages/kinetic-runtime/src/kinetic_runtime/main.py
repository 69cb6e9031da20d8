"""Run one job: fetch its artifacts, call the function, store a result envelope.

Exit status: 0 when the function returned, 1 when it raised, 2 when the job could not run its
function at all (a phase before ``run`` failed) or its result could not be stored, and 3 when
a host of a multi-host job was started again in a new pod after it had begun (see below), and
4 when it ended its run at the attempt's timeout (``KINETIC_ATTEMPT_TIMEOUT``; see
``kinetic_runtime.deadline``), 87 (``EXIT_NO_SPACE``) when a full disk stopped it before the
function ran or kept its result from being stored (``kinetic_runtime.disk_full``), and 86
(``EXIT_PREEMPTIONS_SPENT``) when a run of an array
batch's index started after the index was preempted more often than its ``preemption_retries``
allow (see ``kinetic_runtime.attempts``).

The function's ``sys.exit`` is an outcome like any other, never the runtime's own exit:
``sys.exit()``, ``sys.exit(0)`` and ``sys.exit(None)`` succeed with the value ``None``; any
other code (a non-zero int, a message) fails like a raised exception. Every other
``BaseException`` the function raises (``KeyboardInterrupt``, ``GeneratorExit``, a subclass
of its own) is stored as a failure too, so every run that reaches the function leaves an
envelope.

Each run's output (stdout and stderr) is kept in the store as it goes, by a parent process that
outlives the job's own (``kinetic_runtime.keeper``); the exit status is the job's.

On a multi-host job every host runs this entrypoint: the leader (host 0) stores the result, a
worker stores only its own failure. A host's container that Kubernetes restarts after it ran
(a LeaderWorkerSet's pods always restart) waits for the slice to be stopped instead of running
the function again.
"""

import argparse
import contextlib
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

from kinetic_protocol import (
    EXIT_NO_SPACE,
    EXIT_PREEMPTIONS_SPENT,
    Failed,
    HostStart,
    ObjectStore,
    ResultEnvelope,
    SigningKeyError,
    Succeeded,
    layout,
)
from kinetic_protocol.errors import is_disk_full
from kinetic_protocol.records import encode_json, encode_result
from kinetic_protocol.signing import Keyring, SignedKind, seal_blob
from kinetic_protocol.slices import REPLACED_EXIT
from kinetic_runtime import settings
from kinetic_runtime.attempts import IndexRun, record_attempt
from kinetic_runtime.calls import (
    BatchInput,
)
from kinetic_runtime.deadline import arm_deadline
from kinetic_runtime.disk_full import overwrite, with_room
from kinetic_runtime.job import JobRun, default_data_dir, now, say
from kinetic_runtime.keeper import keep_output
from kinetic_runtime.multihost import SliceHost, claim_host
from kinetic_runtime.phases import Phase, PhaseError
from kinetic_runtime.stores import load_client_library, open_store

__all__ = ["main", "run_job"]

EXIT_OK, EXIT_USER_ERROR, EXIT_INFRA_ERROR = 0, 1, 2
EXIT_HOST_REPLACED = REPLACED_EXIT


def _result_key(job_id: str, host: SliceHost | None, envelope: ResultEnvelope) -> str | None:
    """Where this host's envelope goes: the leader's is the job's result; a worker's failure
    is its run's (an earlier run's is never read for a later one); a worker's success carries
    nothing the client reads."""
    if host is None or host.is_leader:
        return layout.result_key(job_id)
    if not isinstance(envelope, Failed):
        return None
    return layout.host_result_key(job_id, host.index, host.run)


def _keyring() -> Keyring:
    """The keys that verify this job's call and sign its result (see ``SIGNING_KEYS``)."""
    where = settings.SIGNING_KEYS.from_env()
    if not where:
        raise SigningKeyError(
            f"{settings.SIGNING_KEYS.env} is not set, so this job cannot verify its call nor "
            "sign its result. The backend that started it must set it (a mounted Secret in a "
            "pod, the Kinetic home's keys for a local job)."
        )
    return Keyring.from_directory(Path(where))


def _hold() -> NoReturn:
    """Wait, doing nothing, until the pod is deleted (SIGTERM ends the process)."""
    while True:
        signal.pause()


def _release_slice(job_id: str, host: SliceHost) -> None:
    """Stop this job's slice when its outcome is known (see :mod:`kinetic_runtime.release`);
    best effort: a client's next poll stops it otherwise."""
    from kinetic_runtime.release import SliceApi, release_slice

    try:
        api = SliceApi.from_pod()
        if api is not None:
            release_slice(api, host, lambda message: say(f"job {job_id}: {message}"))
    except Exception as exc:
        say(f"job {job_id}: could not stop its slice ({exc!r}); a client's next poll does")


def _start_host(store: ObjectStore, job_id: str, host: SliceHost) -> int | None:
    """Claim ``host`` for this run; an exit status instead when it must not run again."""
    claim = claim_host(store, job_id, host)
    if claim == "restarted":
        say(f"job {job_id}: {host.label} has run already in this pod; waiting to be stopped")
        _release_slice(job_id, host)
        return _hold()
    if claim == "replaced":
        say(
            f"job {job_id}: {host.label} started in a new pod after its first pod was lost "
            "(evicted, preempted or its node failed); a slice is never re-run in part."
        )
        return EXIT_HOST_REPLACED
    return None


def _record_start(store: ObjectStore, job_id: str) -> None:
    """Say when a single-host job began running (its timeline's start); best effort, since a
    job that cannot write this will say why when it stores its result."""
    start = HostStart(job_id=job_id, host=0, hosts=1, instance=str(os.getpid()), started_at=now())
    try:
        store.write(layout.host_started_key(job_id, 0), encode_json(start))
    except Exception as exc:
        say(f"job {job_id}: could not record its start time: {exc!r}")


def _start_index_run(
    store: ObjectStore,
    keyring: Keyring,
    job_id: str,
    member: BatchInput | None,
    run: IndexRun | None,
) -> int | None:
    """Record a retry of an array batch's index; an exit status instead when the index's
    preemptions are spent (the Job does not count them: this run ends it). Nothing for any
    other job."""
    if run is None or member is None:
        return None
    if run.preemptions_spent:
        say(
            f"job {job_id}: preempted {run.preemptions} times, more than its "
            f"preemption_retries ({run.preemption_retries}); not running it again"
        )
        return EXIT_PREEMPTIONS_SPENT
    if run.attempt:
        try:
            record_attempt(store, keyring, member.group_id, member.index, run.attempt, job_id)
        except Exception as exc:
            say(f"job {job_id}: could not record its attempt ({exc!r}); it runs all the same")
    return None


def _keep_output(store: ObjectStore, store_uri: str, job_id: str, host: int) -> ObjectStore:
    """Fork the keeper of this run's output (see :func:`keep_output`); the store this process
    uses from then on. Never ``store``, opened before the fork: its connection pool's sockets
    and locks are the parent's too (a 2-host leader hung for minutes on a pool lock copied
    while held). Its client library is loaded before the fork, once for both processes."""
    load_client_library(store)
    keep_output(store_uri, job_id, host, lambda m: say(f"job {job_id}: {m}"))
    return open_store(store_uri)


def run_job(
    store_uri: str,
    job_id: str,
    workdir: Path,
    member: BatchInput | None = None,
    index_run: IndexRun | None = None,
) -> int:
    """Run ``job_id`` from ``store_uri`` in ``workdir``; return the process exit status.

    ``member``: the job is a batch child, which runs its batch's call with its own input;
    ``index_run``: one run of an index of an array batch (``job_id`` is its attempt's).
    """
    begin = time.monotonic()
    try:
        keyring = _keyring()
    except Exception as exc:
        say(f"job {job_id}: {exc}")
        return EXIT_INFRA_ERROR
    try:
        store = open_store(store_uri)
    except Exception as exc:
        say(f"job {job_id}: cannot open store {store_uri}: {exc}")
        return EXIT_INFRA_ERROR
    try:
        host = SliceHost.from_env()
        early = (
            _start_index_run(store, keyring, job_id, member, index_run)
            if host is None
            else _start_host(store, job_id, host)
        )
    except Exception as exc:
        say(f"job {job_id}: cannot start this host of a multi-host job: {exc}")
        return EXIT_INFRA_ERROR
    if early is not None:
        return early
    # From here on this process runs the job: its output is kept in the store by a parent
    # that outlives it (a restarted host, which only waits, keeps nothing over its first run's).
    store = _keep_output(store, store_uri, job_id, host.index if host else 0)
    arm_deadline(job_id)  # only a run that goes on: a restarted host waits instead
    if host is None:
        _record_start(store, job_id)
    job = JobRun(store, job_id, workdir, host, member, keyring=keyring)
    envelope: ResultEnvelope
    try:
        try:
            envelope = job.run()
        except PhaseError:
            raise
        except Exception as exc:  # a bug of ours: still leave an envelope that says so
            raise PhaseError(Phase.INTERNAL, exc) from exc
        code = EXIT_OK
    except PhaseError as error:
        envelope = job.failed(error)
        code = _failed_with(job_id, error, envelope, workdir)
    unstored = _store_outcome(store, keyring, job_id, host, envelope)
    if unstored is not None:
        return unstored
    outcome = "succeeded" if isinstance(envelope, Succeeded) else f"failed ({envelope.phase})"
    where = f" on {host.label}" if host else ""
    say(f"job {job_id}: {outcome}{where} in {time.monotonic() - begin:.2f}s")
    return code


def _failed_with(job_id: str, error: PhaseError, envelope: Failed, workdir: Path) -> int:
    """The exit status of a run that failed in ``error``'s phase, which it says."""
    if error.phase is Phase.RUN:
        sys.stderr.write(envelope.traceback)
        return EXIT_USER_ERROR
    if is_disk_full(error.cause):  # the function never ran: the backend runs it again
        cause = error.cause
        where = cause.filename if isinstance(cause, OSError) and cause.filename else workdir
        _no_space(job_id, f"in phase {error.phase.value}, writing under {where}: {cause}")
        return EXIT_NO_SPACE
    say(f"job {job_id}: failed in phase {error.phase.value}: {error.cause!r}")
    return EXIT_INFRA_ERROR


def _store_outcome(
    store: ObjectStore,
    keyring: Keyring,
    job_id: str,
    host: SliceHost | None,
    envelope: ResultEnvelope,
) -> int | None:
    """Store the run's envelope (waiting a little for room on a full disk); the exit status
    instead when it could not be stored."""
    key = _result_key(job_id, host, envelope)
    if key is None:
        return None
    kind: SignedKind = "result" if key == layout.result_key(job_id) else "host-result"
    try:
        sealed = seal_blob(keyring, kind, job_id, encode_result(envelope))
        with_room(lambda: store.write(key, sealed))
    except Exception as exc:
        if is_disk_full(exc):
            _no_space(job_id, f"storing its result: {exc}")
            return EXIT_NO_SPACE
        say(f"job {job_id}: could not store the result: {exc!r}")
        return EXIT_INFRA_ERROR
    return None


def _no_space(job_id: str, what: str) -> None:
    """Say why this run ends with ``EXIT_NO_SPACE``: in the log, and where the backend reads."""
    message = f"No space left on device while {what}"
    say(f"job {job_id}: {message}")
    room = settings.TERMINATION_LOG.from_env()  # set aside by the local supervisor
    if room:
        overwrite(room, message)


def _leave_a_failed_slice(code: int) -> None:
    """End a slice host's process at once when its run failed.

    JAX's exit handler would wait at a shutdown barrier (minutes) for the other hosts, which
    may run on, and a host whose process has not ended is not seen to fail: the backend stops
    the others when this one exits. Nothing is left to do here: the envelope is stored.
    """
    jax = sys.modules.get("jax")
    if code != EXIT_OK and jax is not None and jax.distributed.is_initialized():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def offset_index(job: str, index: int | None, offset: int) -> tuple[str, int]:
    """The job id and input of an index of a batch's later array object: ``index`` and the
    id ``<prefix>-<index>`` are counted from ``offset`` (``--index-offset``)."""
    if index is None or offset < 0 or not job.endswith(f"-{index}"):
        raise ValueError(
            f"--index-offset {offset} needs --index and a --job ending in -<index> "
            f"(got --job {job!r}, --index {index})"
        )
    return f"{job.removesuffix(str(index))}{offset + index}", offset + index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kinetic_runtime", description=__doc__)
    parser.add_argument("--store", default=settings.STORE.from_env(), help="store URI")
    parser.add_argument("--job", default=settings.JOB_ID.from_env(), help="job id")
    parser.add_argument("--group", help="the batch of a batch child (with --index)")
    parser.add_argument("--index", type=int, help="a batch child's input index")
    parser.add_argument(
        "--index-offset",
        type=int,
        default=0,
        help="the first input of the array object this runs in: --index, and the number "
        "ending --job, are counted from it",
    )
    parser.add_argument("--workdir", default=settings.WORKDIR.from_env())
    options = parser.parse_args(argv)
    if not options.store or not options.job:
        parser.error("--store and --job (or KINETIC_STORE and KINETIC_JOB_ID) are required")
    if (options.group is None) != (options.index is None):
        parser.error("--group and --index go together (a batch child's batch and input)")
    if options.index_offset:
        try:
            options.job, options.index = offset_index(
                options.job, options.index, options.index_offset
            )
        except ValueError as exc:
            parser.error(str(exc))
    member = None if options.group is None else BatchInput(options.group, options.index)
    try:
        index_run = IndexRun.from_env()
    except ValueError as exc:
        parser.error(str(exc))
    job_id = options.job if index_run is None else index_run.job_id(options.job)
    if options.workdir:
        code = run_job(options.store, job_id, Path(options.workdir), member, index_run)
    else:
        with _own_workdir(job_id) as workdir:
            code = run_job(options.store, job_id, workdir, member, index_run)
    _leave_a_failed_slice(code)
    return code


@contextlib.contextmanager
def _own_workdir(job_id: str) -> Iterator[Path]:
    """A temporary working directory, removed with the data directory beside it when the job
    ends: where containers share the node's ``/tmp`` (a test kubelet), nothing of the job's
    code or data is left behind. The keeper's process never enters this: it returns in the
    job's process only (``keep_output``)."""
    import shutil
    import tempfile

    workdir = Path(tempfile.mkdtemp(prefix=f"kinetic-{job_id}-"))
    try:
        yield workdir
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        shutil.rmtree(default_data_dir(workdir), ignore_errors=True)
