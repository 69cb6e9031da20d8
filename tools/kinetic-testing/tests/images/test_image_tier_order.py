"""The image tier's tests run first, in their order, so that one test worker runs them all."""

from typing import Any, cast

import pytest

from kinetic_testing.images.fixtures import MARKER, image_tier_first


class _Item:
    def __init__(self, name: str, *markers: str) -> None:
        self.name = name
        self._markers = set(markers)

    def get_closest_marker(self, name: str) -> Any:
        return object() if name in self._markers else None


def test_the_image_tier_moves_to_the_front_keeping_each_part_in_its_order() -> None:
    items = [
        _Item("unit"),
        _Item("build", MARKER),
        _Item("scenario", "realk8s"),
        _Item("pod", MARKER, "realk8s"),
        _Item("docs"),
    ]
    ordered = cast(list[pytest.Item], items)

    image_tier_first(ordered)

    assert [item.name for item in ordered] == ["build", "pod", "unit", "scenario", "docs"]
