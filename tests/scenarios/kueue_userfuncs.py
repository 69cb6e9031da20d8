"""User functions for the queueing scenarios. Jobs import this module by name from the code
bundle, so it imports only the standard library."""

import os
import time

__all__ = ["HOLD_LIMIT_S", "hold_and_log", "run_and_log"]

HOLD_LIMIT_S = 60.0
"""A job never holds longer than this, so a broken test cannot leave it behind."""
RUN_S = 0.3
"""How long ``run_and_log`` runs: long enough that two runs at once are seen to overlap."""


def _log(directory: str, label: str, event: str) -> None:
    with open(os.path.join(directory, label), "a") as out:
        out.write(f"{event} {time.time():.6f}\n")


def run_and_log(directory: str, label: str) -> str:
    """Run for a moment, noting when it began and ended in ``directory/label``."""
    _log(directory, label, "start")
    time.sleep(RUN_S)  # the work being measured: other runs overlapping it are what is seen
    _log(directory, label, "end")
    return label


def hold_and_log(directory: str, label: str, gate: str) -> str:
    """Note the start, then hold until the file ``gate`` exists."""
    _log(directory, label, "start")
    deadline = time.monotonic() + HOLD_LIMIT_S
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.01)
    _log(directory, label, "end")
    return label
