"""Loggers for library code: structlog-wrapped stdlib loggers that Kinetic never configures.

Unconfigured, events follow the standard library (WARNING and above to stderr); an application
that configures logging or structlog receives them like any other library's.
"""

import logging
from typing import Any

import structlog

__all__ = ["get_logger", "notice"]

_noticed: set[str] = set()


def get_logger(name: str) -> Any:
    return structlog.wrap_logger(
        logging.getLogger(name),
        processors=[structlog.processors.KeyValueRenderer(key_order=["event"], drop_missing=True)],
    )


def notice(key: str, message: str) -> None:
    """Say ``message`` once per process: for one-line notices the user should see."""
    if key in _noticed:
        return
    _noticed.add(key)
    logging.getLogger("kinetic").warning(message)
