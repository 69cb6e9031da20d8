"""Following a batch's counts until it ends, shown in a terminal, a log or a notebook."""

import sys
import time
from collections.abc import Iterator
from typing import Any, Protocol

from kinetic.batch.notebook import ShownBatch
from kinetic.batch.tally import Polled, Tally, tally

__all__ = ["WatchedBatch", "follow_counts", "in_notebook", "watch"]


class WatchedBatch(ShownBatch, Protocol):
    """A batch as :func:`watch` follows it (a :class:`~kinetic.batch.BatchHandle` is one)."""

    def wait(self, *, timeout: float | None = None) -> None: ...


def follow_counts(
    handle: WatchedBatch, *, interval: float, timeout: float | None
) -> Iterator[Polled]:
    """A poll of the batch (:func:`tally`) now, then after every change (at most ``interval``
    seconds apart) until every input has settled; a ``TimeoutError`` after ``timeout`` leaves
    it running."""
    stop_at = None if timeout is None else time.monotonic() + timeout
    polled = tally(handle)
    yield polled
    while True:
        step = interval if stop_at is None else max(0.0, min(interval, stop_at - time.monotonic()))
        try:
            handle.wait(timeout=step)
        except TimeoutError:
            if stop_at is not None and time.monotonic() >= stop_at:
                raise TimeoutError(
                    f"Batch {handle.group_id} is still running after {timeout:g}s "
                    f"({polled[0].summary()}); its jobs keep running."
                ) from None
            polled = tally(handle)
            yield polled
            continue
        yield tally(handle)
        return


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython is looked up, never imported, here)."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def watch(handle: WatchedBatch, *, interval: float, timeout: float | None) -> Tally:
    """Show live progress until the batch ends; returns the final counts."""
    if in_notebook():
        return _watch_in_notebook(handle, interval=interval, timeout=timeout)
    from kinetic.batch.progress import WatchDisplay

    display = WatchDisplay(handle.group_id, len(handle.jobs))
    counts = Tally(total=len(handle.jobs))
    with display:
        for counts, _, _ in follow_counts(handle, interval=interval, timeout=timeout):
            display.update(counts)
    display.finish(counts)
    return counts


def _watch_in_notebook(handle: WatchedBatch, *, interval: float, timeout: float | None) -> Tally:
    from IPython.display import HTML, display

    from kinetic.batch.notebook import batch_html

    shown: Any = None
    counts = Tally(total=len(handle.jobs))
    for polled in follow_counts(handle, interval=interval, timeout=timeout):
        counts = polled[0]
        page = HTML(batch_html(handle, polled))
        if shown is None:
            shown = display(page, display_id=True)
        else:
            shown.update(page)
    return counts
