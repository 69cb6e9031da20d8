"""Queues and priorities on the local backend: one line for this machine's slots.

Every queue name is accepted and recorded (there is one line, whatever the queue); the priority
classes are those every Kinetic deployment has (``low``, ``normal``, ``high``). A pending job
waits for a slot in line by the value of its class, then by when it was submitted
(``kinetic_runtime.local.slot_queue``), and its state says where it stands.
"""

from pathlib import Path

import msgspec

from kinetic_protocol import ConfigError, JobRecord, JobState, JobStatus, PrepareRequest
from kinetic_protocol.queueing import DEFAULT_PRIORITY_CLASSES, DEFAULT_QUEUE, QueuePlace
from kinetic_runtime.local.slot_queue import waiting_jobs

__all__ = ["SlotLine", "check_priority", "prepared_queue", "priority_value"]


def check_priority(request: PrepareRequest) -> None:
    """Refuse a priority class the local backend does not have, naming those it has."""
    if request.priority is None or request.priority in DEFAULT_PRIORITY_CLASSES:
        return
    known = ", ".join(
        f"{name} ({value})" for name, value in sorted(DEFAULT_PRIORITY_CLASSES.items(), key=_value)
    )
    raise ConfigError(
        f"priority={request.priority!r} is not a priority class of the local backend; it has "
        f"{known}. Nothing was submitted."
    )


def _value(item: tuple[str, int]) -> int:
    return item[1]


def prepared_queue(request: PrepareRequest) -> str:
    """The queue jobs are recorded under: the one asked for, else Kinetic's default."""
    return request.queue or DEFAULT_QUEUE


def priority_value(name: str) -> int:
    """The value jobs of class ``name`` wait in line with (none: that of ``normal``)."""
    return DEFAULT_PRIORITY_CLASSES.get(name, 0)


_PENDING = JobState(status=JobStatus.PENDING)


class SlotLine:
    """The jobs waiting for this machine's slots, read at most once (one status poll)."""

    def __init__(self, slots_dir: Path) -> None:
        self._slots_dir = slots_dir
        self._order: dict[str, int] | None = None

    def _places(self) -> dict[str, int]:
        if self._order is None:
            self._order = {job: i for i, job in enumerate(waiting_jobs(self._slots_dir), 1)}
        return self._order

    def place(self, record: JobRecord) -> QueuePlace | None:
        """Where ``record``'s job stands in line; None if it is not waiting for a slot."""
        places = self._places()
        position = places.get(record.job_id)
        if position is None:
            return None
        return QueuePlace(
            queue=record.queue or DEFAULT_QUEUE,
            position=position,
            waiting=len(places),
            priority=record.priority,
        )

    def waiting(self, record: JobRecord) -> JobState | None:
        """PENDING with the job's place, if the line was read in this poll and holds its
        ticket; else None. A ticket in line is a job never started and not withdrawn (a
        dispatcher takes it out once it has claimed the job; a cancel, before it removes
        the job), so the job's directory need not be read: once one job of a poll is found
        waiting, its other waiting jobs cost nothing more."""
        if self._order is None or record.job_id not in self._order:
            return None
        return self.placed(record, _PENDING)

    def placed(self, record: JobRecord, state: JobState) -> JobState:
        """``state``, with the job's place in line if it is PENDING waiting for a slot."""
        if state.status is not JobStatus.PENDING or state.detail:
            return state
        place = self.place(record)
        if place is None:
            return state
        return msgspec.structs.replace(state, detail=place.describe(), queue=place)
