"""Accelerator time a job or a batch used, and what it comes to at list prices.

An attempt uses its accelerator's units (every GPU, every chip of its slice) for as long as it
ran, from its start claim to its stored result (or to now while it runs). Its price is that of
the choice it was placed on; an attempt whose placement is unknown among several choices is
priced at the dearest of them, so a figure that guides a spending cap never reads low. Jobs on
a backend that provisions no accelerators (``local``: this machine's hardware) use none.
"""

import contextlib
import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kinetic_protocol.capacity import Choice, Placement, record_choices
from kinetic_protocol.prices import (
    BUILT_IN,
    PriceTable,
    hourly_price,
    load_price_table,
    unit_name,
)

if TYPE_CHECKING:
    from kinetic_protocol import JobRecord, JobState, ResultEnvelope

__all__ = [
    "Pricing",
    "Usage",
    "billed",
    "job_usage",
    "parse_stamp",
    "price_table",
    "start_claim_time",
]


def price_table() -> PriceTable:
    """The list prices in force: the file ``KINETIC_PRICES`` names, else the built-in ones."""
    from kinetic.settings import PRICES

    path = PRICES.from_env()
    return load_price_table(path) if path else BUILT_IN


@dataclass(frozen=True)
class Usage:
    """Accelerator time used, in units of the accelerator, and its list cost so far."""

    unit_hours: float
    """GPU-hours or TPU chip-hours: every unit of the accelerator, for as long as it ran."""
    unit: str
    """``GPU`` or ``chip``."""
    list_cost: float | None
    """USD at the list prices of ``prices``; None where a choice used has no list price."""
    prices: PriceTable

    def describe(self) -> str:
        """``0.0125 GPU-hours, $0.0089 at list prices (us-central1, as of 2025-06-01)``."""
        cost = (
            "no list price for it"
            if self.list_cost is None
            else f"{_dollars(self.list_cost)} at list prices"
        )
        return (
            f"{self.unit_hours:.4g} {self.unit}-hours, {cost} "
            f"({self.prices.region}, as of {self.prices.as_of})"
        )


def _dollars(amount: float) -> str:
    return f"${amount:,.2f}" if amount >= 1 else f"${amount:.4g}"


class Pricing:
    """The prices of one job's (or one batch's) choices, looked up once."""

    def __init__(self, choices: tuple[Choice, ...], table: PriceTable | None = None) -> None:
        from kinetic_protocol.accelerators import parse_accelerator

        self.table = table or price_table()
        self.choices = choices
        self.accelerators = {c.accelerator: parse_accelerator(c.accelerator) for c in self.choices}
        self.hourly = {
            choice: hourly_price(self.accelerators[choice.accelerator], choice.capacity, self.table)
            for choice in self.choices
        }
        first = self.accelerators[self.choices[0].accelerator]
        self.unit = unit_name(first)
        self.units = first.count  # one family: every choice has as many units

    @classmethod
    def of_record(cls, record: "JobRecord") -> "Pricing":
        return cls(record_choices(record))

    def unpriced(self) -> list[Choice]:
        return [choice for choice, price in self.hourly.items() if price is None]

    def hourly_of(self, placement: Placement | None) -> float | None:
        """USD per hour of an attempt placed on ``placement`` (None: unknown, the dearest)."""
        if placement is not None:
            choice = Choice(placement.accelerator, placement.capacity)
            if choice in self.hourly:
                return self.hourly[choice]
        prices = list(self.hourly.values())
        return None if None in prices else max(p for p in prices if p is not None)

    def usage(self, spans: Iterable[tuple[Placement | None, float]]) -> Usage:
        """The use of attempts that each ran ``seconds`` on a ``placement``."""
        hours = 0.0
        cost: float | None = 0.0
        for placement, seconds in spans:
            hours += seconds / 3600
            hourly = self.hourly_of(placement)
            cost = None if cost is None or hourly is None else cost + hourly * seconds / 3600
        return Usage(hours * self.units, self.unit, cost, self.table)


def billed(record: "JobRecord") -> bool:
    """Whether ``record``'s job runs on accelerators its backend provisions (and so costs)."""
    from kinetic._context import backend_for

    accelerator = record.accelerator
    return accelerator != "cpu" and backend_for(record).capabilities.provisions_accelerators


def parse_stamp(stamp: str) -> datetime.datetime | None:
    """An ISO 8601 time a record holds (UTC where it names no zone); None for empty."""
    if not stamp:
        return None
    moment = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)


def start_claim_time(record: "JobRecord") -> datetime.datetime | None:
    """When the job's (leader) host began running it, from its start claim."""
    from kinetic._context import store_for
    from kinetic_protocol import CorruptRecordError, HostStart, ObjectNotFoundError, layout
    from kinetic_protocol.records import decode_json

    key = layout.host_started_key(record.job_id, 0)
    try:
        start = decode_json(store_for(record).read(key), HostStart, what=key)
    except (ObjectNotFoundError, CorruptRecordError):
        return None
    return parse_stamp(start.started_at)


def job_usage(
    record: "JobRecord",
    status: "Callable[[], JobState]",
    stored_result: "Callable[[], ResultEnvelope]",
) -> Usage | None:
    """What a job's current attempt used (its host 0 from its start to its result, or to now
    while it runs), reading its state and, once it ended, its stored result; None where it
    runs on no billed accelerator."""
    if not billed(record):
        return None
    from kinetic_protocol import Failed, KineticError, Succeeded

    state = status()
    envelope = None
    if state.status.is_terminal:
        with contextlib.suppress(KineticError):
            envelope = stored_result()
    started = start_claim_time(record)
    finished: datetime.datetime | None = None
    if isinstance(envelope, Succeeded | Failed):
        started = parse_stamp(envelope.started_at) or started
        finished = parse_stamp(envelope.finished_at)
    if finished is None and state.status.is_terminal:
        finished = started  # ended with no record of when: nothing counted past its start
    seconds = 0.0
    if started is not None:
        end = finished or datetime.datetime.now(datetime.UTC)
        seconds = max(0.0, (end - started).total_seconds())
    return Pricing.of_record(record).usage([(state.placement, seconds)])
