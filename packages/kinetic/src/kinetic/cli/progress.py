"""Counting a batch's children by state, and showing that count live while it runs.

On a terminal the display is a rich progress bar redrawn in place; anywhere else it is one
plain line per change, with no ANSI codes, so logs and CI output stay readable.
"""

import sys
import time
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import TYPE_CHECKING

import click

from kinetic.cli import render

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from kinetic.batch import BatchHandle
    from kinetic_protocol import JobState

__all__ = ["Tally", "WatchDisplay", "format_seconds", "tally"]


@dataclass(frozen=True)
class Tally:
    """How many of a batch's inputs are in each state right now."""

    total: int
    succeeded: int = 0
    failed: int = 0
    """Children that FAILED plus inputs whose submission raised."""
    running: int = 0
    pending: int = 0
    unsubmitted: int = 0
    gone: int = 0
    """NOT_FOUND children: cancelled, or cleaned up after their result was collected."""

    @property
    def finished(self) -> int:
        return self.succeeded + self.failed + self.gone

    def as_dict(self) -> dict[str, int]:
        return asdict(self) | {"finished": self.finished}

    def summary(self) -> str:
        """``3 done, 1 running, 5 pending, 1 failed`` (states that are zero are kept, so the
        line keeps its shape as it changes; ``gone`` only appears when there are some)."""
        parts = [
            f"{self.succeeded} done",
            f"{self.running} running",
            f"{self.pending + self.unsubmitted} pending",
            f"{self.failed} failed",
        ]
        if self.gone:
            parts.append(f"{self.gone} gone")
        return ", ".join(parts)


def tally(
    batch: "BatchHandle",
) -> "tuple[Tally, list[tuple[int, str]], dict[int, JobState]]":
    """One status poll of ``batch``: the counts, ``(index, status)`` of every input, and the
    state (with its reason) of every submitted child."""
    submitted = dict(batch.states())
    errors = batch.submission_failures
    total = len(batch.jobs)
    per_input = []
    for index in range(total):
        if index in submitted:
            per_input.append((index, submitted[index].status.value))
        elif index in errors:
            per_input.append((index, "SUBMISSION_FAILED"))
        else:
            per_input.append((index, "UNSUBMITTED"))
    states = [state for _, state in per_input]
    counts = Tally(
        total=total,
        succeeded=states.count("SUCCEEDED"),
        failed=states.count("FAILED") + states.count("SUBMISSION_FAILED"),
        running=states.count("RUNNING"),
        pending=states.count("PENDING"),
        unsubmitted=states.count("UNSUBMITTED"),
        gone=states.count("NOT_FOUND"),
    )
    return counts, per_input, submitted


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
        self.live = render.is_terminal() if live is None else live
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
                console=render.console(),
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
