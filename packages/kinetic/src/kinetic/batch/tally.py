"""How many of a batch's inputs are in each state, from one status poll."""

from dataclasses import asdict, dataclass
from typing import Protocol

from kinetic.handle import JobHandle
from kinetic_protocol import JobState

__all__ = ["Polled", "PolledBatch", "Tally", "tally"]


class PolledBatch(Protocol):
    """A batch as its views poll it (a :class:`~kinetic.batch.BatchHandle` is one)."""

    @property
    def jobs(self) -> list[JobHandle | None]: ...

    @property
    def submission_failures(self) -> dict[int, Exception]: ...

    def states(self) -> list[tuple[int, JobState]]: ...


@dataclass(frozen=True)
class Tally:
    """How many of a batch's inputs are in each state right now."""

    total: int
    succeeded: int = 0
    failed: int = 0
    """Children that FAILED plus inputs whose submission raised."""
    running: int = 0
    pending: int = 0
    unsubmitted: int = 0
    gone: int = 0
    """NOT_FOUND children: cancelled, or cleaned up after their result was collected."""

    @property
    def finished(self) -> int:
        return self.succeeded + self.failed + self.gone

    def as_dict(self) -> dict[str, int]:
        return asdict(self) | {"finished": self.finished}

    def summary(self) -> str:
        """``3 done, 1 running, 5 pending, 1 failed`` (states that are zero are kept, so the
        line keeps its shape as it changes; ``gone`` only appears when there are some)."""
        parts = [
            f"{self.succeeded} done",
            f"{self.running} running",
            f"{self.pending + self.unsubmitted} pending",
            f"{self.failed} failed",
        ]
        if self.gone:
            parts.append(f"{self.gone} gone")
        return ", ".join(parts)


Polled = tuple[Tally, list[tuple[int, str]], dict[int, JobState]]
"""What one poll says: the counts, ``(index, status)`` of every input, and the state (with
its reason) of every submitted child."""


def tally(batch: PolledBatch) -> Polled:
    """One status poll of ``batch``: the counts, ``(index, status)`` of every input, and the
    state (with its reason) of every submitted child."""
    submitted = dict(batch.states())
    errors = batch.submission_failures
    total = len(batch.jobs)
    per_input = []
    for index in range(total):
        if index in submitted:
            per_input.append((index, submitted[index].status.value))
        elif index in errors:
            per_input.append((index, "SUBMISSION_FAILED"))
        else:
            per_input.append((index, "UNSUBMITTED"))
    states = [state for _, state in per_input]
    counts = Tally(
        total=total,
        succeeded=states.count("SUCCEEDED"),
        failed=states.count("FAILED") + states.count("SUBMISSION_FAILED"),
        running=states.count("RUNNING"),
        pending=states.count("PENDING"),
        unsubmitted=states.count("UNSUBMITTED"),
        gone=states.count("NOT_FOUND"),
    )
    return counts, per_input, submitted
