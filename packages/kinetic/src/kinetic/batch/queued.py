"""Where a batch's waiting children stand, in one line: how many wait in a queue, and the place
of the one nearest the front (a batch of a thousand inputs is not a thousand lines)."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from kinetic_protocol import JobState, JobStatus
from kinetic_protocol.queueing import QueuePlace, ordinal

__all__ = ["QueuedChildren", "queued_children", "queued_places"]


@dataclass(frozen=True)
class QueuedChildren:
    """The children of a batch that wait in a queue, from one status poll."""

    count: int
    queues: tuple[str, ...]
    """The queues they wait in, sorted."""
    first_index: int
    """The input whose job is nearest the front."""
    first: QueuePlace

    def describe(self) -> str:
        """``3 inputs queued in team-a, the first 2nd of 9``."""
        inputs = "input" if self.count == 1 else "inputs"
        said = f"{self.count} {inputs} queued in {', '.join(self.queues)}"
        if self.first.position is None:
            return said
        where = ordinal(self.first.position)
        if self.first.waiting is not None:
            where += f" of {self.first.waiting}"
        return f"{said}, the first {where}" if self.count > 1 else f"{said}: {where}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "queues": list(self.queues),
            "first_index": self.first_index,
            "first": msgspec.to_builtins(self.first),
        }


def queued_places(states: Mapping[int, JobState]) -> list[tuple[int, QueuePlace]]:
    """``(input, place)`` of each child that waits in a queue, the nearest the front first
    (those of no known position last, by input)."""
    places = [
        (index, state.queue)
        for index, state in states.items()
        if state.status is JobStatus.PENDING and state.queue is not None
    ]
    return sorted(
        places, key=lambda item: (item[1].position is None, item[1].position or 0, item[0])
    )


def queued_children(states: Mapping[int, JobState]) -> QueuedChildren | None:
    """How many children wait in a queue and the nearest the front; None when none does."""
    places = queued_places(states)
    if not places:
        return None
    first_index, first = places[0]
    return QueuedChildren(
        count=len(places),
        queues=tuple(sorted({place.queue for _, place in places})),
        first_index=first_index,
        first=first,
    )
