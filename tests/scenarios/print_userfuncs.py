"""A user function that prints many lines, for the scenarios about a job's printed output.

Jobs import this module by name (``print_userfuncs``) from the code bundle. It prints the way
user code does: ``print`` to stdout and stderr without flushing, a burst of lines and then a
few spaced out in time, and returns right after its last line.
"""

import sys
import time

__all__ = ["FAST", "SLOW", "chatter", "expected_lines"]

FAST = 60
"""Lines printed back to back to each stream."""
SLOW = 4
"""Lines printed to each stream a moment apart, after the burst."""
_SLOW_GAP_S = 0.05


def expected_lines(tag: str, stream: str) -> list[str]:
    """Every line ``chatter(tag)`` prints to ``stream`` ("out" or "err"), in order."""
    return [f"{tag} {stream} fast {i}" for i in range(FAST)] + [
        f"{tag} {stream} slow {i}" for i in range(SLOW)
    ]


def chatter(tag: str) -> str:
    for i in range(FAST):
        print(f"{tag} out fast {i}")
        print(f"{tag} err fast {i}", file=sys.stderr)
    for i in range(SLOW):
        time.sleep(_SLOW_GAP_S)
        print(f"{tag} out slow {i}")
        print(f"{tag} err slow {i}", file=sys.stderr)
    return f"done {tag}"
