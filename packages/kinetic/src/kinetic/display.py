"""Compact HTML summaries of job and batch handles for Jupyter (``_repr_html_``).

Each summary costs one status call, plus a read of what a failed job stored to say why it
failed (for a batch, of the first few failed children only); a backend that cannot answer is
shown as such instead of breaking the notebook cell.
"""

from html import escape
from typing import TYPE_CHECKING

from kinetic_protocol import KineticError

if TYPE_CHECKING:
    from kinetic.batch.handle import BatchHandle
    from kinetic.batch.tally import Polled, Tally
    from kinetic.handle import JobHandle
    from kinetic_protocol import AttemptFailure, JobState

__all__ = ["batch_html", "job_html", "queue_text"]

_COLOURS = {
    "SUCCEEDED": "#2e7d32",
    "FAILED": "#c62828",
    "RUNNING": "#1565c0",
    "PENDING": "#78909c",
    "NOT_FOUND": "#455a64",
}
_STYLE = "font-family: sans-serif; font-size: 13px; line-height: 1.5"


def _badge(text: str, status: str) -> str:
    colour = _COLOURS.get(status, "#455a64")
    return (
        f'<span style="background:{colour};color:white;border-radius:3px;padding:0 6px">'
        f"{escape(text)}</span>"
    )


def _row(label: str, value: str) -> str:
    return f'<tr><th style="text-align:left;padding-right:12px">{label}</th><td>{value}</td></tr>'


def _code(command: str) -> str:
    return f"<code>{escape(command)}</code>"


def _cause(failure: "AttemptFailure") -> str:
    """A failure's cause as a badge, with its reason beside it."""
    return f"{_badge(failure.cause.value, 'FAILED')} {escape(failure.reason)}"


def queue_text(job: "JobHandle") -> str:
    """``team-a, priority high``: the queue and class a job was submitted with."""
    said = [job.queue] if job.queue else []
    return ", ".join([*said, *([f"priority {job.priority}"] if job.priority else [])])


def job_html(job: "JobHandle") -> str:
    """Id, status with its reason (where it waits in its queue), why it failed, its queue and
    class, accelerator, and the commands that show its logs."""
    from kinetic.failure import failure_of

    cause = ""
    try:
        state = job.status_detail()
        status = _badge(state.describe(), state.status.value)
        failure = failure_of(job, state)
        cause = _row("cause", _cause(failure)) if failure is not None else ""
    except KineticError as error:
        status = f"<i>status unavailable: {escape(str(error))}</i>"
    rows = [
        _row("job", _code(job.job_id)),
        _row("status", status),
        *([cause] if cause else []),
        _row("function", escape(job.func_name)),
        *([_row("queue", escape(queue_text(job)))] if job.queue or job.priority else []),
        _row("accelerator", escape(f"{job.accelerator} on {job.backend}")),
        _row("created", escape(job.created_at)),
        _row("logs", _code(f"kinetic jobs logs {job.job_id} --follow")),
    ]
    return f'<div style="{_STYLE}"><table>{"".join(rows)}</table></div>'


def _progress_bar(counts: "Tally") -> str:
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
        f'background:{_COLOURS[status]}"></div>'
        for status, count in parts
        if count
    )
    return (
        '<div role="progressbar" aria-valuemin="0" '
        f'aria-valuemax="{counts.total}" aria-valuenow="{counts.finished}" '
        'style="display:flex;width:320px;height:12px;background:#eceff1;border-radius:3px;'
        f'overflow:hidden">{segments}</div>'
    )


def _failures(batch: "BatchHandle", states: "dict[int, JobState]", limit: int = 5) -> str:
    """The first failed inputs, each with its cause and reason, one per line."""
    ended = [(i, state) for i, state in sorted(states.items()) if state.status.value == "FAILED"]
    if not ended:
        return ""
    failures = batch._failures_among(ended[:limit])
    shown = [
        f"input {i}: {_cause(failures[i]) if i in failures else _badge(state.describe(), 'FAILED')}"
        for i, state in ended[:limit]
    ]
    if len(ended) > limit:
        shown.append(f"... and {len(ended) - limit} more (batch.cause_counts() counts them all)")
    return "<br>".join(shown)


def batch_html(batch: "BatchHandle", polled: "Polled | None" = None) -> str:
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
        _row("batch", _code(batch.group_id) + (f" ({escape(batch.name)})" if batch.name else "")),
        _row("function", escape(batch.func_name)),
        _row("progress", summary),
    ]
    queued = queued_children(states)
    if queued is not None:
        rows.append(_row("queued", escape(queued.describe())))
    failed = _failures(batch, states)
    if failed:
        rows.append(_row("failed", failed))
    rows += [
        _row("created", escape(batch.created_at)),
        _row("logs", _code(f"kinetic batch logs {batch.group_id} --follow")),
        _row("status", _code(f"kinetic batch status {batch.group_id}")),
    ]
    return f'<div style="{_STYLE}"><table>{"".join(rows)}</table></div>'
