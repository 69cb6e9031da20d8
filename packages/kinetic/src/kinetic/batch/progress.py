"""Showing a batch's counts (:mod:`kinetic.batch.tally`) live while it runs.

On a terminal the display is a rich progress bar redrawn in place; anywhere else it is one
plain line per change, with no ANSI codes, so logs and CI output stay readable. Used by
``BatchHandle.watch()`` and by ``kinetic batch watch``, so it lives with the batch, below the
command line.
"""

import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING

import click

from kinetic.batch.tally import Tally, tally

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID


__all__ = ["Tally", "WatchDisplay", "format_seconds", "tally"]


def _console() -> "Console":
    """A rich console on the current stdout (made per display: tests swap stdout)."""
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False, soft_wrap=False)


def format_seconds(seconds: float | None) -> str:
    """``1:02:03`` or ``2:03``; ``?`` when unknown."""
    if seconds is None:
        return "?"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class WatchDisplay:
    """Shows successive tallies of one batch; use as a context manager around the watch."""

    def __init__(self, group_id: str, total: int, *, live: bool | None = None) -> None:
        self.group_id = group_id
        self.total = total
        self.live = _console().is_terminal if live is None else live
        self.started = time.monotonic()
        self._first_finished: int | None = None
        self._last_line = ""
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def eta(self, counts: Tally) -> float | None:
        """Remaining time at the rate inputs have finished since the watch began."""
        if self._first_finished is None:
            return None
        done_here = counts.finished - self._first_finished
        remaining = counts.total - counts.finished
        if remaining <= 0:
            return 0.0
        if done_here <= 0:
            return None
        return self.elapsed / done_here * remaining

    def __enter__(self) -> "WatchDisplay":
        if self.live:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[counts]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=_console(),
                refresh_per_second=4,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.group_id, total=self.total, counts="")
        return self

    def update(self, counts: Tally) -> None:
        if self._first_finished is None:
            self._first_finished = counts.finished
        if self._progress is not None and self._task is not None:
            self._progress.update(
                self._task, completed=counts.finished, total=counts.total, counts=counts.summary()
            )
            return
        line = f"{self.group_id}: {counts.finished}/{counts.total} finished ({counts.summary()})"
        if line != self._last_line:  # only on a change; the times alone are not news
            self._last_line = line
            timing = (
                f"elapsed {format_seconds(self.elapsed)}, ETA {format_seconds(self.eta(counts))}"
            )
            click.echo(f"{line}, {timing}")
            sys.stdout.flush()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def finish(self, counts: Tally) -> None:
        """The closing line, on every kind of output."""
        skipped = f", {counts.unsubmitted} never submitted" if counts.unsubmitted else ""
        click.echo(
            f"Batch {self.group_id} finished in {format_seconds(self.elapsed)}: "
            f"{counts.succeeded} succeeded, {counts.failed} failed"
            + (f", {counts.gone} gone" if counts.gone else "")
            + skipped
            + "."
        )
