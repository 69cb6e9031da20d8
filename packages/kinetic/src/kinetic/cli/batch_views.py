"""``kinetic batch timeline``, ``logs`` and ``failures``: a batch as one picture, as one stream
of output, and as the inputs that failed (registered on the ``kinetic batch`` group), with the
pieces of a batch's documents the other batch commands share (its header, where its inputs
wait in queues)."""

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kinetic.cli import render
from kinetic.cli.context import CliContext, pass_cli
from kinetic.cli.out_files import check_out
from kinetic.cli.params import GivenPath

if TYPE_CHECKING:
    from kinetic.batch import BatchHandle
    from kinetic.handle import JobHandle
    from kinetic.usage import Usage
    from kinetic_protocol import JobState

__all__ = [
    "JSON_OPTION",
    "batch_header",
    "cleaned_up",
    "error_document",
    "failures",
    "logs",
    "place_document",
    "placed_table",
    "placement_document",
    "queued_table",
    "timeline",
    "usage_document",
]

JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


def batch_header(handle: "BatchHandle") -> dict[str, Any]:
    return {"group_id": handle.group_id, "name": handle.name, "tags": dict(handle.tags)}


def place_document(state: "JobState | None") -> dict[str, Any] | None:
    """Where a job waits in a queue, as data (``QueuePlace``'s fields); None if it does not."""
    import msgspec

    if state is None or state.queue is None:
        return None
    document: dict[str, Any] = msgspec.to_builtins(state.queue)
    return document


def usage_document(usage: "Usage | None") -> dict[str, Any] | None:
    """``{"unit_hours", "unit", "list_cost_usd", "prices": {"region", "as_of", "source"}}``;
    None where nothing billed ran."""
    if usage is None:
        return None
    table = usage.prices
    return {
        "unit_hours": usage.unit_hours,
        "unit": usage.unit,
        "list_cost_usd": usage.list_cost,
        "prices": {"region": table.region, "as_of": str(table.as_of), "source": table.source},
    }


def placement_document(state: "JobState | None") -> dict[str, Any] | None:
    """The accelerator and capacity a job was given, as data (``Placement``'s fields); None
    where its backend does not say."""
    import msgspec

    if state is None or state.placement is None:
        return None
    document: dict[str, Any] = msgspec.to_builtins(state.placement)
    return document


def placed_table(states: "dict[int, JobState]") -> None:
    """Which inputs run (or ran) where: one row per accelerator and capacity given."""
    by_place: dict[str, list[int]] = {}
    for index, state in sorted(states.items()):
        if state.placement is not None:
            place = f"{state.placement.accelerator} ({state.placement.capacity})"
            by_place.setdefault(place, []).append(index)
    if by_place:
        render.table(
            ["PLACED ON", "COUNT", "INPUTS"],
            [[place, str(len(found)), _indexes(found)] for place, found in by_place.items()],
        )


def _indexes(found: list[int], most: int = 20) -> str:
    shown = ", ".join(str(index) for index in found[:most])
    return shown + (f" and {len(found) - most} more" if len(found) > most else "")


def queued_table(handle: "BatchHandle", states: "dict[int, JobState]") -> None:
    """Each input that waits in a queue, the nearest the front first, with its place."""
    from kinetic.batch.queued import queued_places

    jobs = handle.jobs
    render.table(
        ["INPUT", "JOB ID", "PLACE"],
        [
            [str(i), job.job_id if (job := jobs[i]) else "", place.describe()]
            for i, place in queued_places(states)
        ],
        empty="No input waits in a queue.",
    )


def cleaned_up(state: "JobState") -> bool:
    from kinetic.bookkeeping.kept import is_cleaned_up

    return is_cleaned_up(state)


def error_document(exc: BaseException) -> dict[str, str]:
    return {
        "type": getattr(exc, "exc_type", None) or type(exc).__name__,
        "message": getattr(exc, "message", None) or str(exc),
    }


@click.command()
@click.argument("group_id")
@click.option(
    "--out",
    "out",
    required=True,
    type=GivenPath(dir_okay=False, path_type=Path),
    help="File to write: .html (interactive, self-contained), .svg or .png.",
)
@pass_cli
def timeline(cli: CliContext, group_id: str, out: Path) -> None:
    """Draw GROUP_ID's timeline: one row per input, one bar per attempt.

    Each bar runs from submission (pale: waiting) through its run (coloured by outcome:
    succeeded, failed, failed then retried, cancelled, running); an x marks an input whose
    submission failed. The HTML file shows each attempt's job id, reason and durations on
    hover. Needs the plot extra: pip install 'kinetic[plot]'; .svg and .png also need a
    Chrome or Chromium on this machine.
    """
    from kinetic.batch.timeline_plot import check_output

    check_output(out)
    check_out(out, "a timeline")
    drawn = cli.attach_batch(group_id).timeline()
    written = drawn.write(out)
    render.echo(f"{drawn.summary().describe()}")
    render.echo(f"Wrote {written}")


@click.command()
@click.argument("group_id")
@click.option(
    "--follow", "-f", is_flag=True, help="Keep printing as children write, until the batch ends."
)
@click.option("--failed", is_flag=True, help="Only attempts that failed (retried ones included).")
@click.option("--tail", type=click.IntRange(min=0), help="Only the last N lines of each child.")
@pass_cli
def logs(cli: CliContext, group_id: str, follow: bool, failed: bool, tail: int | None) -> None:
    """Print the output of every child of GROUP_ID as one stream.

    Each line starts with its input: [3] for input 3, [3 r1] for its first retry, [3 host 1]
    for host 1 of a multi-host child. --follow starts on each child as it starts running and
    ends when the batch has; with --failed it prints each failed attempt as it fails.
    """
    from kinetic.batch.logs import check_options

    check_options(follow=follow, failed=failed, tail=tail)
    handle = cli.attach_batch(group_id, follow=follow)
    for line in handle.log_lines(follow=follow, failed=failed, tail=tail):
        render.echo(line, nl=False)


@click.command()
@click.argument("group_id")
@click.option(
    "--tail",
    "-n",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Log lines to show per failed job.",
)
@JSON_OPTION
@pass_cli
def failures(cli: CliContext, group_id: str, tail: int, as_json: bool) -> None:
    """Show each failed input of GROUP_ID with the tail of its logs.

    A failed input that ``results(cleanup=True)`` collected and cleaned up still shows its
    cause and last lines (the batch kept them). Other inputs collected and cleaned up are not
    failures; they are named as such, since their logs are gone.
    """
    handle = cli.attach_batch(group_id)
    entries, cleaned = _failure_entries(handle, tail)
    if as_json:
        render.emit_json(batch_header(handle) | {"failures": entries, "cleaned_up": cleaned})
        return
    for gone in cleaned:
        render.echo(
            f"[{gone['index']}] {gone['job_id']}  {gone['description']}: not a failure; "
            "its result and logs are no longer stored."
        )
    if not entries:
        render.echo(f"No failed inputs in batch {group_id}.", err=True)
        return
    styled = render.is_terminal()
    for entry in entries:
        _show_failure(entry, styled)


def _failure_entries(
    handle: "BatchHandle", tail: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every input whose outcome ``results()`` raises, as ``batch failures --json`` lists it;
    and the inputs collected and cleaned up that are no failure."""
    from kinetic.failure import failure_document, failure_of
    from kinetic_protocol import JobStatus

    entries: list[dict[str, Any]] = []
    jobs = handle.jobs
    failed = handle.failures()
    failed_indices = {job.group_index for job in failed}
    states = handle.states()
    cleaned: list[dict[str, Any]] = [
        {
            "index": index,
            "job_id": job.job_id if (job := jobs[index]) else None,
            "status": state.status.value,
            "description": state.describe(),
        }
        for index, state in states
        if cleaned_up(state) and index not in failed_indices
    ]
    for job in failed:
        state = job.status_detail()
        failure = failure_of(job, state)
        logs, note = _last_lines(job, tail)
        entries.append(
            {
                "index": job.group_index,
                "job_id": job.job_id,
                "status": state.status.value,
                "description": state.describe(),
                "cause": failure.cause.value if failure else None,
                "failure": failure_document(failure),
                "logs": logs,
                "note": note,
                "cleaned_up": cleaned_up(state),
            }
        )
    for index, state in states:
        # Gone without a result and without a word of why (its failure summary deleted or
        # changed, say): results() raises for it, so it is listed too.
        job = jobs[index]
        if job is None or index in failed_indices or state.status is not JobStatus.NOT_FOUND:
            continue
        if cleaned_up(state) or failure_of(job, state) is not None:
            continue
        entries.append(
            {
                "index": index,
                "job_id": job.job_id,
                "status": state.status.value,
                "description": state.describe(),
                "cause": None,
                "failure": None,
                "logs": "",
                "note": f"gone without a result, and {_NO_SUMMARY}",
                "cleaned_up": False,
            }
        )
    for index, exc in sorted(handle.submission_failures.items()):
        entries.append(
            {
                "index": index,
                "job_id": None,
                "status": "SUBMISSION_FAILED",
                "description": "could not be submitted",
                "cause": None,
                "failure": None,
                "error": error_document(exc),
                "logs": "",
                "note": "",
                "cleaned_up": False,
            }
        )
    entries.sort(key=lambda e: (e["index"] is None, e["index"] or 0))
    return entries, cleaned


def _show_failure(entry: dict[str, Any], styled: bool) -> None:
    cause = f"  cause: {entry['cause']}" if entry["cause"] else ""
    title = (
        f"[{entry['index']}] {entry['job_id'] or '(not submitted)'}  {entry['description']}{cause}"
    )
    if entry["failure"] and entry["failure"]["reason"] not in entry["description"]:
        title += f" ({entry['failure']['reason']})"
    render.echo(title, bold=styled, fg="red" if styled else "")
    if "error" in entry:
        render.echo("    {type}: {message}".format(**entry["error"]))
    for line in entry["logs"].rstrip("\n").splitlines():
        render.echo(f"    {line}")
    if entry["note"]:
        render.echo(f"    ({entry['note']})")
    elif entry.get("cleaned_up"):
        render.echo("    (its last lines, kept with the batch: the child was cleaned up)")
    elif entry["job_id"]:
        render.echo(f"    (full output: kinetic jobs logs {entry['job_id']})")


_NO_SUMMARY = "no failure summary kept with the batch verifies for it (deleted or changed)"


def _last_lines(job: "JobHandle", tail: int) -> tuple[str, str]:
    """A failed child's last ``tail`` lines, and a note when they are gone: a collected
    child's lines live only in the failure summary its batch kept."""
    from kinetic_protocol import JobNotFoundError

    if not tail:
        return "", ""
    try:
        return job.tail(tail), ""
    except JobNotFoundError:
        return "", f"its last lines are gone: {_NO_SUMMARY}"
