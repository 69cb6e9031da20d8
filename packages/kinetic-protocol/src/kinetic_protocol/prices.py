"""List prices per accelerator and kind of capacity, so a job's use can be read in money.

Prices are per unit-hour, a unit being one GPU or one TPU chip; a job's hourly price is its
accelerator's units times that. They are Google Cloud's public list prices for one region,
written down on one day, so they age: the table carries the day it was read (``as_of``) and a
day after which it should not be trusted (``stale_by``), and everything that shows a price
shows the first, and says so when the second has passed.

A team with other prices (another region, a discount, a newer list) names a JSON file of its
own (the client's ``KINETIC_PRICES``); it replaces the built-in table as a whole, so one table
is never a mix of two days. Its shape is the :class:`PriceTable` below, e.g.
``{"as_of": "2026-11-01", "stale_by": "2027-02-01", "region": "europe-west4",
"gpu": {"l4": {"on_demand": 0.78, "spot": 0.31}}, "tpu": {"v5e": {"on_demand": 1.32}}}``.

A kind of capacity without a price of its own costs the on-demand price: a reservation is paid
at on-demand rates whether used or not (a commitment's discount is not list price), and a
flex-start run is billed at a discount the table may not know. An estimate that errs high is
the safe one for a cap on spending.
"""

import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import msgspec

from kinetic_protocol.errors import ConfigError

if TYPE_CHECKING:
    from kinetic_protocol.accelerators import Accelerator

__all__ = [
    "PRICES_ENV",
    "ListPrices",
    "PriceTable",
    "BUILT_IN",
    "hourly_price",
    "load_price_table",
    "unit_name",
]

PRICES_ENV = "KINETIC_PRICES"
_Usd = Annotated[float, msgspec.Meta(ge=0)]


class ListPrices(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """USD per unit-hour of one accelerator type; None where the list has no such price."""

    on_demand: _Usd
    spot: _Usd | None = None
    flex_start: _Usd | None = None

    def for_capacity(self, capacity: str) -> float:
        """The price of ``capacity`` (a kind ``kinetic_protocol.capacity`` accepts)."""
        if capacity == "spot":
            if self.spot is None:
                raise LookupError("spot")
            return self.spot
        if capacity == "flex-start" and self.flex_start is not None:
            return self.flex_start
        return self.on_demand


class PriceTable(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One day's list prices for one region."""

    as_of: datetime.date
    stale_by: datetime.date
    region: str
    gpu: dict[str, ListPrices] = {}
    """By GPU type (``l4``, ``a100-80gb``), per GPU-hour."""
    tpu: dict[str, ListPrices] = {}
    """By TPU generation (``v5e``, ``v5p``), per chip-hour."""
    source: str = "built in"

    def stale(self, today: datetime.date | None = None) -> bool:
        return (today or datetime.date.today()) >= self.stale_by

    def describe(self, today: datetime.date | None = None) -> str:
        """``list prices in USD for us-central1 as of 2025-06-01 (built in; stale since ...)``."""
        age = (
            f"stale since {self.stale_by}: set {PRICES_ENV} to a table of current prices"
            if self.stale(today)
            else f"good until {self.stale_by}"
        )
        return f"list prices in USD for {self.region} as of {self.as_of} ({self.source}; {age})"

    def unit_prices(self, accelerator: "Accelerator") -> ListPrices | None:
        table = self.gpu if accelerator.category == "gpu" else self.tpu
        return table.get(accelerator.type)


def unit_name(accelerator: "Accelerator") -> Literal["GPU", "chip", ""]:
    """What one unit of ``accelerator`` is; empty for ``cpu``, which has no accelerator."""
    return {"gpu": "GPU", "tpu": "chip"}.get(accelerator.category, "")  # type: ignore[return-value]


def hourly_price(accelerator: "Accelerator", capacity: str, table: PriceTable) -> float | None:
    """USD per hour of a whole job on ``accelerator`` (every GPU, or every chip of the
    slice) on ``capacity``; None where the table has no price for it."""
    prices = table.unit_prices(accelerator)
    if prices is None or not accelerator.count:
        return None
    try:
        return prices.for_capacity(capacity) * accelerator.count
    except LookupError:
        return None


# Google Cloud's public list prices in us-central1, per GPU-hour (the GPU with its share of an
# accelerator-optimized machine where GPUs come only in one) and per TPU chip-hour. Types left
# out (h100-mega, h200, b200, v7x) had no list price to read them from.
BUILT_IN = PriceTable(
    as_of=datetime.date(2025, 6, 1),
    stale_by=datetime.date(2025, 12, 1),
    region="us-central1",
    gpu={
        "t4": ListPrices(0.35, spot=0.14),
        "p4": ListPrices(0.60, spot=0.24),
        "p100": ListPrices(1.46, spot=0.58),
        "v100": ListPrices(2.48, spot=0.99),
        "l4": ListPrices(0.71, spot=0.28),
        "a100": ListPrices(3.67, spot=1.47),
        "a100-80gb": ListPrices(5.07, spot=2.03),
        "h100": ListPrices(11.06, spot=4.42),
    },
    tpu={
        "v3": ListPrices(2.00, spot=0.60),
        "v4": ListPrices(3.22, spot=0.97),
        "v5e": ListPrices(1.20, spot=0.48),
        "v5p": ListPrices(4.20, spot=1.68),
        "v6e": ListPrices(2.70, spot=1.08),
    },
)

_loaded: dict[tuple[str, float], PriceTable] = {}


def load_price_table(path: str) -> PriceTable:
    """The table in the JSON file ``path``, read again only when the file changes."""
    try:
        stamp = Path(path).stat().st_mtime
        cached = _loaded.get((path, stamp))
        if cached is not None:
            return cached
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"{PRICES_ENV}={path!r} cannot be read ({exc.strerror or exc}): name a JSON price "
            f"table, or unset {PRICES_ENV} to use the built-in one."
        ) from None
    try:
        table = msgspec.json.decode(raw, type=PriceTable)
    except msgspec.DecodeError as exc:
        raise ConfigError(
            f"{PRICES_ENV}={path!r} is not a price table: {exc}. It holds as_of and stale_by "
            "(YYYY-MM-DD), region, and gpu/tpu maps of type to {on_demand, spot, flex_start} "
            "in USD per unit-hour (docs/guides/capacity.md)."
        ) from None
    table = msgspec.structs.replace(table, source=path)
    _loaded[(path, stamp)] = table
    return table
