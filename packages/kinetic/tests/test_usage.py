"""Accelerator time and its list cost: an attempt is priced at the choice it was placed on,
at the dearest of its choices while that is unknown (a cap's estimate never reads low), and not
at all where a choice has no list price (issue 52)."""

import datetime

import pytest

from kinetic.usage import Pricing
from kinetic_protocol.capacity import Choice, Placement
from kinetic_protocol.prices import ListPrices, PriceTable

TABLE = PriceTable(
    as_of=datetime.date(2026, 11, 1),
    stale_by=datetime.date(2027, 2, 1),
    region="test-region",
    gpu={"l4": ListPrices(1.0, spot=0.25), "t4": ListPrices(0.5)},
)
HOUR = 3600.0


def _pricing(accelerators: list[str], capacity: list[str]) -> Pricing:
    return Pricing(tuple(Choice(a, c) for c in capacity for a in accelerators), TABLE)


def test_an_attempt_costs_its_placements_price_for_every_gpu_it_holds() -> None:
    pricing = _pricing(["gpu-l4-x2", "gpu-t4-x2"], ["spot", "on-demand"])
    spot = Placement(accelerator="gpu-l4-x2", capacity="spot")
    usage = pricing.usage(
        [(spot, HOUR), (Placement(accelerator="gpu-l4-x2", capacity="on-demand"), HOUR / 2)]
    )
    assert usage.unit_hours == pytest.approx(3.0), "two GPUs for an hour and a half"
    assert usage.list_cost == pytest.approx(2 * 0.25 + 2 * 1.0 / 2)
    assert usage.describe() == "3 GPU-hours, $1.50 at list prices (test-region, as of 2026-11-01)"


def test_an_attempt_whose_placement_is_unknown_costs_the_dearest_choice() -> None:
    pricing = _pricing(["gpu-l4", "gpu-t4"], ["on-demand"])
    assert pricing.usage([(None, HOUR)]).list_cost == pytest.approx(1.0)


def test_a_choice_without_a_list_price_leaves_the_cost_unknown_but_counts_the_hours() -> None:
    pricing = _pricing(["gpu-t4"], ["spot"])
    assert pricing.unpriced() == [Choice("gpu-t4", "spot")]
    usage = pricing.usage([(Placement(accelerator="gpu-t4", capacity="spot"), HOUR)])
    assert (usage.unit_hours, usage.list_cost) == (1.0, None)
    assert "no list price for it" in usage.describe()


def test_a_reservation_and_flex_start_without_prices_of_their_own_cost_on_demand() -> None:
    pricing = _pricing(["gpu-l4"], ["reservation:r1", "flex-start"])
    assert set(pricing.hourly.values()) == {1.0}


def test_a_tpu_slice_costs_every_chip() -> None:
    table = PriceTable(
        as_of=TABLE.as_of, stale_by=TABLE.stale_by, region="r", tpu={"v5e": ListPrices(1.5)}
    )
    pricing = Pricing((Choice("tpu-v5e-16", "on-demand"),), table)
    usage = pricing.usage([(None, HOUR)])
    assert (usage.unit, usage.unit_hours, usage.list_cost) == ("chip", 16.0, 24.0)
