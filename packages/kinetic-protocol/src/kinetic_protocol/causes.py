"""Why an attempt of a job ended without a value, as data every backend and client shares.

A backend says what it can see (an OOM kill, a preemption, a deadline, an image that would not
pull); the client adds what only the stored result can say (the function raised, or a Kinetic
phase before it failed). The human reason text stays beside the cause, unchanged.
"""

import enum
from collections.abc import Iterable

import msgspec

from kinetic_protocol.exits import EXIT_NO_SPACE
from kinetic_protocol.records import DEFAULT_PREEMPTION_RETRIES, SCHEMA_VERSION

__all__ = [
    "BACKEND_DECIDED",
    "DEFAULT_PREEMPTION_RETRIES",
    "EXIT_NO_SPACE",
    "EXIT_PREEMPTIONS_SPENT",
    "NOT_RETRIED_BY_DEFAULT",
    "RETRYABLE",
    "AttemptFailure",
    "FailureCause",
    "JobCancelled",
    "RetryRule",
    "retry_causes",
]


EXIT_PREEMPTIONS_SPENT = 86
"""The runtime's exit status for a run of an array batch's index started after the index's
preemptions were spent (cause ``preempted``). Unusual on purpose: the backend reads the cause
from it, and a user's own ``sys.exit(n)`` (small numbers, most often) must not read as one."""


class FailureCause(enum.StrEnum):
    """Why one attempt ended without a value."""

    USER = "user"
    """The function raised (its exception is in the stored result)."""
    EXIT = "exit"
    """The process exited, or was killed, without storing a result."""
    OOM = "oom"
    """Killed for running out of memory."""
    PREEMPTED = "preempted"
    """Preempted, evicted, or its node was lost."""
    UNSCHEDULABLE = "unschedulable"
    """Never scheduled within the deadline (``KINETIC_UNSCHEDULABLE_TIMEOUT``)."""
    IMAGE = "image"
    """Its container image could not be pulled or its container not created."""
    TIMEOUT = "timeout"
    """Ran past its ``timeout=``."""
    CANCELLED = "cancelled"
    """Cancelled (``cancel()``, or a batch's fail-fast stopping it)."""
    INFRASTRUCTURE = "infrastructure"
    """A Kinetic phase before the function ran failed (``AttemptFailure.phase`` names it)."""


BACKEND_DECIDED = frozenset(
    {
        FailureCause.OOM,
        FailureCause.PREEMPTED,
        FailureCause.UNSCHEDULABLE,
        FailureCause.IMAGE,
        FailureCause.TIMEOUT,
    }
)
"""Causes a backend sees for itself; they stand whatever the stored result says (a function
killed at its deadline may still have stored an error on the way out)."""


NOT_RETRIED_BY_DEFAULT = frozenset({FailureCause.UNSCHEDULABLE, FailureCause.IMAGE})
"""Causes a batch's ``retries`` leave alone unless ``retry_on`` names them: running the same
attempt again would meet the same missing capacity or the same image, so it is not retried
blindly."""

RETRYABLE = frozenset(FailureCause) - {FailureCause.CANCELLED}
"""Causes ``retry_on`` may name: a cancelled attempt is never run again."""


def retry_causes(names: Iterable[str] | None) -> frozenset[FailureCause]:
    """The causes a batch's ``retries`` apply to: ``names`` as stored (unknown values, from a
    newer Kinetic, are left out), or the default when None."""
    if names is None:
        return RETRYABLE - NOT_RETRIED_BY_DEFAULT
    known = {cause.value for cause in RETRYABLE}
    return frozenset(FailureCause(name) for name in names if name in known)


class RetryRule(msgspec.Struct, frozen=True, kw_only=True):
    """When a failed attempt runs again: the one rule that a batch's submitter and handle,
    its resume, and a backend that retries an array batch's inputs itself all go by, so none
    of them can retry what another would not.

    A preemption first spends the attempt's own ``preemption_retries``: the backend runs the
    same attempt again (same job id, same output directory), and nothing counts against
    ``retries``. The preemption after those is the attempt's failure, cause ``preempted``,
    which is then retried as the next attempt only when ``retry_on`` holds ``preempted`` and
    ``retries`` remain, like any other cause."""

    retries: int = 0
    """How many more attempts an input gets after its first fails."""
    retry_on: frozenset[FailureCause] = RETRYABLE - NOT_RETRIED_BY_DEFAULT
    """The causes those attempts are spent on (:func:`retry_causes`)."""
    preemption_retries: int = DEFAULT_PREEMPTION_RETRIES
    """How many preemptions one attempt survives by running again as itself."""

    @classmethod
    def stored(
        cls, retries: int, retry_on: Iterable[str] | None, preemption_retries: int
    ) -> "RetryRule":
        """The rule of a stored batch: ``retry_on`` as its manifest keeps it (names; None
        for the default)."""
        return cls(
            retries=retries,
            retry_on=retry_causes(retry_on),
            preemption_retries=preemption_retries,
        )

    def attempts_left(self, attempt: int) -> bool:
        """Whether attempt ``attempt`` (0 first) may be followed by another."""
        return attempt < self.retries

    def covers(self, cause: FailureCause) -> bool:
        """Whether an attempt that ended for ``cause`` is one ``retries`` are spent on."""
        return cause in self.retry_on

    def retries_after(self, attempt: int, cause: FailureCause) -> bool:
        """Whether attempt ``attempt``, ended for ``cause``, is followed by the next."""
        return self.attempts_left(attempt) and self.covers(cause)

    def preemptions_spent(self, preemptions: int) -> bool:
        """Whether an attempt preempted ``preemptions`` times has no run of its own left:
        the last preemption ended it (cause ``preempted``)."""
        return preemptions > self.preemption_retries


class AttemptFailure(msgspec.Struct, frozen=True, kw_only=True):
    """How one attempt of a job ended without a value: the cause as data, the reason in words."""

    cause: FailureCause
    reason: str
    """The reason for people, as status and errors say it (``OOMKilled, exit 137``,
    ``ValueError: bad input``)."""
    attempt: int
    """0 for the first attempt; a batch's retries count up."""
    phase: str = ""
    """For ``infrastructure`` (and ``user``: ``run``): the runtime phase that failed."""
    exit_code: int | None = None


class JobCancelled(msgspec.Struct, kw_only=True):
    """Written by ``JobHandle.cancel()`` before it stops a running job (at
    ``layout.cancelled_job_key``): once its resource is gone, nothing else says it was
    cancelled rather than lost."""

    job_id: str
    attempt: int
    cancelled_at: str
    reason: str
    schema_version: int = SCHEMA_VERSION
