"""The durable :class:`JobHandle` of one job: observe, collect and clean it up from anywhere."""

import dataclasses
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from kinetic import handle_record
from kinetic._context import backend_for, store_for
from kinetic._log_copier import wait_for_result
from kinetic._results import unwrap
from kinetic._waiting import StatusCallback, until_terminal
from kinetic.bookkeeping.kept import keep_with_batch, seen_by_batch
from kinetic.trust import SealedOutcome
from kinetic_protocol import (
    AttemptFailure,
    HostSelection,
    JobRecord,
    JobState,
    JobStatus,
    Mount,
    ResultEnvelope,
    layout,
)
from kinetic_protocol.records import DEFAULT_PREEMPTION_RETRIES, SCHEMA_VERSION

if TYPE_CHECKING:
    from pathlib import Path

    from kinetic.debug import DebugProcess
    from kinetic.handle_record import JobContext
    from kinetic.outputs import JobOutputs, OutputFile
    from kinetic.usage import Usage

__all__ = ["JobHandle"]


@dataclasses.dataclass(frozen=True, eq=True, repr=False, slots=True)
class JobHandle(handle_record.RecordBacked):
    """All it takes to observe, collect and clean up a job from any machine; no closure state.

    A small frozen dataclass with slots (``dataclasses.asdict`` gives exactly :meth:`to_dict`,
    ``dataclasses.replace`` makes a changed copy). The first fields are the public ones of the
    API reference; the keyword-only ones after them are protocol extras of the stored
    :class:`~kinetic_protocol.JobRecord`, kept so nothing is lost on a round trip. Field values
    are validated on construction (``ConfigError``).
    """

    job_id: str
    backend: str
    project: str
    cluster_name: str
    zone: str
    namespace: str
    bucket_name: str
    k8s_name: str
    image_uri: str
    accelerator: str
    func_name: str
    display_name: str
    created_at: str
    group_id: str | None = None
    group_kind: str | None = None
    group_index: int | None = None
    debug: bool = False
    # Protocol extras (``JobRecord``); not part of the public handle signature.
    schema_version: int = dataclasses.field(default=SCHEMA_VERSION, kw_only=True)
    attempt: int = dataclasses.field(default=0, kw_only=True)
    spot: bool = dataclasses.field(default=False, kw_only=True)
    kinetic_version: str = dataclasses.field(default="", kw_only=True)
    backend_data: dict[str, str] = dataclasses.field(default_factory=dict, kw_only=True)
    output_dir: str = dataclasses.field(default="", kw_only=True)
    timeout: float | None = dataclasses.field(default=None, kw_only=True)
    preemption_retries: int = dataclasses.field(default=DEFAULT_PREEMPTION_RETRIES, kw_only=True)
    mounts: list[Mount] = dataclasses.field(default_factory=list, kw_only=True)
    in_array: bool = dataclasses.field(default=False, kw_only=True)
    queue: str = dataclasses.field(default="", kw_only=True)
    priority: str = dataclasses.field(default="", kw_only=True)
    array_offset: int = dataclasses.field(default=0, kw_only=True)
    nodes: int = dataclasses.field(default=1, kw_only=True)
    slices: int = dataclasses.field(default=1, kw_only=True)
    fallback_accelerators: list[str] = dataclasses.field(default_factory=list, kw_only=True)
    capacity: list[str] = dataclasses.field(default_factory=list, kw_only=True)
    max_run_duration: int = dataclasses.field(default=0, kw_only=True)
    if TYPE_CHECKING:  # set by __post_init__; not a field at run time
        _record: JobRecord = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        object.__setattr__(self, "_record", handle_record.record_from_fields(fields))

    @classmethod
    def from_record(cls, record: JobRecord) -> "JobHandle":
        """The handle of ``record``, not checked again: msgspec checked it when it was made."""
        return _from_record(record)

    @classmethod
    def from_job_context(
        cls, ctx: "JobContext", backend_name: str, namespace: str, k8s_name: str
    ) -> "JobHandle":
        """Build a handle from a live job context: what a submitter holds while it submits one
        job (:class:`kinetic.handle_record.JobContext` says what it reads), through the same
        stored record as any other handle; a missing or invalid attribute is a ConfigError."""
        record = handle_record.record_from_context(ctx, backend_name, namespace, k8s_name)
        return cls.from_record(record)

    @property
    def record(self) -> JobRecord:
        """The stored record behind this handle (includes protocol extras such as ``attempt``)."""
        return self._record

    def __repr__(self) -> str:
        return (
            f"JobHandle(job_id={self.job_id!r}, backend={self.backend!r}, func={self.func_name!r})"
        )

    def __hash__(self) -> int:
        return hash(self._record.job_id)

    def __reduce__(self) -> tuple[Any, ...]:
        return (JobHandle.from_record, (self._record,))  # its record: the same handle anywhere

    # -- serialization -------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict of the handle; :meth:`from_dict` rebuilds it anywhere."""
        return dict(msgspec.to_builtins(self._record))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JobHandle":
        """Rebuild a handle; unknown keys (from a newer Kinetic) are ignored."""
        return cls.from_record(handle_record.record_from_dict(d))

    def _repr_html_(self) -> str:
        """Jupyter's view: id, status with its reason, and the CLI command for its logs."""
        from kinetic.display import job_html

        return job_html(self)

    # -- observation ---------------------------------------------------------------------

    def status_detail(self) -> JobState:
        """The status plus the backend's reason for it (exit code, pod condition, ...); a debug
        job waiting for its debugger is RUNNING "waiting for debugger at HOST:PORT"."""
        state = backend_for(self._record).statuses([self._record])[self.job_id]
        state = seen_by_batch(self._record, state)  # a child collected with its batch
        if not self.debug:
            return state
        from kinetic.debug import waiting_detail

        return waiting_detail(self._record, state)

    def status(self) -> JobStatus:
        """The job's current status."""
        return self.status_detail().status

    def usage(self) -> "Usage | None":
        """Accelerator time this attempt used so far and its list cost (``kinetic accelerators``
        shows the prices); None where it runs on no billed accelerator (``local``, ``cpu``)."""
        from kinetic.usage import job_usage

        return job_usage(self._record, self.status_detail, self.read_envelope)

    def failure(self) -> AttemptFailure | None:
        """Why this attempt ended without a value, or None while it runs, once it succeeded,
        or when it is gone for no recorded reason.

        ``cause`` is data (a :class:`~kinetic.FailureCause`: ``user``, ``exit``, ``oom``,
        ``preempted``, ``unschedulable``, ``image``, ``timeout``, ``cancelled``,
        ``infrastructure``), ``reason`` the words that status and errors show, ``attempt``
        which attempt this handle is (0 first), ``phase`` the runtime phase that failed.
        """
        from kinetic.failure import failure_of

        return failure_of(self, self.status_detail())

    def tail(self, n: int = 100, *, host: HostSelection = None) -> str:
        """The last ``n`` lines of the job's output (on a multi-host job: of the leader, or of
        the host whose failure ended the job; of host ``host``; of every host with
        ``host="all"``). Lines are counted as the log holds them: Kinetic's own ``[kinetic]``
        lines (how the run started and ended, why it failed) are among them.

        Once the backend's own log is gone (its pod or local directory), or out of reach, the
        output the job kept in the store stands in for it: the tail of each run, up to
        ``KINETIC_KEEP_OUTPUT_BYTES`` per host."""
        from kinetic.kept_output import job_output

        return job_output(self._record, tail=n, host=host)

    def logs(self, follow: bool = False, *, host: HostSelection = None) -> str | None:
        """The job's output so far; with ``follow``, print it until the job ends instead.

        On a multi-host job: the leader's by default (or, once the job failed on one host,
        that host's: the others may have said nothing), host ``i``'s with ``host=i``, every
        host's with ``host="all"`` (each line prefixed ``[host i]``). Read as :meth:`tail`
        reads it; a job whose backend log is gone gives (or, following, prints) its kept
        output."""
        if not follow:
            from kinetic.kept_output import job_output

            return job_output(self._record, host=host)
        for line in self.follow_lines(host=host):
            sys.stdout.write(line)
            sys.stdout.flush()
        return None

    def follow_lines(self, *, host: HostSelection = None) -> Iterator[str]:
        """The job's output lines as they are written, until it ends (``logs(follow=True)``
        prints them). A job whose backend log is gone yields the output kept in the store."""
        from kinetic.kept_output import follow_output

        return follow_output(self._record, host=host)

    # -- collection ----------------------------------------------------------------------

    def read_envelope(self) -> ResultEnvelope:
        """The stored result envelope, verified; ``ObjectNotFoundError`` if the job left none,
        ``IntegrityError`` if it is not the one the job signed."""
        from kinetic.outcome import read_leader_outcome

        return read_leader_outcome(self._record).envelope

    def wait(
        self,
        timeout: float | None = None,
        on_status_change: Callable[[JobStatus], None] | None = None,
    ) -> JobState:
        """Block until the job is terminal; ``TimeoutError`` leaves it running. Each new status
        goes to ``on_status_change``; if it raises, the wait goes on and the first exception is
        shown on stderr (the ``kinetic`` logger) with its traceback."""
        notify = StatusCallback(on_status_change, self.job_id)
        return until_terminal(backend_for(self._record), self._record, timeout, notify)

    def result(
        self,
        timeout: float | None = None,
        cleanup: bool | None = None,
        cleanup_timeout: float = 180,
        cleanup_poll_interval: float = 2,
        stream_logs: bool | None = None,
        on_status_change: Callable[[JobStatus], None] | None = None,
    ) -> Any:
        """Wait for the job and return its value, or re-raise the remote exception.

        A successful collection cleans up (unless ``cleanup=False`` or a debug job); a failed
        job is kept so its logs can be read.
        """
        state = wait_for_result(self._record, timeout, on_status_change, bool(stream_logs))
        sealed = self.sealed_outcome(state)
        value = unwrap(sealed.envelope)  # raises the user's exception for a failed job
        if cleanup if cleanup is not None else not self.debug:
            keep_with_batch(self._record, sealed, state)  # a batch child's stays with it
            self.cleanup(
                cleanup_timeout=cleanup_timeout, cleanup_poll_interval=cleanup_poll_interval
            )
        return value

    def outcome(self, state: JobState) -> ResultEnvelope:
        """The stored envelope of a terminal job, or the error that explains its absence. On a
        multi-host job the lowest-index host's failure wins, and a leader's success never
        hides a host that failed without storing an error (killed, out of memory)."""
        return self.sealed_outcome(state).envelope

    def sealed_outcome(self, state: JobState) -> SealedOutcome:
        """:meth:`outcome` with the signed bytes it was read from."""
        from kinetic.outcome import sealed_outcome

        return sealed_outcome(self._record, state)

    # -- teardown ------------------------------------------------------------------------

    def cancel(self, cleanup_timeout: float = 180, cleanup_poll_interval: float = 2) -> None:
        """Stop the job and delete its backend resource, keeping stored artifacts; a job still
        pending or running is recorded as cancelled first, so :meth:`failure` says so."""
        backend = backend_for(self._record)
        if not backend.statuses([self._record])[self.job_id].status.is_terminal:
            from kinetic.failure import record_cancel

            record_cancel(self)
        self.delete_resource(cleanup_timeout, cleanup_poll_interval)

    def delete_resource(self, timeout: float = 180, poll_interval: float = 2) -> None:
        """Stop the job if it runs and delete its backend resource, recording nothing."""
        backend_for(self._record).delete(self._record, timeout=timeout, poll_interval=poll_interval)

    def cleanup(
        self,
        k8s: bool = True,
        gcs: bool = True,
        cleanup_timeout: float = 180,
        cleanup_poll_interval: float = 2,
    ) -> None:
        """Delete the backend resource (``k8s``) and/or stored artifacts (``gcs``); anything
        under ``KINETIC_OUTPUT_DIR`` is always kept."""
        if k8s:
            self.delete_resource(cleanup_timeout, cleanup_poll_interval)
        if gcs:
            store_for(self._record).delete_prefix(layout.job_prefix(self.job_id))

    # -- outputs -------------------------------------------------------------------------

    @property
    def _outputs(self) -> "JobOutputs":
        from kinetic.outputs import JobOutputs

        return JobOutputs.of(self._record)

    @property
    def output_location(self) -> str:
        """The job's ``KINETIC_OUTPUT_DIR``: ``output_dir=`` if given, else
        ``<store>/outputs/<job_id>`` (a local path for a ``file://`` store)."""
        return self._outputs.location

    def list_outputs(self) -> list["OutputFile"]:
        """The files the job wrote under its output directory (path relative to it, size),
        sorted by path; empty if it wrote none (yet). Outputs outlive ``cleanup()``."""
        return self._outputs.files()

    def download_outputs(self, directory: "str | Path", *, overwrite: bool = False) -> list["Path"]:
        """Copy every output file into ``directory`` (made if missing), keeping relative paths;
        returns the local paths. An existing file is an error unless ``overwrite``."""
        return self._outputs.download(directory, overwrite=overwrite)

    def debug_attach(
        self,
        local_port: int = 5678,
        working_dir: str | None = None,
        *,
        timeout: float | None = 900.0,
    ) -> "DebugProcess":
        """Wait for debugpy, start port-forward, and print VS Code config.

        Waits up to ``timeout`` seconds for the job's debug server, makes it reachable on
        ``local_port`` of this machine (``gke``: ``kubectl port-forward``; ``local``, whose
        server takes any free port: a relay in this process) and prints the ``launch.json``
        "attach" configuration (``working_dir``, default the project root, maps to the job's
        directory). A ``local_port`` already in use is a ConfigError naming it. Returns the
        port-forward process (a ``Popen``; on a backend reached directly, such as ``local``, an
        object with the same interface) so the caller ends it, e.g.
        ``kinetic.debug.cleanup_port_forward(proc)`` after ``result()``.
        """
        from kinetic import debug

        return debug.debug_attach(self, local_port, working_dir, timeout=timeout)


_from_record = handle_record.slot_filler(JobHandle)
