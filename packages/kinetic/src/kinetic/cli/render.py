"""Output for people and for scripts.

On a terminal, tables are drawn with rich; anywhere else (a pipe, a file, CI) they degrade to
plain space-aligned columns with no ANSI codes, so ``grep``/``awk`` work. ``--json`` output is
always exactly one JSON document on stdout.

Text read from the store (logs, error messages, descriptions) was written by whoever can write
the store, so human output passes it through :func:`printable` (``echo`` does): raw escape
sequences could clear the screen, retitle the window or plant hyperlinks. JSON escapes them.
"""

import json
import math
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from kinetic._log import printable

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "console",
    "echo",
    "emit_json",
    "format_value",
    "is_terminal",
    "jsonable",
    "key_values",
    "printable",
    "table",
]

_STATUS_STYLES = {
    "SUCCEEDED": "green",
    "FAILED": "red",
    "RUNNING": "cyan",
    "PENDING": "yellow",
    "NOT_FOUND": "dim",
}


def console() -> "Console":
    """A rich console on the current stdout (made per call: tests swap stdout)."""
    from rich.console import Console

    return Console(file=sys.stdout, highlight=False, soft_wrap=False)


def is_terminal() -> bool:
    """Whether stdout takes live redraws and colour (rich's detection, env overrides included)."""
    return console().is_terminal


def echo(
    text: str = "", *, err: bool = False, nl: bool = True, bold: bool = False, fg: str = ""
) -> None:
    """``click.echo`` of :func:`printable` text, bold or coloured if asked."""
    shown = printable(text)
    if bold or fg:
        shown = click.style(shown, bold=bold, fg=fg or None)
    click.echo(shown, err=err, nl=nl)


def emit_json(document: Any) -> None:
    """Write ``document`` as the one JSON document of this command."""
    click.echo(json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False))


def jsonable(value: Any) -> bool:
    """True if ``value`` survives strict JSON unchanged in meaning (no NaN, str keys only)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return not _has_lossy(value)


def _has_lossy(value: Any) -> bool:
    if isinstance(value, tuple):
        return True  # would come back as a list
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(not isinstance(k, str) or _has_lossy(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lossy(v) for v in value)
    return False


def format_value(value: Any, *, compact: bool = False) -> str:
    """A result for people: strings as they are, JSON-able values as JSON, others as repr."""
    if isinstance(value, str):
        return value
    if jsonable(value):
        return json.dumps(value, ensure_ascii=False) if compact else json.dumps(value, indent=2)
    return repr(value)


def _styled(text: str, *, status: bool = True) -> str:
    """Rich markup for ``text``: escaped, and coloured when it starts with a job status."""
    from rich.markup import escape

    style = _STATUS_STYLES.get(text.split(" ", 1)[0]) if status else None
    shown = escape(printable(text))
    return f"[{style}]{shown}[/{style}]" if style else shown


def size(count: int) -> str:
    """A byte count for people: ``512 B``, ``3.2 KiB``, ``1.5 MiB``, ``2.0 GiB``."""
    if count >= 2**30:
        return f"{count / 2**30:.1f} GiB"
    if count >= 2**20:
        return f"{count / 2**20:.1f} MiB"
    return f"{count / 1024:.1f} KiB" if count >= 1024 else f"{count} B"


def table(
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    title: str | None = None,
    empty: str = "Nothing to show.",
    status_column: int | None = None,
) -> None:
    """Rows under a header: a rich table on a terminal, aligned plain text elsewhere.

    ``empty`` goes to stderr when there are no rows, so stdout stays empty for scripts.
    """
    if not rows:
        click.echo(empty, err=True)
        return
    out = console()
    if out.is_terminal:
        from rich.table import Table

        grid = Table(title=title, title_justify="left", header_style="bold")
        for column in columns:
            grid.add_column(column, overflow="fold")
        for row in rows:
            grid.add_row(*(_styled(c, status=i == status_column) for i, c in enumerate(row)))
        out.print(grid)
        return
    if title:
        echo(title)
    rows = [[printable(cell) for cell in row] for row in rows]
    widths = [max(len(str(c)), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    lines = [columns, *rows]
    for line in lines:
        cells = [cell.ljust(width) for cell, width in zip(line, widths, strict=True)]
        echo("  ".join(cells).rstrip())


def key_values(pairs: Mapping[str, str]) -> None:
    """``key: value`` lines, aligned; bold keys and coloured statuses on a terminal."""
    width = max((len(k) for k in pairs), default=0) + 1
    out = console()
    if out.is_terminal:
        for key, value in pairs.items():
            label = _styled(f"{key + ':':<{width}}", status=False)
            out.print(f"[bold]{label}[/bold] {_styled(value, status=key == 'Status')}")
        return
    for key, value in pairs.items():
        echo(f"{key + ':':<{width}} {value}".rstrip())
