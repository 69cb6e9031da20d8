"""How a batch looks to a person: its timeline, one stream of its logs, a live progress
display and its notebook summary. Mixed into :class:`~kinetic.batch.handle.BatchHandle`."""

import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from kinetic.batch.handle import BatchHandle
    from kinetic.batch.records import BatchRecords
    from kinetic.batch.state import BatchState
    from kinetic.batch.tally import Tally
    from kinetic.batch.timeline import BatchTimeline
    from kinetic_protocol import AttemptFailure, Backend, BatchManifest, JobState

__all__ = ["BatchViews"]


class BatchViews:
    """The views of a batch; every one reads the store and the backend, so each works on an
    attached batch as on the one this process submits."""

    _manifest: "BatchManifest"
    _records: "BatchRecords"
    _backend: "Backend"
    _state: "BatchState"

    def _repr_html_(self) -> str:
        """Jupyter's view: id, counts with a progress bar, and the CLI commands to follow it."""
        from kinetic.display import batch_html

        return batch_html(cast("BatchHandle", self))

    def _failures_among(
        self, states: Sequence[tuple[int, "JobState"]]
    ) -> dict[int, "AttemptFailure"]:
        """Why each of these children (``(index, state)``) ended without a value, if it did:
        the reads :meth:`child_failures` makes, for these children only."""
        from kinetic.batch.causes import child_failures

        return child_failures(cast("BatchHandle", self).jobs, states, self._records)

    def timeline(self) -> "BatchTimeline":
        """Every attempt of every input as time spans (submitted, started, finished), with
        submission failures; ``.figure()`` draws it, ``.write("t.html")`` saves it (both
        need ``kinetic[plot]``). Read from the store, so it works on an attached batch too."""
        from kinetic.batch.timeline import read_timeline

        return read_timeline(self._manifest, self._records, self._backend)

    def log_lines(
        self, *, follow: bool = False, failed: bool = False, tail: int | None = None
    ) -> Iterator[str]:
        """Every child's output as one stream of lines, each prefixed ``[index]`` (``[index
        rN]`` for retry N, ``[index host H]`` per host of a multi-host child).

        Without ``follow``: what every attempt wrote so far, child by child (the last ``tail``
        lines of each). With ``follow``: lines as they are written, from each child as it
        starts, until the batch has settled. ``failed``: only attempts that failed (with
        ``follow``, each one's output as soon as it fails).
        """
        from kinetic.batch.logs import BatchLogs, check_options

        check_options(follow=follow, failed=failed, tail=tail)
        logs = BatchLogs(self._manifest, self._records, self._backend, self._state)
        if follow:
            return logs.follow(failed=failed, tail=tail)
        return logs.snapshot(failed=failed, tail=tail)

    def logs(
        self, follow: bool = False, *, failed: bool = False, tail: int | None = None
    ) -> str | None:
        """The batch's output as one text (see :meth:`log_lines`); with ``follow``, print it
        as it comes until the batch has settled instead."""
        lines = self.log_lines(follow=follow, failed=failed, tail=tail)
        if not follow:
            return "".join(lines)
        for line in lines:
            sys.stdout.write(line)
            sys.stdout.flush()
        return None

    def watch(self, *, interval: float = 1.0, timeout: float | None = None) -> "Tally":
        """Show live progress until every input has settled; returns the final counts.

        A progress bar on a terminal, one line per change in a log, and an HTML summary
        updated in place in a Jupyter notebook. ``TimeoutError`` after ``timeout`` seconds
        leaves the jobs running.
        """
        from kinetic.batch.watch import watch

        return watch(cast("BatchHandle", self), interval=interval, timeout=timeout)
