"""A batch's history as time spans: every attempt of every input, from its records.

Read from what the batch and its jobs stored (child records, start claims, result envelopes,
cancellation and submission-error records) plus one status call for the attempts still
unsettled (and for those given a choice of accelerator or capacity, to say which they got);
nothing here needs the process that submitted the batch. Drawing is in
:mod:`kinetic.batch.timeline_plot`, which needs the ``kinetic[plot]`` extra.
"""

import enum
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinetic.bookkeeping.records import PARALLEL_READS
from kinetic.trust import OutcomeKind, open_outcome
from kinetic.usage import Pricing, Usage, billed, parse_stamp, start_claim_time
from kinetic_protocol import (
    Backend,
    BatchChild,
    BatchManifest,
    CollectedOutcome,
    Failed,
    FailureCause,
    IntegrityError,
    JobState,
    JobStatus,
    ObjectNotFoundError,
    ResultEnvelope,
    Succeeded,
)
from kinetic_protocol.capacity import Placement, record_choices
from kinetic_protocol.causes import BACKEND_DECIDED

if TYPE_CHECKING:
    from kinetic.bookkeeping.records import BatchRecords
    from kinetic.handle import JobHandle

__all__ = ["Attempt", "BatchTimeline", "Outcome", "SubmissionFailure", "TimelineSummary"]


class Outcome(enum.Enum):
    """How an attempt ended (or where it is), which is also its colour in the picture."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RETRIED = "failed, retried"
    CANCELLED = "cancelled"
    LOST = "gone without a result"
    RUNNING = "running"
    PENDING = "pending"


@dataclass(frozen=True)
class Attempt:
    """One attempt of one input: submitted, then (maybe) started, then (maybe) finished.

    ``finished_at`` is ``None`` while it runs; ``started_at`` is ``None`` for an attempt that
    never began running (cancelled while pending, or still pending). ``cause`` says why an
    attempt that ended without a value did (see ``JobHandle.failure()``); it is ``None`` for
    the others, and for one gone with nothing recorded.
    """

    index: int
    attempt: int
    job_id: str
    outcome: Outcome
    reason: str
    submitted_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    cause: FailureCause | None = None
    placement: Placement | None = None
    """The accelerator and capacity it was given, where its backend still says (a job with
    several choices, or one not yet settled)."""

    @property
    def run_seconds(self) -> float | None:
        """Seconds it ran (started to finished), if it did both."""
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    @property
    def pending_seconds(self) -> float | None:
        """Seconds from submission until it started (or ended without starting)."""
        end = self.started_at or self.finished_at
        return None if end is None else (end - self.submitted_at).total_seconds()


@dataclass(frozen=True)
class SubmissionFailure:
    """An input whose submission raised: it never ran."""

    index: int
    failed_at: datetime
    exc_type: str
    message: str


@dataclass(frozen=True)
class TimelineSummary:
    """The numbers a timeline's title line shows.

    ``busy_fraction``: run time summed over every attempt, over wall time times the most
    attempts that ran at once; 1.0 means every slot the batch used was busy all along.
    """

    wall_seconds: float
    busy_fraction: float
    run_p50: float | None
    run_p95: float | None
    attempts: int
    peak_running: int
    causes: dict[FailureCause, int] = field(default_factory=dict)
    """Attempts that ended without a value (retried ones too), by cause."""
    placements: dict[str, int] = field(default_factory=dict)
    """Attempts by what they were given (``gpu-l4 on spot``), where that is known."""
    usage: Usage | None = None
    """Accelerator time every attempt used and its list cost (running ones until now); None
    where the batch runs on no billed accelerator."""

    def describe(self) -> str:
        def seconds(value: float | None) -> str:
            return "n/a" if value is None else f"{value:.1f}s"

        line = (
            f"wall {seconds(self.wall_seconds)}, busy {self.busy_fraction:.0%} "
            f"(peak {self.peak_running} running), run time p50 {seconds(self.run_p50)} "
            f"p95 {seconds(self.run_p95)}, {self.attempts} attempts"
        )
        if self.causes:
            counts = ", ".join(f"{count} {cause.value}" for cause, count in self.causes.items())
            line += f"; ended without a value: {counts}"
        if self.placements:
            placed = ", ".join(f"{count} on {where}" for where, count in self.placements.items())
            line += f"; placed: {placed}"
        if self.usage is not None:
            line += f"; used: {self.usage.describe()}"
        return line


def _percentile(values: list[float], fraction: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(fraction * 100) - 1]


def _peak(attempts: Iterable[Attempt], now: datetime) -> int:
    """The most attempts running at the same moment."""
    edges: list[tuple[datetime, int]] = []
    for item in attempts:
        if item.started_at is not None:
            edges += [(item.started_at, 1), (item.finished_at or now, -1)]
    running = peak = 0
    for _, change in sorted(edges, key=lambda edge: (edge[0], edge[1])):
        running += change
        peak = max(peak, running)
    return peak


@dataclass(frozen=True)
class BatchTimeline:
    """Every attempt of a batch and every failed submission, as read at ``taken_at``.

    ``figure()`` draws it (plotly); ``write(path)`` saves it as ``.html``, ``.svg`` or
    ``.png``. In a notebook the timeline shows as its figure.
    """

    group_id: str
    name: str | None
    total: int
    attempts: list[Attempt]
    submission_failures: list[SubmissionFailure]
    taken_at: datetime
    pricing: Pricing | None = None
    """The list prices of the batch's choices, where they are billed (see ``kinetic.usage``)."""

    def summary(self) -> TimelineSummary:
        starts = [a.submitted_at for a in self.attempts]
        starts += [f.failed_at for f in self.submission_failures]
        ends = [a.finished_at or self.taken_at for a in self.attempts]
        ends += [f.failed_at for f in self.submission_failures]
        wall = (max(ends) - min(starts)).total_seconds() if starts else 0.0
        runs = [a.run_seconds for a in self.attempts if a.run_seconds is not None]
        running = [
            ((a.finished_at or self.taken_at) - a.started_at).total_seconds()
            for a in self.attempts
            if a.started_at is not None
        ]
        peak = _peak(self.attempts, self.taken_at)
        busy = sum(running) / (wall * peak) if wall > 0 and peak else 0.0
        usage = None
        if self.pricing is not None:
            usage = self.pricing.usage(
                (a.placement, ((a.finished_at or self.taken_at) - a.started_at).total_seconds())
                for a in self.attempts
                if a.started_at is not None
            )
        return TimelineSummary(
            wall_seconds=wall,
            busy_fraction=min(busy, 1.0),
            run_p50=_percentile(sorted(runs), 0.50),
            run_p95=_percentile(sorted(runs), 0.95),
            attempts=len(self.attempts),
            peak_running=peak,
            causes=dict(Counter(a.cause for a in self.attempts if a.cause is not None)),
            placements=dict(
                Counter(
                    f"{a.placement.accelerator} ({a.placement.capacity})"
                    for a in self.attempts
                    if a.placement is not None
                )
            ),
            usage=usage,
        )

    def figure(self) -> Any:
        """The timeline as a ``plotly.graph_objects.Figure`` (needs ``kinetic[plot]``)."""
        from kinetic.batch.timeline_plot import build_figure

        return build_figure(self)

    def write(self, path: str | Path) -> Path:
        """Save the picture; the suffix picks the format (``.html``, ``.svg``, ``.png``).

        HTML is self-contained (plotly.js inlined: it opens offline). SVG and PNG are drawn by
        kaleido, which drives a Chrome or Chromium installed on this machine.
        """
        from kinetic.batch.timeline_plot import write_figure

        return write_figure(self, Path(path))

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle: Any = self.figure()._repr_mimebundle_(**kwargs)
        return bundle


def _latest(children: list[BatchChild]) -> dict[int, int]:
    latest: dict[int, int] = {}
    for child in children:
        latest[child.index] = max(child.attempt, latest.get(child.index, -1))
    return latest


class _Reader:
    """Reads what one batch's attempts left behind."""

    def __init__(
        self,
        manifest: BatchManifest,
        records: "BatchRecords",
        backend: Backend,
    ) -> None:
        self.manifest = manifest
        self.records = records
        self.backend = backend

    @staticmethod
    def envelope(job: "JobHandle", kept: Mapping[int, CollectedOutcome]) -> ResultEnvelope | None:
        outcome = kept.get(job.group_index) if job.group_index is not None else None
        try:
            if outcome is not None and outcome.job_id == job.job_id:
                key = f"the kept outcome of {job.job_id}"
                kind: OutcomeKind = "host-result" if outcome.kind == "host-result" else "result"
                return open_outcome(job.record, outcome.envelope, key=key, kind=kind).envelope
            return job.read_envelope()
        except (ObjectNotFoundError, IntegrityError):  # collecting it says what is wrong
            return None

    def read(self, taken_at: datetime) -> BatchTimeline:
        from kinetic.handle import JobHandle

        children = self.records.children()
        latest = _latest(children)
        cancelled = self.records.cancelled_children()
        kept = self.records.collected()
        summaries = self.records.collected_failures()
        jobs = {
            (c.index, c.attempt): JobHandle.from_record(
                self.manifest.child_record(c.index, c.attempt)
            )
            for c in children
        }
        with ThreadPoolExecutor(PARALLEL_READS) as pool:
            envelopes = dict(
                zip(
                    jobs, pool.map(lambda job: self.envelope(job, kept), jobs.values()), strict=True
                )
            )
            starts = dict(
                zip(
                    jobs,
                    pool.map(lambda job: start_claim_time(job.record), jobs.values()),
                    strict=True,
                )
            )
        unsettled = [  # and settled ones that had a choice, for where they ran
            job
            for key, job in jobs.items()
            if envelopes[key] is None or len(record_choices(job.record)) > 1
        ]
        states = self.backend.statuses([job.record for job in unsettled]) if unsettled else {}
        attempts = []
        for child in children:
            key = (child.index, child.attempt)
            job, envelope = jobs[key], envelopes[key]
            seen = states.get(job.job_id)
            # a settled attempt's state is read only for where it ran: its record says the rest
            state = seen if seen is not None and envelope is None else _UNKNOWN
            stopped = cancelled.get(key)
            summary = summaries.get(child.index)
            if summary is not None and summary.job_id == job.job_id and envelope is None:
                # killed before it stored a result, then cleaned up: its batch kept why
                failure = summary.failure
                state = JobState(
                    status=JobStatus.FAILED, detail=failure.reason, cause=failure.cause
                )
            attempts.append(
                self.attempt(
                    child,
                    job,
                    envelope,
                    state,
                    started=starts[key],
                    retried=child.attempt < latest[child.index],
                    cancelled_at=parse_stamp(stopped.cancelled_at) if stopped else None,
                    cancelled_reason=stopped.reason if stopped else "",
                    placement=_placement(seen, kept.get(child.index), job.job_id),
                )
            )
        created = parse_stamp(self.manifest.created_at) or taken_at
        template = self.manifest.job_template
        failures = [
            SubmissionFailure(
                index=error.index,
                failed_at=parse_stamp(error.failed_at) or created,
                exc_type=error.exc_type,
                message=error.message,
            )
            for error in self.records.listing(
                self.manifest.total_expected, retries=self.manifest.retries
            ).submission_errors.values()
        ]
        return BatchTimeline(
            group_id=self.manifest.group_id,
            name=self.manifest.name,
            total=self.manifest.total_expected,
            attempts=attempts,
            submission_failures=sorted(failures, key=lambda f: f.index),
            taken_at=taken_at,
            pricing=Pricing.of_record(template) if billed(template) else None,
        )

    def attempt(
        self,
        child: BatchChild,
        job: "JobHandle",
        envelope: ResultEnvelope | None,
        state: JobState,
        *,
        started: datetime | None,
        retried: bool,
        cancelled_at: datetime | None,
        cancelled_reason: str,
        placement: Placement | None = None,
    ) -> Attempt:
        submitted = parse_stamp(child.submitted_at) or parse_stamp(self.manifest.created_at)
        assert submitted is not None  # the manifest's created_at is always set
        finished: datetime | None = None
        if isinstance(envelope, Succeeded | Failed):
            started = parse_stamp(envelope.started_at) or started
            finished = parse_stamp(envelope.finished_at)
        if isinstance(envelope, Succeeded):
            outcome, reason = Outcome.SUCCEEDED, ""
        elif isinstance(envelope, Failed):
            outcome = Outcome.RETRIED if retried else Outcome.FAILED
            reason = f"{envelope.exc_type}: {envelope.message}"
        elif cancelled_at is not None:
            outcome, reason, finished = Outcome.CANCELLED, cancelled_reason, cancelled_at
        elif state.status is JobStatus.RUNNING:
            outcome, reason = Outcome.RUNNING, state.detail
        elif state.status is JobStatus.PENDING:
            outcome, reason = Outcome.PENDING, state.detail
        elif retried:
            outcome, reason = Outcome.RETRIED, state.describe()
        else:
            failed = state.status is JobStatus.FAILED
            outcome, reason = (Outcome.FAILED if failed else Outcome.LOST), state.describe()
        if started is not None and finished is None and outcome not in _LIVE:
            finished = started  # ended with no record of when: a zero-length mark
        return Attempt(
            cause=_cause(outcome, envelope, state),
            index=child.index,
            attempt=child.attempt,
            job_id=job.job_id,
            outcome=outcome,
            reason=reason,
            submitted_at=submitted,
            started_at=started,
            finished_at=finished,
            placement=placement,
        )


def _placement(
    seen: JobState | None, kept: CollectedOutcome | None, job_id: str
) -> Placement | None:
    """Where an attempt ran: as its backend says, else as its collection kept it."""
    if seen is not None and seen.placement is not None:
        return seen.placement
    return kept.placement if kept is not None and kept.job_id == job_id else None


_LIVE = frozenset({Outcome.RUNNING, Outcome.PENDING})
_UNKNOWN = JobState(status=JobStatus.NOT_FOUND)


def _cause(
    outcome: Outcome, envelope: ResultEnvelope | None, state: JobState
) -> FailureCause | None:
    """Why an attempt ended without a value, by the rules of ``JobHandle.failure()``: what the
    backend saw outright, else the stored result (the function's or a phase's failure), else
    an exit without a result."""
    from kinetic.failure import from_envelope

    if outcome is Outcome.CANCELLED:
        return FailureCause.CANCELLED
    if outcome not in (Outcome.FAILED, Outcome.RETRIED):
        return None
    if state.cause in BACKEND_DECIDED:
        return state.cause
    if isinstance(envelope, Failed):
        return from_envelope(envelope, 0).cause
    return state.cause or FailureCause.EXIT


def read_timeline(
    manifest: BatchManifest, records: "BatchRecords", backend: Backend
) -> BatchTimeline:
    """The batch's timeline as its records and backend say now."""
    return _Reader(manifest, records, backend).read(datetime.now(UTC))
