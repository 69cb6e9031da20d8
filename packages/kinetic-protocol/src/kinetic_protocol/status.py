"""Job status as every backend reports it."""

import enum
import re

import msgspec

from kinetic_protocol.capacity import Placement
from kinetic_protocol.causes import FailureCause
from kinetic_protocol.queueing import QueuePlace

__all__ = ["TERMINAL_STATUSES", "JobState", "JobStatus"]


class JobStatus(enum.Enum):
    """Observable status of a remote job."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    NOT_FOUND = "NOT_FOUND"

    @property
    def is_terminal(self) -> bool:
        """True once the job will not change state on its own."""
        return self in TERMINAL_STATUSES


TERMINAL_STATUSES = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.NOT_FOUND})
_NAMED_HOST = re.compile(r"host (\d+) of \d+\b")


class JobState(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A status plus the backend's reason for it (``ImagePullBackOff``, ``exit 137``, ...)."""

    status: JobStatus
    detail: str = ""
    exit_code: int | None = None
    cause: FailureCause | None = None
    """For FAILED: why, as far as the backend can tell (``exit`` when all it saw was the
    process ending; the client tells a function that raised from that)."""
    preemptions: int = 0
    """How many earlier attempts of this job the backend ran again, in place, after they were
    preempted (a Job's new pod; the local supervisor's new run)."""
    next_attempt: int | None = None
    """For an attempt its backend has already run again as a new attempt of the same input
    (one index of an array batch, ``Capabilities.array_batches``): that attempt's number. The
    batch follows it instead of settling the input; None for any other job."""
    queue: QueuePlace | None = None
    """For PENDING while the job waits to be admitted (a Kueue queue, the local backend's
    slots): where it stands. ``detail`` says the same in words."""
    placement: Placement | None = None
    """The accelerator and kind of capacity this attempt was given, once its backend placed
    it (on a queue, when the queue admitted it); None before, or where the backend does not
    say."""

    @property
    def failed_host(self) -> int | None:
        """For a multi-host job that FAILED on one host: that host (the detail of such a
        failure begins ``host i of N:``, on every backend). A job's output is that host's by
        default: the others, stopped with it, may have said nothing."""
        if self.status is not JobStatus.FAILED:
            return None
        named = _NAMED_HOST.match(self.detail)
        return int(named.group(1)) if named else None

    def reason(self) -> str:
        """The reason alone: ``OOMKilled, exit 137`` (empty when there is none)."""
        extras = [self.detail] if self.detail else []
        if self.exit_code is not None and f"exit {self.exit_code}" not in self.detail:
            extras.append(f"exit {self.exit_code}")
        return ", ".join(extras)

    def describe(self) -> str:
        """One line for humans: ``FAILED (OOMKilled, exit 137)``."""
        reason = self.reason()
        return self.status.value + (f" ({reason})" if reason else "")
