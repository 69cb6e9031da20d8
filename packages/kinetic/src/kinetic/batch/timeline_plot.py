"""Draws a :class:`~kinetic.batch.timeline.BatchTimeline` with plotly (``kinetic[plot]``).

One row per input, one bar per attempt: a pale bar while it waited (submitted to started), a
bar coloured by its outcome while it ran, and an ``x`` where a submission failed. An attempt
that failed is coloured by its cause (user, oom, preempted, ...), hatched when it was retried.

Hover text is plotly's small HTML dialect (links included), so every string read from the store
(job ids, reasons, error messages, the batch's name) goes through :func:`_text` first.
"""

import html
from datetime import datetime
from pathlib import Path
from typing import Any

from kinetic.batch.timeline import Attempt, BatchTimeline, Outcome
from kinetic_protocol import ConfigError, FailureCause, KineticError

__all__ = [
    "CAUSE_COLOURS",
    "COLOURS",
    "PENDING_TRACE",
    "SUBMISSION_FAILED_TRACE",
    "build_figure",
    "check_output",
    "write_figure",
]

COLOURS = {
    Outcome.SUCCEEDED: "#2e7d32",
    Outcome.FAILED: "#c62828",
    Outcome.RETRIED: "#ef6c00",
    Outcome.CANCELLED: "#6a1b9a",
    Outcome.LOST: "#455a64",
    Outcome.RUNNING: "#1565c0",
    Outcome.PENDING: "#90a4ae",
}
CAUSE_COLOURS = {
    FailureCause.USER: "#c62828",
    FailureCause.EXIT: "#ad1457",
    FailureCause.OOM: "#4e342e",
    FailureCause.PREEMPTED: "#ef6c00",
    FailureCause.UNSCHEDULABLE: "#827717",
    FailureCause.IMAGE: "#00838f",
    FailureCause.TIMEOUT: "#f9a825",
    FailureCause.CANCELLED: "#6a1b9a",
    FailureCause.INFRASTRUCTURE: "#37474f",
}
"""A failed attempt's colour, by cause: every cause its own, so a picture of a batch on spot
capacity shows preemptions apart from the function's own errors."""
_BY_CAUSE = frozenset({Outcome.FAILED, Outcome.RETRIED})
PENDING_TRACE = "waiting (submitted, not started)"
SUBMISSION_FAILED_TRACE = "submission failed"
_FORMATS = (".html", ".svg", ".png")


def _plotly() -> Any:
    try:
        import plotly.graph_objects as go
    except ImportError as exc:
        raise KineticError(
            "Drawing a batch timeline needs plotly, which is not installed: "
            "pip install 'kinetic[plot]'"
        ) from exc
    return go


def _row(index: int) -> str:
    return f"input {index}"


def _ms(start: datetime, end: datetime) -> float:
    return (end - start).total_seconds() * 1000


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}s"


def _text(value: object) -> str:
    """Store text as plain text in plotly's HTML: escaped, on one line."""
    return html.escape(str(value)).replace("\n", " ")


def _hover(item: Attempt) -> str:
    lines = [
        f"<b>input {item.index}, attempt {item.attempt}</b>",
        f"job {_text(item.job_id)}",
        f"{item.outcome.value}" + (f": {_text(item.reason)}" if item.reason else ""),
        *([f"cause: {item.cause.value}"] if item.cause is not None else []),
        *([f"on {_text(item.placement.describe())}"] if item.placement is not None else []),
        f"waited {_seconds(item.pending_seconds)}, ran {_seconds(item.run_seconds)}",
    ]
    return "<br>".join(lines)


def _bars(
    go: Any,
    name: str,
    colour: str,
    spans: list[tuple[Attempt, datetime, datetime]],
    hatched: bool = False,
) -> Any:
    marker: dict[str, Any] = {"color": colour, "line": {"color": "white", "width": 1}}
    if hatched:
        marker["pattern"] = {"shape": "/", "fgcolor": "white", "solidity": 0.3}
    return go.Bar(
        name=name,
        orientation="h",
        y=[_row(item.index) for item, _, _ in spans],
        base=[start.isoformat() for _, start, _ in spans],
        x=[_ms(start, end) for _, start, end in spans],
        customdata=[[item.job_id, item.attempt] for item, _, _ in spans],
        hovertext=[_hover(item) for item, _, _ in spans],
        hovertemplate="%{hovertext}<extra></extra>",
        marker=marker,
    )


def _trace_order(entry: tuple[tuple[Outcome, FailureCause | None], Any]) -> tuple[int, int]:
    (outcome, cause), _ = entry
    return list(Outcome).index(outcome), -1 if cause is None else list(FailureCause).index(cause)


def build_figure(timeline: BatchTimeline) -> Any:
    """The figure: traces are named after :class:`Outcome` values (``failed: preempted``,
    ``failed, retried: user``, ...: failed attempts by cause), :data:`PENDING_TRACE` and
    :data:`SUBMISSION_FAILED_TRACE`."""
    go = _plotly()
    now = timeline.taken_at
    waiting = []
    spans: dict[tuple[Outcome, FailureCause | None], list[tuple[Attempt, datetime, datetime]]]
    spans = {}
    for item in timeline.attempts:
        waited_until = item.started_at or item.finished_at or now
        waiting.append((item, item.submitted_at, waited_until))
        if item.started_at is not None:
            cause = item.cause if item.outcome in _BY_CAUSE else None
            span = (item, item.started_at, item.finished_at or now)
            spans.setdefault((item.outcome, cause), []).append(span)
    traces = [_bars(go, PENDING_TRACE, COLOURS[Outcome.PENDING], waiting)] if waiting else []
    for (outcome, cause), drawn in sorted(spans.items(), key=_trace_order):
        name, colour = outcome.value, COLOURS[outcome]
        if cause is not None:
            name, colour = f"{outcome.value}: {cause.value}", CAUSE_COLOURS[cause]
        traces.append(_bars(go, name, colour, drawn, hatched=outcome is Outcome.RETRIED))
    failures = timeline.submission_failures
    if failures:
        traces.append(
            go.Scatter(
                name=SUBMISSION_FAILED_TRACE,
                mode="markers",
                x=[f.failed_at.isoformat() for f in failures],
                y=[_row(f.index) for f in failures],
                marker={"symbol": "x", "size": 12, "color": COLOURS[Outcome.FAILED]},
                hovertext=[
                    f"<b>input {f.index}</b><br>submission failed<br>"
                    f"{_text(f.exc_type)}: {_text(f.message)}"
                    for f in failures
                ],
                hovertemplate="%{hovertext}<extra></extra>",
            )
        )
    rows = [_row(i) for i in range(timeline.total)]
    name = f" ({_text(timeline.name)})" if timeline.name else ""
    title = f"Batch {_text(timeline.group_id)}{name}"
    figure = go.Figure(data=traces)
    figure.update_layout(
        title={"text": f"{title}<br><sup>{timeline.summary().describe()}</sup>"},
        barmode="overlay",
        xaxis={"type": "date", "title": "time (UTC)"},
        yaxis={"categoryorder": "array", "categoryarray": rows, "autorange": "reversed"},
        height=max(340, 170 + 26 * timeline.total),
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1.0, "xanchor": "right"},
        margin={"t": 110},
        template="plotly_white",
    )
    return figure


def check_output(path: Path) -> str:
    """The format ``path`` names, or a ConfigError before anything is read or drawn: a
    suffix that is not a format, or a directory that does not exist."""
    suffix = path.suffix.lower()
    if suffix not in _FORMATS:
        raise ConfigError(
            f"Cannot write a timeline to {str(path)!r}: the file name must end in "
            f"{', '.join(_FORMATS)} (the suffix picks the format)."
        )
    if not path.parent.is_dir():
        raise ConfigError(
            f"Cannot write a timeline to {str(path)!r}: there is no directory "
            f"{str(path.parent)!r}. Create it first, or choose another path."
        )
    return suffix


def write_figure(timeline: BatchTimeline, path: Path) -> Path:
    """Write the timeline to ``path``; its suffix (``.html``, ``.svg``, ``.png``) is the
    format. A wrong suffix is refused before anything is drawn."""
    suffix = check_output(path)
    figure = build_figure(timeline)
    if suffix == ".html":
        figure.write_html(path, include_plotlyjs=True, full_html=True)
        return path
    _write_image(figure, path)
    return path


def _write_image(figure: Any, path: Path) -> None:
    try:
        from choreographer.errors import ChromeNotFoundError
    except ImportError as exc:
        raise KineticError(
            f"Writing {path.name} needs kaleido, which is not installed: "
            "pip install 'kinetic[plot]' (or write an .html timeline instead)."
        ) from exc
    try:
        figure.write_image(path)
    except (ChromeNotFoundError, RuntimeError) as exc:
        # plotly turns kaleido's ChromeNotFoundError into a RuntimeError of its own (telling
        # users to install Google Chrome), so the browser is looked for down the chain.
        if not _caused_by(exc, ChromeNotFoundError):
            raise
        raise KineticError(
            f"Writing {path.name} needs a Chromium (or Chrome) browser, which was not found "
            "on this machine: .png and .svg timelines are drawn by one. Install it "
            "(Debian/Ubuntu: apt-get install chromium; macOS: brew install --cask chromium; "
            "or run plotly_get_chrome) and set BROWSER_PATH to its executable if it is not on "
            "PATH. An .html timeline needs no browser (write('timeline.html'), or "
            "--out timeline.html from the command line)."
        ) from exc


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
