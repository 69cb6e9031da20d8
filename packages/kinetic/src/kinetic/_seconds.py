"""A number of seconds as a user gives it: any int or float, however large.

``float()`` of an int past a float's range raises ``OverflowError``, and ``repr()`` of one
spells out hundreds of digits: both used to reach the user from ``timeout=10**400``.
"""

import math

__all__ = ["as_seconds", "shown_seconds"]


def as_seconds(number: float) -> float:
    """``number`` as a float; an int past a float's range as the infinity of its sign (a bare
    ``float()`` raises ``OverflowError`` there)."""
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


def shown_seconds(number: float) -> str:
    """``number`` for a message: an int of hundreds of digits is described, not spelled out."""
    if isinstance(number, int) and abs(number) >= 10**15:
        digits = int(abs(number).bit_length() * math.log10(2)) + 1  # str() refuses past 4300
        return f"{'-' if number < 0 else ''}an int of about {digits} digits"
    return repr(number)
