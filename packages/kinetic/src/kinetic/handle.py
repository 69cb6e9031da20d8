"""The durable :class:`JobHandle` of one job: observe, collect and clean it up from anywhere."""

import dataclasses
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from kinetic import _log
from kinetic._context import backend_for, store_for
from kinetic._interrupted import say_job_left_running
from kinetic._log_copier import LogCopier
from kinetic._results import unwrap
from kinetic._waiting import QueueLine, StatusCallback, until_terminal
from kinetic.bookkeeping.kept import (
    cleaned_up_error,
    collected_with_batch,
    keep_with_batch,
    kept_failure_summary,
    seen_by_batch,
)
from kinetic.trust import SealedOutcome, open_outcome
from kinetic_protocol import (
    AttemptFailure,
    ConfigError,
    Failed,
    HostSelection,
    JobFailedError,
    JobNotFoundError,
    JobRecord,
    JobState,
    JobStatus,
    KineticError,
    Mount,
    ObjectNotFoundError,
    ResultEnvelope,
    layout,
    parse_accelerator,
)
from kinetic_protocol.records import DEFAULT_PREEMPTION_RETRIES, SCHEMA_VERSION

if TYPE_CHECKING:
    from pathlib import Path

    from kinetic.debug import DebugProcess
    from kinetic.job_context import JobContext
    from kinetic.outputs import OutputFile

__all__ = ["JobHandle"]


_REQUIRED_FIELDS = (
    "job_id", "backend", "project", "cluster_name", "zone", "namespace", "bucket_name",
    "k8s_name", "image_uri", "accelerator", "func_name", "display_name", "created_at",
)  # fmt: skip


@dataclasses.dataclass(frozen=True, eq=True, repr=False)
class JobHandle:
    """Durable description of a submitted job: everything needed to observe, collect and clean
    it up from any machine. It holds no function or closure state, only plain fields.

    A small frozen dataclass (``dataclasses.asdict`` gives exactly :meth:`to_dict`,
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
    if TYPE_CHECKING:  # set by __post_init__; not a field at run time
        _record: JobRecord = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        try:
            record = msgspec.convert(fields, JobRecord)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"JobHandle: invalid field: {exc}") from exc
        object.__setattr__(self, "_record", record)

    @classmethod
    def from_record(cls, record: JobRecord) -> "JobHandle":
        fields = {name: getattr(record, name) for name in _FIELD_NAMES}
        return cls(**fields)

    @classmethod
    def from_job_context(
        cls, ctx: "JobContext", backend_name: str, namespace: str, k8s_name: str
    ) -> "JobHandle":
        """Build a handle from a live job context: the object a submitter holds while it
        submits one job (see :class:`kinetic.job_context.JobContext` for what it reads).
        The handle is made through the same stored record as any other; a missing or invalid
        attribute is a ``ConfigError``."""
        from kinetic.job_context import record_from_context

        return cls.from_record(record_from_context(ctx, backend_name, namespace, k8s_name))

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

    # -- serialization -------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict of the handle; :meth:`from_dict` rebuilds it anywhere."""
        data: dict[str, Any] = msgspec.to_builtins(self._record)
        return data

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JobHandle":
        """Rebuild a handle; unknown keys (from a newer Kinetic) are ignored."""
        if not isinstance(d, dict):
            raise ConfigError(f"JobHandle.from_dict needs a dict, got {type(d).__name__}.")
        required = [f for f in _REQUIRED_FIELDS if f not in d]
        if required:
            raise ConfigError(
                f"JobHandle.from_dict: missing required field(s) {', '.join(required)}. "
                "Pass a dict made by JobHandle.to_dict(), or use kinetic.attach(job_id)."
            )
        known = set(JobRecord.__struct_fields__)
        try:
            record = msgspec.convert({k: v for k, v in d.items() if k in known}, JobRecord)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"JobHandle.from_dict: invalid handle dict: {exc}") from exc
        return cls.from_record(record)

    def _repr_html_(self) -> str:
        """Jupyter's view: id, status with its reason, and the CLI command for its logs."""
        from kinetic.display import job_html

        return job_html(self)

    # -- observation ---------------------------------------------------------------------

    def status_detail(self) -> JobState:
        """The status plus the backend's reason for it (exit code, pod condition, ...).

        A debug job waiting for its debugger is RUNNING "waiting for debugger at HOST:PORT".
        """
        state = backend_for(self._record).statuses([self._record])[self.job_id]
        state = seen_by_batch(self._record, state)  # a child collected with its batch
        if not self.debug:
            return state
        from kinetic.debug import waiting_detail

        return waiting_detail(self._record, state)

    def status(self) -> JobStatus:
        """The job's current status."""
        return self.status_detail().status

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
        return self._read_output(n, host)

    def logs(self, follow: bool = False, *, host: HostSelection = None) -> str | None:
        """The job's output so far; with ``follow``, print it until the job ends instead.

        On a multi-host job: the leader's by default (or, once the job failed on one host,
        that host's: the others may have said nothing), host ``i``'s with ``host=i``, every
        host's with ``host="all"`` (each line prefixed ``[host i]``). Read as :meth:`tail`
        reads it: the backend's log, else the output kept in the store. Following streams
        the backend's log while the job runs; a job whose log is gone prints its kept output.
        """
        if not follow:
            return self._read_output(None, host)
        for line in self.follow_lines(host=host):
            sys.stdout.write(line)
            sys.stdout.flush()
        return None

    def follow_lines(self, *, host: HostSelection = None) -> Iterator[str]:
        """The job's output lines as they are written, until it ends (``logs(follow=True)``
        prints them). A job whose backend log is gone yields the output kept in the store."""
        from kinetic.kept_output import kept_text

        backend = backend_for(self._record)
        per_host = self._per_host(host)
        if per_host:
            lines = backend.follow_logs(self._record, host=host)
        else:
            lines = backend.follow_logs(self._record)
        said = False
        for line in lines:
            said = True
            yield line
        if not said:
            kept = kept_text(self._record, host=host if per_host else None)
            yield from (kept or "").splitlines(keepends=True)

    def _read_output(self, tail: int | None, host: HostSelection) -> str:
        from kinetic.kept_output import read_output

        backend = backend_for(self._record)
        selection = host if self._per_host(host) else None
        text = read_output(backend, self._record, tail=tail, host=selection)
        return self._unless_collected(text, tail)

    def _unless_collected(self, text: str, tail: int | None = None) -> str:
        """``text``, unless it is the empty output of a batch child that was collected and
        cleaned up: a failed one shows the last lines its batch kept (``tail`` of them), and
        any other has no logs any more, and says so (``JobNotFoundError``)."""
        if text or self.group_index is None:
            return text
        state = backend_for(self._record).statuses([self._record])[self.job_id]
        if state.status is not JobStatus.NOT_FOUND:
            return text
        summary = kept_failure_summary(self._record)
        if summary is not None:
            lines = summary.last_lines.splitlines(keepends=True)
            kept = lines if tail is None else (lines[-tail:] if tail > 0 else [])
            return "".join(kept)
        if not collected_with_batch(self._record):
            return text
        raise cleaned_up_error(self._record)

    def _per_host(self, host: HostSelection) -> bool:
        """Whether to pass ``host=`` on: only a backend with per-host logs takes it."""
        if backend_for(self._record).capabilities.per_host_logs:
            return True
        if host not in (None, 0, "all"):
            raise ConfigError(
                f"Job {self.job_id} runs on one host (backend {self.backend!r}); there is no "
                f"host {host!r}. Leave host= unset."
            )
        return False

    # -- collection ----------------------------------------------------------------------

    def read_envelope(self) -> ResultEnvelope:
        """The stored result envelope, verified; ``ObjectNotFoundError`` if the job left none,
        ``IntegrityError`` if it is not the one the job signed."""
        return self._read_sealed().envelope

    def _read_sealed(self) -> SealedOutcome:
        key = layout.result_key(self.job_id)
        data = store_for(self._record).read(key)
        return open_outcome(self._record, data, key=key, kind="result")

    def _has_record(self) -> bool:
        """Whether the store says the job was submitted (attempt 0 of an array batch's input
        has no record of its own: its batch's manifest is)."""
        record = self._record
        if record.in_array and record.attempt == 0 and record.group_id is not None:
            key = layout.manifest_key(record.group_id)
        elif record.group_id is not None and record.group_index is not None:
            key = layout.child_key(record.group_id, record.group_index, record.attempt)
        else:
            key = layout.job_record_key(self.job_id)
        return store_for(record).exists(key)

    def wait(
        self,
        timeout: float | None = None,
        on_status_change: Callable[[JobStatus], None] | None = None,
    ) -> JobState:
        """Block until the job is terminal; ``TimeoutError`` leaves it running.

        ``on_status_change`` is called with each new status; if it raises, the wait goes on
        and the first exception is shown on stderr (the ``kinetic`` logger) with its traceback.
        """
        return self._wait(timeout, on_status_change)

    def _wait(
        self,
        timeout: float | None,
        on_status_change: Callable[[JobStatus], None] | None,
        on_state: Callable[[JobState], None] | None = None,
    ) -> JobState:
        notify = StatusCallback(on_status_change, self.job_id)
        return until_terminal(backend_for(self._record), self._record, timeout, notify, on_state)

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
        copier = None
        try:
            if stream_logs:
                copier = LogCopier(backend_for(self._record), self._record)
            # A blocking call also says where its job stands while it waits in a queue.
            queue_line = QueueLine(self.job_id) if stream_logs else None
            state = self._wait(timeout, on_status_change, queue_line)
        except KeyboardInterrupt:
            if copier is not None:
                copier.abandon()
            say_job_left_running(self.job_id, self.backend)
            raise
        except BaseException:  # a timeout: the job goes on, its copier stops
            if copier is not None:
                copier.abandon()
            raise
        if copier is not None:
            copier.finish()  # every line the job printed is out before its value is back
        sealed = self.sealed_outcome(state)
        value = unwrap(sealed.envelope)  # raises the user's exception for a failed job
        if cleanup if cleanup is not None else not self.debug:
            keep_with_batch(self._record, sealed)  # a batch child's outcome stays with it
            self.cleanup(
                cleanup_timeout=cleanup_timeout, cleanup_poll_interval=cleanup_poll_interval
            )
        return value

    def outcome(self, state: JobState) -> ResultEnvelope:
        """The stored envelope of a terminal job, or the error that explains its absence.

        On a multi-host job the lowest-index host's failure wins, and a leader's success
        never hides a host that failed without storing an error (killed, out of memory)."""
        return self.sealed_outcome(state).envelope

    def sealed_outcome(self, state: JobState) -> SealedOutcome:
        """:meth:`outcome` with the signed bytes it was read from."""
        try:
            leader: SealedOutcome | None = self._read_sealed()
        except ObjectNotFoundError:
            leader = None
        hosts = parse_accelerator(self.accelerator).hosts
        if (leader is not None and isinstance(leader.envelope, Failed)) or hosts == 1:
            if leader is None:
                raise self._no_result_error(state)
            return leader
        failure = self._worker_failure()
        if failure is not None:
            return failure
        if leader is None:
            raise self._no_result_error(state)
        if state.status is JobStatus.FAILED:
            raise JobFailedError(
                f"Job {self.job_id} ended {state.describe()}: its leader returned a value, but "
                f"a host of its {hosts}-host slice failed without storing an error, so the "
                f"value is not trusted. Read that host's logs: kinetic jobs logs "
                f"{self.job_id} --all-hosts"
            )
        return leader

    def _worker_failure(self) -> SealedOutcome | None:
        """The stored failure of the lowest-index worker host that stored one."""
        store = store_for(self._record)
        hosts: dict[int, str] = {}
        for key in store.list(layout.hosts_prefix(self.job_id)):
            if not key.endswith("/result.msgpack"):
                continue
            parsed = layout.parse_host_key(key)
            if parsed is None:
                _log.say(f"Ignoring {store.uri}/{key}: not a host's result (hosts/<i>/).")
            else:
                hosts[parsed[0]] = key
        if not hosts:
            return None
        key = hosts[min(hosts)]
        outcome = open_outcome(self._record, store.read(key), key=key, kind="host-result")
        return outcome if isinstance(outcome.envelope, Failed) else None

    def _no_result_error(self, state: JobState) -> Exception:
        if state.status is JobStatus.NOT_FOUND and not self._has_record():
            return JobNotFoundError(
                f"No job {self.job_id!r} in {self._record.store_uri}: it never existed or was "
                "cleaned up. `kinetic jobs list` shows the jobs that exist."
            )
        if state.status is JobStatus.NOT_FOUND:
            why = state.detail or "it was cancelled or cleaned up before it finished"
            return JobFailedError(
                f"Job {self.job_id} is gone (NOT_FOUND) and left no result: {why}."
            )
        return JobFailedError(
            f"Job {self.job_id} ended {state.describe()} without storing a result. "
            f"Read its logs: kinetic jobs logs {self.job_id}\n{self._log_tail_for_error()}"
        )

    def _log_tail_for_error(self, lines: int = 20) -> str:
        """The log's last lines to decorate an error; never replaces that error with its own."""
        try:
            return self.tail(lines)
        except KineticError as error:
            return f"(logs unavailable: {error})"

    # -- teardown ------------------------------------------------------------------------

    def cancel(self, cleanup_timeout: float = 180, cleanup_poll_interval: float = 2) -> None:
        """Stop the job and delete its backend resource; stored artifacts are kept.

        A job still pending or running is recorded as cancelled first, so that
        :meth:`failure` says ``cancelled`` once its resource is gone."""
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
        """Delete the backend resource (``k8s``) and/or stored artifacts (``gcs``).

        Anything under ``KINETIC_OUTPUT_DIR`` is always kept.
        """
        if k8s:
            self.delete_resource(cleanup_timeout, cleanup_poll_interval)
        if gcs:
            store_for(self._record).delete_prefix(layout.job_prefix(self.job_id))

    # -- outputs -------------------------------------------------------------------------

    @property
    def output_location(self) -> str:
        """The job's ``KINETIC_OUTPUT_DIR``: ``output_dir=`` if given, else
        ``<store>/outputs/<job_id>`` (a local path for a ``file://`` store)."""
        from kinetic.outputs import JobOutputs

        return JobOutputs.of(self._record).location

    def list_outputs(self) -> list["OutputFile"]:
        """The files the job wrote under its output directory (path relative to it, size),
        sorted by path; empty if it wrote none (yet). Outputs outlive ``cleanup()``."""
        from kinetic.outputs import JobOutputs

        return JobOutputs.of(self._record).files()

    def download_outputs(self, directory: "str | Path", *, overwrite: bool = False) -> list["Path"]:
        """Copy every output file into ``directory`` (made if missing), keeping relative paths;
        returns the local paths. An existing file is an error unless ``overwrite``."""
        from kinetic.outputs import JobOutputs

        return JobOutputs.of(self._record).download(directory, overwrite=overwrite)

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


_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(JobHandle))
