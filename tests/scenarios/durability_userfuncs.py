"""User functions for the durability scenarios: each run leaves a trace a test can count.

Jobs import this module by name from the code bundle, so nothing here imports test packages.
"""

import os
import time
from pathlib import Path

__all__ = ["DurabilityUserError", "traced"]


class DurabilityUserError(Exception):
    """The user's own exception for an input's failing first attempt."""


def traced(
    index: int,
    runs: str,
    fail_first: bool = False,
    seconds: float = 0.0,
    wait_for: str | None = None,
) -> int:
    """Record this run (``<runs>/<index>`` gets the job id), wait for the file ``wait_for``
    if given, optionally fail the input's first run, and return ``index * index``."""
    log = Path(runs) / str(index)
    with log.open("a") as trace:
        trace.write(os.environ.get("KINETIC_JOB_ID", "?") + "\n")
    time.sleep(seconds)
    while wait_for is not None and not os.path.exists(wait_for):
        time.sleep(0.01)
    first = Path(runs) / f"{index}.failed-once"
    if fail_first and not first.exists():
        first.touch()
        raise DurabilityUserError(f"the first run of input {index} fails")
    return index * index


def traced_env(index: int, runs: str, name: str) -> int:
    """Record what this run saw of variable ``name`` (``<runs>/<index>.env``); return index."""
    (Path(runs) / f"{index}.env").write_text(os.environ.get(name, "<unset>"))
    return index
