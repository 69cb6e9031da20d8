"""Option types shared by the commands.

``click.FloatRange`` lets ``nan`` through (every comparison with it is false), and a NaN
deadline never passes: ``--timeout nan`` waited for ever. :class:`Seconds` refuses it.
``click.Path`` takes an empty string as the current directory (``--download ""`` wrote there):
:class:`GivenPath` refuses it.
"""

import math
from typing import Any

import click

__all__ = ["GivenPath", "Seconds"]


class Seconds(click.ParamType[float | None]):
    """A number of seconds, at least ``minimum``. ``inf`` means no limit (``None``) where
    ``unlimited`` is allowed, and is refused elsewhere; NaN is always refused."""

    name = "seconds"

    def __init__(self, minimum: float = 0.0, *, unlimited: bool = True) -> None:
        self.minimum = minimum
        self.unlimited = unlimited

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float | None:
        if value is None:
            return None
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds; give e.g. 30 or 2.5.", param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number of seconds; give e.g. 30 or 2.5.", param, ctx)
        if math.isinf(number) and number > 0:
            if self.unlimited:
                return None
            self.fail(f"{value!r} is too long; give a finite number of seconds.", param, ctx)
        if number < self.minimum:
            least = f"{self.minimum:g}"
            self.fail(f"{value!r} is less than the minimum of {least} seconds.", param, ctx)
        return number


class GivenPath(click.Path):
    """A ``click.Path`` that must be named: an empty value (an unset shell variable, most
    likely) is refused instead of meaning the current directory."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail(
                f"{value!r} is an empty path; name one (e.g. ./outputs, or . for the current "
                "directory).",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)
