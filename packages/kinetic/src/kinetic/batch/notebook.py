"""A batch's HTML summary for Jupyter (``BatchHandle._repr_html_``, and each frame of
``watch()`` in a notebook).

It costs one status poll (none when the caller has one in hand), plus a read of what each of
the first few failed children stored to say why it failed; a backend that cannot answer is
shown as such instead of breaking the notebook cell.
"""

from collections.abc import Sequence
from html import escape
from typing import Protocol

from kinetic.batch.tally import Polled, PolledBatch, Tally
from kinetic.display import COLOURS, STYLE, badge, cause_badge, code, row
from kinetic_protocol import AttemptFailure, JobState, KineticError

__all__ = ["ShownBatch", "batch_html"]


class ShownBatch(PolledBatch, Protocol):
    """What a batch's summary reads (a :class:`~kinetic.batch.BatchHandle` is one)."""

    @property
    def group_id(self) -> str: ...

    @property
    def name(self) -> str | None: ...

    @property
    def func_name(self) -> str: ...

    @property
    def created_at(self) -> str: ...

    def _failures_among(
        self, states: Sequence[tuple[int, JobState]]
    ) -> dict[int, AttemptFailure]: ...


def _progress_bar(counts: Tally) -> str:
    """One bar split by outcome: succeeded, failed, running, pending."""
    total = max(counts.total, 1)
    parts = [
        ("SUCCEEDED", counts.succeeded),
        ("FAILED", counts.failed),
        ("NOT_FOUND", counts.gone),
        ("RUNNING", counts.running),
        ("PENDING", counts.pending + counts.unsubmitted),
    ]
    segments = "".join(
        f'<div title="{escape(status.lower())}: {count}" style="width:{100 * count / total:.2f}%;'
        f'background:{COLOURS[status]}"></div>'
        for status, count in parts
        if count
    )
    return (
        '<div role="progressbar" aria-valuemin="0" '
        f'aria-valuemax="{counts.total}" aria-valuenow="{counts.finished}" '
        'style="display:flex;width:320px;height:12px;background:#eceff1;border-radius:3px;'
        f'overflow:hidden">{segments}</div>'
    )


def _failures(batch: ShownBatch, states: dict[int, JobState], limit: int = 5) -> str:
    """The first failed inputs, each with its cause and reason, one per line."""
    ended = [(i, state) for i, state in sorted(states.items()) if state.status.value == "FAILED"]
    if not ended:
        return ""
    failures = batch._failures_among(ended[:limit])
    shown = [
        f"input {i}: "
        + (cause_badge(failures[i]) if i in failures else badge(state.describe(), "FAILED"))
        for i, state in ended[:limit]
    ]
    if len(ended) > limit:
        shown.append(f"... and {len(ended) - limit} more (batch.cause_counts() counts them all)")
    return "<br>".join(shown)


def batch_html(batch: ShownBatch, polled: Polled | None = None) -> str:
    """Group id, name, counts with a progress bar, how many inputs wait in a queue (and the
    first's place), the first failures with their reasons, and the commands for logs and
    status. ``polled``: a :func:`~kinetic.batch.tally.tally` result already in hand (else one
    status poll is made here)."""
    from kinetic.batch.queued import queued_children
    from kinetic.batch.tally import tally

    states: dict[int, JobState] = {}
    if polled is None:
        try:
            polled = tally(batch)
        except KineticError as error:
            summary = f"<i>status unavailable: {escape(str(error))}</i>"
    if polled is not None:
        counts, _, states = polled
        summary = (
            f"{counts.finished}/{counts.total} finished ({escape(counts.summary())})"
            f"{_progress_bar(counts)}"
        )
    rows = [
        row("batch", code(batch.group_id) + (f" ({escape(batch.name)})" if batch.name else "")),
        row("function", escape(batch.func_name)),
        row("progress", summary),
    ]
    queued = queued_children(states)
    if queued is not None:
        rows.append(row("queued", escape(queued.describe())))
    failed = _failures(batch, states)
    if failed:
        rows.append(row("failed", failed))
    rows += [
        row("created", escape(batch.created_at)),
        row("logs", code(f"kinetic batch logs {batch.group_id} --follow")),
        row("status", code(f"kinetic batch status {batch.group_id}")),
    ]
    return f'<div style="{STYLE}"><table>{"".join(rows)}</table></div>'
