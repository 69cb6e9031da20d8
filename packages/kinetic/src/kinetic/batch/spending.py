"""``max_cost=``: a batch stops submitting new inputs once its list cost reaches a cap.

The submitter keeps the tally as it polls, at no read beyond one per attempt: an attempt
counts from its start claim (read once, when the submitter first sees it running) to its
stored result (read once, when it settles), at the price of the choice it was placed on
(:mod:`kinetic.usage`). Attempts run in the batch before this submitter began (a resumed
batch) are counted once, from its timeline. The cap acts between submissions: what runs when
it is reached runs to its end, so a batch can end above its cap by what its running inputs
still use, and ``max_concurrent`` bounds that.
"""

import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from kinetic.usage import Pricing, parse_stamp, start_claim_time
from kinetic_protocol import ConfigError, JobStatus
from kinetic_protocol.capacity import job_choices

if TYPE_CHECKING:
    from kinetic.batch.timeline import BatchTimeline
    from kinetic.handle import JobHandle
    from kinetic.options import RunOptions
    from kinetic_protocol import BatchManifest, JobState

__all__ = ["SpendingMeter", "check_priced", "spent_before"]


def check_priced(options: "RunOptions", max_cost: float, max_concurrent: int | None) -> None:
    """Refuse a cap that could not act, before anything is resolved or stored."""
    if max_concurrent is None:
        raise ConfigError(
            f"max_cost={max_cost:g} stops the submission of new inputs, and max_concurrent=None "
            "submits every input at once, leaving none to stop. Set max_concurrent (e.g. 8)."
        )
    if options.accelerator.category == "cpu":
        raise ConfigError(
            f"max_cost={max_cost:g} caps what a batch's accelerators cost at list prices, and "
            "accelerator='cpu' has none: leave max_cost out, or name an accelerator."
        )
    accelerators = tuple(accelerator.name for accelerator in options.accelerators)
    unpriced = Pricing(job_choices(accelerators, options.capacity)).unpriced()
    if unpriced:
        from kinetic.usage import price_table
        from kinetic_protocol.prices import PRICES_ENV

        names = ", ".join(choice.describe() for choice in unpriced)
        raise ConfigError(
            f"max_cost={max_cost:g} needs a list price for every choice the batch may run on, "
            f"and {names} has none in the {price_table().describe()}. Name a price table "
            f"that has it in {PRICES_ENV} (docs/guides/capacity.md), or leave max_cost out."
        )


class SpendingMeter:
    """What a batch has spent so far at list prices, against its cap."""

    def __init__(self, manifest: "BatchManifest", cap: float, earlier: float = 0.0) -> None:
        self.cap = cap
        self.pricing = Pricing.of_record(manifest.job_template)
        self.settled = earlier
        """USD of attempts that ended (and of the batch's runs before this submitter)."""
        self.running: dict[str, tuple[datetime, float | None]] = {}
        """Attempts seen running: since when, at how much an hour."""
        self.lock = threading.Lock()

    def observe(self, job: "JobHandle", state: "JobState") -> None:
        """A poll saw ``job`` in ``state``: start its clock once it runs, stop it once it
        ended."""
        if state.status is JobStatus.RUNNING and job.job_id not in self.running:
            began = start_claim_time(job.record) or datetime.now(UTC)
            with self.lock:
                self.running[job.job_id] = (began, self.pricing.hourly_of(state.placement))
        elif state.status.is_terminal:
            self._ended(job, state)

    def _ended(self, job: "JobHandle", state: "JobState") -> None:
        from kinetic_protocol import Failed, KineticError, Succeeded

        with self.lock:
            seen = self.running.pop(job.job_id, None)
        began, hourly = seen if seen is not None else (None, None)
        if hourly is None:
            hourly = self.pricing.hourly_of(state.placement)
        ended: datetime | None = None
        try:
            envelope = job.read_envelope()
        except KineticError:
            envelope = None
        if isinstance(envelope, Succeeded | Failed):
            began = parse_stamp(envelope.started_at) or began
            ended = parse_stamp(envelope.finished_at)
        if began is None and ended is not None:
            began = start_claim_time(job.record)
        if ended is None and seen is not None:
            ended = datetime.now(UTC)  # killed with no result: it ran until it was seen ended
        seconds = (ended - began).total_seconds() if began and ended else 0.0
        with self.lock:
            self.settled += (hourly or 0.0) * max(seconds, 0.0) / 3600

    def spent(self, now: datetime | None = None) -> float:
        now = now or datetime.now(UTC)
        with self.lock:
            running = sum(
                (hourly or 0.0) * max((now - began).total_seconds(), 0.0) / 3600
                for began, hourly in self.running.values()
            )
            return self.settled + running

    def reached(self) -> bool:
        return self.spent() >= self.cap

    def describe(self) -> str:
        """``list cost $0.0123 reached max_cost=$0.01``."""
        return f"list cost ${self.spent():.4g} reached max_cost=${self.cap:g}"


def spent_before(timeline: "BatchTimeline") -> float:
    """USD of the attempts of ``timeline`` that have ended (a resumed batch's history)."""
    if timeline.pricing is None:
        return 0.0
    usage = timeline.pricing.usage(
        (a.placement, (a.finished_at - a.started_at).total_seconds())
        for a in timeline.attempts
        if a.started_at is not None and a.finished_at is not None
    )
    return usage.list_cost or 0.0
