"""User functions for the gke client-level tests, as a user's own module would define them.

Jobs import this module by name from the code bundle (the scenarios' ``conftest.py`` puts this
directory on ``sys.path``), so it imports nothing but the standard library.
"""

import os
import time
from typing import Any

__all__ = ["GATE_TIMEOUT_S", "exit_at_once", "hold_until", "square_after"]

GATE_TIMEOUT_S = 60.0
"""A job never waits longer than this, so a broken test cannot leave it behind."""


def hold_until(gate: str, value: Any = None) -> Any:
    """Wait for the file ``gate`` to exist, then return ``value``."""
    deadline = time.monotonic() + GATE_TIMEOUT_S
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.01)
    return value


def square_after(x: int, gate: str) -> int:
    """Input 2 waits for ``gate``, so a fault aimed at it hits it while it runs."""
    if x == 2:
        hold_until(gate)
    return x * x


def exit_at_once(code: int) -> None:
    """End the process with ``code`` at once: no result, no traceback, nothing flushed."""
    os._exit(code)
