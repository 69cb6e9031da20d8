"""User functions for the batch scenarios, as a user's own module would define them.

Jobs import this module by name (``batch_userfuncs``) from the code bundle, so nothing here may
import test-only packages. Ordering between jobs is forced with files: :func:`step` can create a
file (holding its pid) and wait for another one, so a test never sleeps to get an order.
"""

import os
import re
import time
from pathlib import Path
from typing import Any

__all__ = ["GATE_TIMEOUT_S", "BatchUserError", "echo", "say", "square", "step"]

GATE_TIMEOUT_S = 60.0
"""A job never waits longer than this for a file, so a broken test cannot leave it behind."""


class BatchUserError(Exception):
    """The user's own exception type: a batch must hand it back as itself."""


def _publish(path: str) -> None:
    """Write this process's pid to ``path`` atomically (readers never see an empty file)."""
    temp = f"{path}.tmp-{os.getpid()}"
    Path(temp).write_text(str(os.getpid()))
    os.replace(temp, path)


def _wait_for(path: str) -> None:
    deadline = time.monotonic() + GATE_TIMEOUT_S
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"file {path} never appeared")
        time.sleep(0.005)


def square(x: int) -> int:
    return x * x


def echo(*args: Any, **kwargs: Any) -> list[Any]:
    """Return exactly how the job was called: ``[positional args, keyword args]``."""
    return [list(args), dict(kwargs)]


def step(
    value: Any = None,
    *,
    create: str | None = None,
    wait_for: str | None = None,
    fail_first: str | None = None,
    fail: str | None = None,
    fail_attempt_0: bool = False,
) -> Any:
    """One configurable job; the steps run in this order.

    ``create``: publish this process's pid there. ``wait_for``: block until that file exists.
    ``fail_first``: if that marker file is absent, create it and raise (so only the first
    attempt that gets this far fails). ``fail_attempt_0``: raise in a batch's first attempt
    (its job id has no ``-r<n>`` suffix), whatever happened before. ``fail``: raise
    :class:`BatchUserError` with this message. Else return ``value``.
    """
    if create:
        _publish(create)
    if wait_for:
        _wait_for(wait_for)
    if fail_first and not os.path.exists(fail_first):
        _publish(fail_first)
        raise BatchUserError(f"the first attempt for {value!r} fails")
    if fail_attempt_0 and not re.search(r"-r\d+$", os.environ.get("KINETIC_JOB_ID", "")):
        raise BatchUserError(f"attempt 0 for {value!r} fails")
    if fail:
        raise BatchUserError(fail)
    return value


def say(name: str, *, wait_for: str | None = None, fail: bool = False) -> str:
    """Print two lines naming ``name`` (the second after ``wait_for`` exists), then return
    ``name`` or, with ``fail``, raise."""
    print(f"hello from {name}", flush=True)
    if wait_for:
        _wait_for(wait_for)
    print(f"goodbye from {name}", flush=True)
    if fail:
        raise BatchUserError(f"{name} fails")
    return name
