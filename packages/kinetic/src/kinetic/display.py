"""Compact HTML summaries for Jupyter (``_repr_html_``): a job's, and the parts every summary
shares (badges, rows, a failure's cause). A batch's summary is the batch's own
(:mod:`kinetic.batch.notebook`).

A summary costs one status call, plus a read of what a failed job stored to say why it failed;
a backend that cannot answer is shown as such instead of breaking the notebook cell.
"""

from html import escape
from typing import Protocol

from kinetic.failure import Attempt, failure_of
from kinetic_protocol import AttemptFailure, JobState, KineticError

__all__ = [
    "COLOURS",
    "STYLE",
    "ShownJob",
    "badge",
    "cause_badge",
    "code",
    "job_html",
    "queue_text",
    "row",
]

COLOURS = {
    "SUCCEEDED": "#2e7d32",
    "FAILED": "#c62828",
    "RUNNING": "#1565c0",
    "PENDING": "#78909c",
    "NOT_FOUND": "#455a64",
}
STYLE = "font-family: sans-serif; font-size: 13px; line-height: 1.5"


class _Queued(Protocol):
    @property
    def queue(self) -> str: ...

    @property
    def priority(self) -> str: ...


class ShownJob(Attempt, Protocol):
    """What a job's summary reads (a :class:`~kinetic.JobHandle` is one)."""

    def status_detail(self) -> JobState: ...


def badge(text: str, status: str) -> str:
    colour = COLOURS.get(status, "#455a64")
    return (
        f'<span style="background:{colour};color:white;border-radius:3px;padding:0 6px">'
        f"{escape(text)}</span>"
    )


def row(label: str, value: str) -> str:
    return f'<tr><th style="text-align:left;padding-right:12px">{label}</th><td>{value}</td></tr>'


def code(command: str) -> str:
    return f"<code>{escape(command)}</code>"


def cause_badge(failure: AttemptFailure) -> str:
    """A failure's cause as a badge, with its reason beside it."""
    return f"{badge(failure.cause.value, 'FAILED')} {escape(failure.reason)}"


def queue_text(job: _Queued) -> str:
    """``team-a, priority high``: the queue and class a job was submitted with."""
    said = [job.queue] if job.queue else []
    return ", ".join([*said, *([f"priority {job.priority}"] if job.priority else [])])


def job_html(job: ShownJob) -> str:
    """Id, status with its reason (where it waits in its queue), why it failed, its queue and
    class, accelerator, and the commands that show its logs."""
    record = job.record
    cause = ""
    try:
        state = job.status_detail()
        status = badge(state.describe(), state.status.value)
        failure = failure_of(job, state)
        cause = row("cause", cause_badge(failure)) if failure is not None else ""
    except KineticError as error:
        status = f"<i>status unavailable: {escape(str(error))}</i>"
    rows = [
        row("job", code(record.job_id)),
        row("status", status),
        *([cause] if cause else []),
        row("function", escape(record.func_name)),
        *([row("queue", escape(queue_text(record)))] if record.queue or record.priority else []),
        row("accelerator", escape(f"{record.accelerator} on {record.backend}")),
        row("created", escape(record.created_at)),
        row("logs", code(f"kinetic jobs logs {record.job_id} --follow")),
    ]
    return f'<div style="{STYLE}"><table>{"".join(rows)}</table></div>'
