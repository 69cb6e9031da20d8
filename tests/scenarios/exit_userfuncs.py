"""User code for ``test_exits_and_methods``, as a user's own module would define it.

Jobs import this module by name (``exit_userfuncs``) from the code bundle, so nothing here may
import test-only packages.
"""

import sys
from typing import Any

import kinetic

__all__ = ["Adder", "OwnBaseError", "exit_with", "exit_without_code", "raise_base", "scale"]


class OwnBaseError(BaseException):
    """A user's own ``BaseException`` subclass (not an ``Exception``)."""


def exit_with(code: Any) -> None:
    """Print, then ``sys.exit(code)``."""
    print(f"exiting with {code!r}", flush=True)
    sys.exit(code)


def exit_without_code() -> None:
    sys.exit()


def raise_base(kind: str) -> None:
    if kind == "KeyboardInterrupt":
        raise KeyboardInterrupt
    if kind == "GeneratorExit":
        raise GeneratorExit
    raise OwnBaseError("stopped by my own BaseException")


def scale(factor: int, value: int) -> int:
    return factor * value


class Adder:
    """A class with a remote method; its instance travels pickled with each call."""

    def __init__(self, base: int) -> None:
        self.base = base

    @kinetic.run(accelerator="cpu", backend="local")
    def add(self, value: int) -> int:
        return self.base + value
