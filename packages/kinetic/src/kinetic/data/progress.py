"""A progress display for long transfers: a rich bar on a terminal, nothing elsewhere.

``rich`` is already the CLI's renderer (batch watch uses its bars), so transfers look the same
and add no dependency. It is imported only when a bar is actually shown, so library code
that uploads a small directory, or runs without a terminal (CI, a notebook's log), never
loads it; the log events of the upload say what happened there.
"""

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["SHOW_ABOVE_BYTES", "transfer_progress"]

SHOW_ABOVE_BYTES = 32 * 1024 * 1024
"""Smaller transfers finish before a bar would tell anyone anything."""


@contextmanager
def transfer_progress(description: str, total_bytes: int) -> Iterator[Callable[[int], None]]:
    """Yield a callback taking bytes moved (safe from worker threads); draws a bar on a TTY."""
    if total_bytes < SHOW_ABOVE_BYTES or not sys.stderr.isatty():
        yield lambda _count: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (
        "{task.description}",
        BarColumn(),
        DownloadColumn(binary_units=True),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total_bytes)
        yield lambda count: bar.advance(task, count)
