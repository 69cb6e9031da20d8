"""The records of a batch: its header, one small record per attempt, the submitter's lease, its
completion, and the outcomes kept when collected children are cleaned up.

A batch is written ahead of what it describes: the function, the inputs and the shared call
descriptor first, then the manifest (from then on the batch exists), then, for every attempt,
its child record before its backend resource. Nothing here is rewritten per child.
"""

import re
from datetime import datetime
from typing import Annotated

import msgspec

from kinetic_protocol.capacity import Placement
from kinetic_protocol.causes import AttemptFailure, RetryRule
from kinetic_protocol.records import SCHEMA_VERSION, JobRecord

__all__ = [
    "BatchCancel",
    "BatchChild",
    "BatchChildCancelled",
    "BatchCompletion",
    "BatchIndexSegment",
    "BatchManifest",
    "BatchSubmissionError",
    "CollectedFailure",
    "CollectedFailures",
    "CollectedOutcome",
    "CollectedOutcomes",
    "SubmitterLease",
    "parse_child_job_id",
]

_CHILD_JOB_ID = re.compile(
    r"(?P<prefix>.+-(?P<group>[0-9a-f]{8}))-(?P<index>[0-9]+)(?:-r(?P<a>[0-9]+))?"
)

MAX_LEASE_SECONDS = 24 * 3600.0
"""The longest lease a reader believes: a longer one (forged, or a unit mistake) would make
every reader wait that long on a submitter that may be gone."""

_LeaseSeconds = Annotated[float, msgspec.Meta(gt=0, le=MAX_LEASE_SECONDS)]
_Count = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]
_Host = Annotated[str, msgspec.Meta(max_length=255)]


def _aware_time(value: str, field: str) -> None:
    """Refuse a timestamp that is not ISO 8601 with a time zone (a reader compares it with
    the current UTC time)."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{field} {value[:40]!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise ValueError(f"{field} {value!r} has no time zone")


class BatchManifest(msgspec.Struct, kw_only=True):
    """The header of a batch, written once (create-only) before the first child is submitted.

    ``job_template`` holds the fields every child shares, and a child's id is
    ``{job_id_prefix}-{index}`` (``-r{attempt}`` appended for retries), so a reader rebuilds
    every child handle from this header plus one listing of ``children/``, without a read per
    child.
    """

    group_id: str
    func_name: str
    total_expected: int
    job_id_prefix: str
    job_template: JobRecord
    created_at: str
    name: str | None = None
    tags: dict[str, str] = msgspec.field(default_factory=dict)
    retries: int = 0
    retry_on: list[str] | None = None
    """The causes ``retries`` apply to (``FailureCause`` values); None: the default
    (``causes.retry_causes``). Read through :attr:`retry_rule`."""
    max_concurrent: int | None = None
    fail_fast: bool = False
    cancel_running_on_fail: bool = False
    input_mode: str = "auto"
    array_job: str = ""
    """The name of the backend's one array object holding every input (the batch was
    submitted by ``ArrayBackend.submit_array``): no child records, no lease, no client
    retries. Empty: one job per attempt, each with its child record."""
    array_part_size: int = 0
    """The most inputs one array object holds (``Capabilities.array_batches`` when the batch
    was submitted); a larger batch is ``array_parts`` objects, input ``i`` being index
    ``i % array_part_size`` of part ``i // array_part_size`` (:meth:`array_part_name`).
    0: one object holds every input."""
    max_cost: float = 0.0
    """USD at list prices past which the batch submits no new input (``run_async_map``'s
    ``max_cost``); 0: no cap."""
    signed_records: bool = False
    """Its bookkeeping (child records, submission errors, leases, completion, cancel) is
    signed; False in batches of older Kinetics, whose unsigned records are not acted on."""
    schema_version: int = SCHEMA_VERSION

    @property
    def retry_rule(self) -> RetryRule:
        """When its inputs' failed attempts run again (``retries``, ``retry_on`` and the
        children's ``preemption_retries``)."""
        template = self.job_template
        return RetryRule.stored(self.retries, self.retry_on, template.preemption_retries)

    def child_job_id(self, index: int, attempt: int) -> str:
        return f"{self.job_id_prefix}-{index}" + (f"-r{attempt}" if attempt else "")

    @property
    def array_parts(self) -> int:
        """How many array objects hold the batch (0 for a batch of one job per input)."""
        if not self.array_job:
            return 0
        size = self.array_part_size or self.total_expected
        return max(1, -(-self.total_expected // max(size, 1)))

    def array_part_name(self, part: int) -> str:
        """The name of array object ``part``: the first is ``array_job`` itself."""
        return self.array_job if part == 0 else f"{self.array_job}-p{part}"

    def array_part_inputs(self, part: int) -> range:
        """The inputs array object ``part`` holds, its index 0 first."""
        size = self.array_part_size or self.total_expected
        return range(part * size, min((part + 1) * size, self.total_expected))

    def child_record(self, index: int, attempt: int) -> JobRecord:
        job_id = self.child_job_id(index, attempt)
        part, offset = 0, 0
        if self.array_job and self.array_part_size:
            part = index // self.array_part_size
            offset = part * self.array_part_size
        return msgspec.structs.replace(
            self.job_template,
            job_id=job_id,
            k8s_name=self.array_part_name(part) if self.array_job else job_id,
            group_id=self.group_id,
            group_kind="map",
            group_index=index,
            attempt=attempt,
            in_array=bool(self.array_job),
            array_offset=offset,
        )

    def has_child(self, index: int, attempt: int) -> bool:
        """Whether an array batch holds this attempt by construction: attempt 0 of every
        input. Its retries (which the backend runs itself) and a per-child batch's every
        attempt say so by their records."""
        return bool(self.array_job) and attempt == 0 and 0 <= index < self.total_expected


class BatchIndexSegment(msgspec.Struct, kw_only=True):
    """One part of the index a submitter writes just after its completion: the latest attempt
    recorded of inputs ``start`` to ``start + len(attempts) - 1`` (-1: none), so a reader of a
    finished batch verifies a few parts instead of one child record per attempt.

    Every part names the completion it follows (``completed_at``, its ``finished_at``): a part
    left from before a resume, or a set cut short by a kill, does not match it and is not used.
    """

    group_id: str
    completed_at: str
    part: _Count
    parts: _Count
    start: _Count
    attempts: list[int]
    schema_version: int = SCHEMA_VERSION


def parse_child_job_id(job_id: str) -> tuple[str, int, int] | None:
    """``(group_id, index, attempt)`` if ``job_id`` has the shape of a batch child's id.

    Only the shape: the caller confirms it against the group's manifest and child records.
    """
    match = _CHILD_JOB_ID.fullmatch(job_id)
    if match is None:
        return None
    return f"grp-{match['group']}", int(match["index"]), int(match["a"] or 0)


class BatchChild(msgspec.Struct, kw_only=True):
    """One attempt of one input, written before its backend resource is created.

    A child record whose resource never appeared (its submitter died in between) is what
    ``resume`` creates again; never rewritten.
    """

    group_id: str
    index: int
    attempt: int
    job_id: str
    submitted_at: str
    schema_version: int = SCHEMA_VERSION


class BatchSubmissionError(msgspec.Struct, kw_only=True):
    """An input whose submission raised; kept so a reattached batch can report it."""

    group_id: str
    index: int
    exc_type: str
    message: str
    failed_at: str = ""
    """When the submission raised (ISO 8601, UTC); empty in records of older Kinetics."""
    schema_version: int = SCHEMA_VERSION


class BatchChildCancelled(msgspec.Struct, kw_only=True):
    """An attempt the batch cancelled (a ``cancel()``, or fail-fast stopping its siblings),
    written just before its backend resource is deleted: the job itself leaves no trace of
    when or why it stopped."""

    group_id: str
    index: int
    attempt: int
    cancelled_at: str
    reason: str
    schema_version: int = SCHEMA_VERSION


class BatchCompletion(msgspec.Struct, kw_only=True):
    """Written when the submitting process has finished submitting (or stopped trying).

    ``cancelled``: stopped by a cancel; ``fail_fast``: stopped launching after a failure;
    ``error``: stopped by an error of its own (the store refused a write, ...), said here.
    ``cost_capped``: stopped at the batch's ``max_cost``, said here.
    """

    group_id: str
    submitted: _Count
    finished_at: str
    cancelled: bool = False
    fail_fast: bool = False
    error: str = ""
    cost_capped: str = ""
    """Stopped because the batch's list cost reached its ``max_cost``, said here; ``resume``
    with a higher cap submits the rest."""
    schema_version: int = SCHEMA_VERSION


class BatchCancel(msgspec.Struct, kw_only=True):
    """A request, from any process, that the batch's submitter stop."""

    group_id: str
    requested_at: str
    schema_version: int = SCHEMA_VERSION


class SubmitterLease(msgspec.Struct, kw_only=True):
    """The process submitting a batch, and when it last said it was alive.

    One object per ``epoch``: the original submitter holds epoch 0 and a resumer takes over by
    creating the next one (create-only, so two resumers never both win). The holder rewrites
    its own object every few seconds; a reader that sees no heartbeat for ``lease_seconds``
    calls the submitter gone.
    """

    group_id: str
    epoch: _Count
    owner: str
    """A random id of the submitting process, so it knows its own lease."""
    host: _Host
    pid: _Count
    started_at: str
    heartbeat_at: str
    lease_seconds: _LeaseSeconds
    submitted: _Count = 0
    """Inputs with a child record when this heartbeat was written."""
    machine: _Host = ""
    """The holder's machine as it can be told apart from any other, hostnames alike (its boot
    id and PID namespace); empty where it cannot (then, and in leases of older Kinetics,
    only the heartbeat says whether the holder is gone)."""
    process: _Host = ""
    """The holder's pid with its start time (``pid:ticks``), so a reused pid is not it."""
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        _aware_time(self.started_at, "started_at")
        _aware_time(self.heartbeat_at, "heartbeat_at")


class CollectedOutcome(msgspec.Struct, kw_only=True):
    """One child's outcome, exactly as its job stored (and signed) it."""

    index: int
    job_id: str
    envelope: bytes
    kind: str = "result"
    """``result``, or ``host-result`` for a worker host's failure of a multi-host child."""
    placement: Placement | None = None
    """The accelerator and capacity the child ran on, as its backend said when it was
    collected (None where it did not say): once the child is deleted, nothing else does."""


class CollectedOutcomes(msgspec.Struct, kw_only=True):
    """Outcomes a ``results(cleanup=True)`` read, kept with the batch before it deleted the
    children's own copies: a second collection (or a killed first one) still has them."""

    group_id: str
    outcomes: list[CollectedOutcome]
    collected_at: str
    schema_version: int = SCHEMA_VERSION


class CollectedFailure(msgspec.Struct, kw_only=True):
    """Why one failed child ended, and its last lines, as its collection saw them before it
    deleted the child: a child killed before it stored a result leaves nothing else."""

    index: int
    job_id: str
    failure: AttemptFailure
    last_lines: str = ""
    """The end of the child's output (its kept or backend log), a few lines."""


class CollectedFailures(msgspec.Struct, kw_only=True):
    """Failures a ``results(cleanup=True)`` kept with the batch (signed, as a batch record)."""

    group_id: str
    failures: list[CollectedFailure]
    collected_at: str
    schema_version: int = SCHEMA_VERSION
