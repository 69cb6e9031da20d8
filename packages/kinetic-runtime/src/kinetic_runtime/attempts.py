"""Which attempt of its input a run of an array batch's index is, told by the cluster.

An array batch's indexes all run one pod template, so each run learns its attempt from the
variables the backend fills in from its pod (on gke, the Job's per-index failure counts):
``KINETIC_INDEX_FAILURES`` runs of the index failed before this one, so this run is attempt
that many, with the job id a per-child batch gives the same attempt
(``<prefix>-<index>-r<attempt>``): its own output, result and log. A run the cluster took away
(a preemption) is run again as the same attempt, as a per-child batch's Job does, until
``KINETIC_PREEMPTION_RETRIES`` are spent.

A retry writes its child record itself (attempt 0 exists by construction), so every reader
of the store (a timeline, ``attach``, a cleanup) sees it as it sees a per-child retry.
"""

import contextlib
from dataclasses import dataclass
from datetime import UTC, datetime

from kinetic_protocol import (
    BatchChild,
    ObjectStore,
    PreconditionFailedError,
    RetryRule,
    layout,
)
from kinetic_protocol.layout import ascii_count
from kinetic_protocol.settings import SettingSpec
from kinetic_protocol.signing import Keyring, seal_json
from kinetic_runtime import settings

__all__ = ["IndexRun", "record_attempt"]


def _count(spec: SettingSpec) -> int:
    value = spec.from_env() or "0"
    count = ascii_count(value)
    if count is None:
        raise ValueError(f"{spec.env}={value!r} is not a count; the backend sets it to one")
    return count


@dataclass(frozen=True)
class IndexRun:
    """This run of an array batch's index, as its pod says."""

    attempt: int
    preemptions: int
    preemption_retries: int

    @classmethod
    def from_env(cls) -> "IndexRun | None":
        """None outside an array batch (``KINETIC_INDEX_FAILURES`` is not set)."""
        if settings.INDEX_FAILURES.from_env() is None:
            return None
        return cls(
            attempt=_count(settings.INDEX_FAILURES),
            preemptions=_count(settings.INDEX_PREEMPTIONS),
            preemption_retries=_count(settings.PREEMPTION_RETRIES),
        )

    def job_id(self, index_job_id: str) -> str:
        """The job id of this attempt, from its index's (attempt 0's)."""
        return f"{index_job_id}-r{self.attempt}" if self.attempt else index_job_id

    @property
    def preemptions_spent(self) -> bool:
        """Whether the cluster took this attempt away more often than the batch's rule lets
        it run again as itself."""
        rule = RetryRule(preemption_retries=self.preemption_retries)
        return rule.preemptions_spent(self.preemptions)


def record_attempt(
    store: ObjectStore, keyring: Keyring, group_id: str, index: int, attempt: int, job_id: str
) -> None:
    """Write a retry's child record (create-only: a preempted run of the same attempt finds
    it in place), signed as the client signs its own."""
    key = layout.child_key(group_id, index, attempt)
    child = BatchChild(
        group_id=group_id,
        index=index,
        attempt=attempt,
        job_id=job_id,
        submitted_at=datetime.now(UTC).isoformat(timespec="milliseconds"),
    )
    with contextlib.suppress(PreconditionFailedError):
        store.write(key, seal_json(keyring, "batch-record", key, child), if_absent=True)
