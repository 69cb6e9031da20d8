"""Loggers for library code: structlog-wrapped stdlib loggers that Kinetic never configures.

Unconfigured, events follow the standard library (WARNING and above to stderr); an application
that configures logging or structlog receives them like any other library's.
"""

import logging
from typing import Any

__all__ = ["get_logger", "notice"]

_noticed: set[str] = set()


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
                    structlog.processors.format_exc_info,
                    structlog.processors.KeyValueRenderer(key_order=["event"], drop_missing=True),
                ],
            )
        return getattr(self._logger, method)


def get_logger(name: str) -> Any:
    return _LazyLogger(name)


def notice(key: str, message: str) -> None:
    """Say ``message`` once per process: for one-line notices the user should see."""
    if key in _noticed:
        return
    _noticed.add(key)
    logging.getLogger("kinetic").warning(message)
