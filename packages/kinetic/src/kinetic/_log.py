"""Loggers for library code: structlog-wrapped stdlib loggers that Kinetic never configures.

Two kinds of output, kept apart:

* structured events (``get_logger(__name__).warning("batch.fail_fast", ...)``) are for an
  application that configured logging: they reach its handlers like any other library's, and
  are dropped when it configured none (the standard library's last-resort handler would print
  them as raw ``event='...'`` lines on stderr, which no script asked for);
* notices for the user (:func:`say`, :func:`notice`) are one plain sentence, always shown:
  through the application's handlers when it has some, else as one line on stderr.
"""

import logging
import re
from collections.abc import MutableMapping
from typing import Any

__all__ = ["get_logger", "notice", "one_line", "printable", "say"]

# C0 controls but tab and newline, DEL, and C1 controls (an 8-bit CSI is one of them).
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

_noticed: set[str] = set()


def _drop_unless_configured(
    logger: Any, method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """A structlog processor: no handler anywhere above ``logger`` means nobody asked."""
    if not logger.hasHandlers():
        import structlog

        raise structlog.DropEvent
    return event


class _KeyValuesWithErrors:
    """Renders an event as one ``key=value`` line.

    An expected error (Kinetic's own, or an ``OSError`` such as a full disk) whose event asked
    for ``exc_info`` becomes the field ``error='StoreError: ...'``: its message says what went
    wrong and what to do, and a traceback squeezed into the line helped nobody. Any other
    exception is a bug: its traceback goes to the application's handler, which prints it after
    the line as for any logged exception.
    """

    def __init__(self) -> None:
        import structlog

        self._render = structlog.processors.KeyValueRenderer(key_order=["event"], drop_missing=True)

    def __call__(
        self, logger: Any, method: str, event: MutableMapping[str, Any]
    ) -> tuple[tuple[str], dict[str, Any]]:
        exc_info = _exc_info(event.pop("exc_info", None))
        error = exc_info[1] if exc_info is not None else None
        if error is not None and _expected(error):
            event["error"] = one_line(error)
            exc_info = None
        return (self._render(logger, method, event),), {"exc_info": exc_info}


def _exc_info(value: Any) -> Any:
    if value is True:
        import sys

        value = sys.exc_info()
    elif isinstance(value, BaseException):
        value = (type(value), value, value.__traceback__)
    return value if isinstance(value, tuple) and value[1] is not None else None


def _expected(error: BaseException) -> bool:
    from kinetic_protocol import KineticError

    return isinstance(error, KineticError | OSError)


def one_line(error: BaseException) -> str:
    """``error`` as ``Type: message`` on one line, for a log field or a notice."""
    return f"{type(error).__name__}: " + " ".join(str(error).split())


class _LazyLogger:
    """Builds the structlog logger on first use: importing structlog costs ~0.1 s (it loads
    rich when installed), which ``import kinetic`` should not pay for events it rarely emits."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, method: str) -> Any:
        if self._logger is None:
            import structlog

            self._logger = structlog.wrap_logger(
                logging.getLogger(self._name),
                processors=[
                    _drop_unless_configured,
                    _KeyValuesWithErrors(),
                ],
            )
        return getattr(self._logger, method)


def get_logger(name: str) -> Any:
    return _LazyLogger(name)


def printable(text: str) -> str:
    """``text`` with control characters other than newline and tab shown as escapes
    (``\\x1b``), so it cannot drive the terminal: what the store holds (key names too) was
    written by whoever can write the store."""
    return _UNPRINTABLE.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def say(message: str, level: int = logging.WARNING) -> None:
    """Tell the user ``message``, one plain sentence (logged by the ``kinetic`` logger), with
    control characters shown as escapes (a notice often names a store key)."""
    logging.getLogger("kinetic").log(level, printable(message))


def notice(key: str, message: str) -> None:
    """:func:`say` ``message`` once per process, for notices that would otherwise repeat."""
    if key in _noticed:
        return
    _noticed.add(key)
    say(message)
