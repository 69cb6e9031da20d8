"""``kinetic batch``: observe, collect, cancel and clean up the batches of ``run_async_map``.

A batch is named by its group id (``grp-...``); every command reattaches to it from storage,
so it works from any shell on any machine with access to the same project.
"""

import collections
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kinetic.cli import render
from kinetic.cli.batch_views import (
    JSON_OPTION,
    batch_header,
    cleaned_up,
    error_document,
    failures,
    logs,
    place_document,
    placed_table,
    placement_document,
    queued_table,
    timeline,
    usage_document,
)
from kinetic.cli.context import CliContext, pass_cli
from kinetic.cli.errors import Failed, TimedOut
from kinetic.cli.out_files import check_out, write_out
from kinetic.cli.params import GivenPath, Seconds

if TYPE_CHECKING:
    pass

__all__ = ["batch"]

USAGE_READ_LIMIT = 1000
"""Inputs up to which ``batch status`` reads what every attempt used unless told not to."""
TIMEOUT_OPTION = click.option("--timeout", type=Seconds(), help="Give up after S seconds (exit 3).")


@click.group()
def batch() -> None:
    """Observe, collect, cancel and clean up batches."""


batch.add_command(timeline)
batch.add_command(logs)
batch.add_command(failures)


@batch.command("list")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Show at most N batches, newest first (0: all).",
)
@JSON_OPTION
@pass_cli
def list_(cli: CliContext, limit: int, as_json: bool) -> None:
    """List recent batches from storage.

    Finished batches are listed too, until they are cleaned up.
    """
    summaries = cli.list_batches()
    summaries = sorted(summaries, key=lambda s: (s.created_at, s.group_id), reverse=True)
    if limit:
        summaries = summaries[:limit]
    if as_json:
        render.emit_json(
            [
                {
                    "group_id": s.group_id,
                    "name": s.name,
                    "func_name": s.func_name,
                    "total_expected": s.total_expected,
                    "created_at": s.created_at,
                    "tags": dict(s.tags),
                }
                for s in summaries
            ]
        )
        return
    rows = [
        [
            s.group_id,
            s.name or "",
            s.func_name,
            str(s.total_expected),
            s.created_at,
            ",".join(f"{k}={v}" for k, v in sorted(s.tags.items())),
        ]
        for s in summaries
    ]
    render.table(
        ["GROUP ID", "NAME", "FUNCTION", "INPUTS", "CREATED", "TAGS"],
        rows,
        empty="No batches found.",
    )


@batch.command()
@click.argument("group_id")
@click.option(
    "--queued",
    "list_queued",
    is_flag=True,
    help="Also list each input that waits in a queue, with its place.",
)
@click.option(
    "--usage/--no-usage",
    "with_usage",
    default=None,
    help=f"Read the accelerator time every attempt used and its list cost (default: for "
    f"batches of at most {USAGE_READ_LIMIT:,} inputs; it reads each attempt's times).",
)
@JSON_OPTION
@pass_cli
def status(
    cli: CliContext, group_id: str, list_queued: bool, with_usage: bool | None, as_json: bool
) -> None:
    """Count the inputs of GROUP_ID by state, and show what its attempts used.

    Exits 0 whatever the states are: the read worked. Inputs whose results were already
    collected and cleaned up (``results(cleanup=True)``) are NOT_FOUND, counted apart. Inputs
    waiting in a queue are summed up in one line: how many, and the place of the first.
    """
    from kinetic.batch.progress import tally
    from kinetic.batch.queued import queued_children

    handle = cli.attach_batch(group_id)
    counts, per_input, states = tally(handle)
    queued = queued_children(states)
    if with_usage is None:
        with_usage = counts.total <= USAGE_READ_LIMIT
    usage = handle.usage() if with_usage else None
    cleaned = sum(1 for state in states.values() if cleaned_up(state))
    failures = handle.child_failures()
    causes = dict(collections.Counter(failure.cause.value for failure in failures.values()))
    if as_json:
        jobs = handle.jobs
        render.emit_json(
            batch_header(handle)
            | {
                "submission": handle.submission_status().state,
                "counts": counts.as_dict() | {"cleaned_up": cleaned},
                "causes": causes,
                "queued": queued.as_dict() if queued else None,
                "usage": usage_document(usage),
                "jobs": [
                    {
                        "index": i,
                        "job_id": job.job_id if job else None,
                        "status": status,
                        "description": states[i].describe() if i in states else status,
                        "cause": failures[i].cause.value if i in failures else None,
                        "queue_place": place_document(states.get(i)),
                        "placement": placement_document(states.get(i)),
                    }
                    for (i, status), job in zip(per_input, jobs, strict=True)
                ],
            }
        )
        return
    submission = handle.submission_status()
    pairs = {"Batch": handle.group_id + (f" ({handle.name})" if handle.name else "")}
    pairs["Inputs"] = str(counts.total)
    pairs["Submission"] = submission.describe(
        handle.group_id, counts.total - counts.unsubmitted, counts.total
    )
    if queued is not None:
        pairs["Queued"] = queued.describe()
    if usage is not None:
        pairs["Used"] = usage.describe()
    elif not with_usage and handle.billed:
        pairs["Used"] = f"not read for {counts.total:,} inputs (--usage reads it)"
    render.key_values(pairs)
    by_state = [
        ("SUCCEEDED", counts.succeeded),
        ("RUNNING", counts.running),
        ("PENDING", counts.pending),
        ("FAILED", counts.failed),
        ("NOT_FOUND (collected and cleaned up)", cleaned),
        ("NOT_FOUND", counts.gone - cleaned),
        ("UNSUBMITTED", counts.unsubmitted),
    ]
    render.table(
        ["STATE", "COUNT"],
        [[state, str(n)] for state, n in by_state if n],
        empty="The batch has no inputs.",
        status_column=0,
    )
    if causes:
        render.table(["CAUSE", "COUNT"], [[cause, str(n)] for cause, n in sorted(causes.items())])
    placed_table(states)
    if list_queued:
        queued_table(handle, states)


@batch.command()
@click.argument("group_id")
@click.option(
    "--interval",
    type=Seconds(0.05, unlimited=False),
    default=1.0,
    show_default=True,
    help="Longest wait between refreshes, in seconds.",
)
@TIMEOUT_OPTION
@JSON_OPTION
@pass_cli
def watch(
    cli: CliContext, group_id: str, interval: float, timeout: float | None, as_json: bool
) -> None:
    """Show live progress of GROUP_ID until it ends.

    Exits 1 if any input failed or was never submitted.
    On a terminal this is a progress bar; otherwise one plain line per change. With --json,
    nothing is shown until the end, then the final counts.
    """
    from kinetic.batch.progress import WatchDisplay
    from kinetic.batch.watch import follow_counts

    handle = cli.attach_batch(group_id, follow=True)
    display = WatchDisplay(handle.group_id, len(handle.jobs), live=False if as_json else None)
    with display:
        try:
            for counts, _, _ in follow_counts(handle, interval=interval, timeout=timeout):
                if not as_json:
                    display.update(counts)
        except TimeoutError as exc:
            raise _timed_out(group_id, str(exc)) from None
    if as_json:
        render.emit_json(
            batch_header(handle) | {"counts": counts.as_dict(), "elapsed": display.elapsed}
        )
    else:
        display.finish(counts)
    problems = []
    if counts.failed:
        problems.append(
            f"{counts.failed} of {counts.total} inputs of batch {group_id} failed. "
            f"See: kinetic batch failures {group_id}"
        )
    if counts.unsubmitted:
        submitted = counts.total - counts.unsubmitted
        why = handle.submission_status().describe(group_id, submitted, counts.total)
        problems.append(
            f"{counts.unsubmitted} of {counts.total} inputs of batch {group_id} never ran: {why}."
        )
    if problems:
        raise Failed(" ".join(problems))


def _timed_out(group_id: str, message: str) -> TimedOut:
    """A wait that ran out, with what to run next from a shell (not the handle's methods)."""
    return TimedOut(
        message,
        f"Wait again:  kinetic batch results {group_id}\n"
        f"Watch it:    kinetic batch watch {group_id}\n"
        f"Stop it:     kinetic batch cancel {group_id}",
    )


def _result_item(index: int, job_id: str | None, value: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"index": index, "job_id": job_id}
    if isinstance(value, BaseException):
        return item | {"ok": False, "error": error_document(value)}
    if render.jsonable(value):
        return item | {"ok": True, "value": value}
    return item | {"ok": True, "value": None, "repr": repr(value)}


@batch.command()
@click.argument("group_id")
@TIMEOUT_OPTION
@click.option(
    "--cleanup/--no-cleanup",
    default=True,
    show_default=True,
    help="Delete each child's resource and artifacts (failed ones' logs too, keeping their "
    "cause and last lines with the batch) once its outcome is read.",
)
@click.option(
    "--out",
    "out",
    type=GivenPath(dir_okay=False, writable=True, path_type=Path),
    help="Write the results to FILE as JSON instead of printing them.",
)
@JSON_OPTION
@pass_cli
def results(
    cli: CliContext,
    group_id: str,
    *,
    timeout: float | None,
    cleanup: bool,
    out: Path | None,
    as_json: bool,
) -> None:
    """Wait for GROUP_ID and print each input's result.

    Results are in input order.
    Failed inputs show their exception; the command then exits 1. Values that JSON cannot
    hold are shown (and written) as their repr.
    """
    if out is not None:
        check_out(out, "the results")  # before collecting, which cleans children up
    handle = cli.attach_batch(group_id, follow=True)
    try:
        values = handle.results(timeout=timeout, cleanup=cleanup, return_exceptions=True)
    except TimeoutError:
        message = f"Batch {group_id} is not done after {timeout:g}s; its jobs keep running."
        raise _timed_out(group_id, message) from None
    jobs = handle.jobs
    items = [
        _result_item(i, job.job_id if job else None, value)
        for i, (job, value) in enumerate(zip(jobs, values, strict=True))
    ]
    failed = [item for item in items if not item["ok"]]
    document = batch_header(handle) | {"results": items}
    if out is not None:
        text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        again = (
            f"Collected outcomes are kept with the batch: run `kinetic batch results {group_id}` "
            "again with another --out."
        )
        write_out(out, text, "the results", again=again)
    if as_json:
        render.emit_json(document)
    elif out is not None:
        render.echo(f"Wrote {len(items)} results ({len(failed)} failed) to {out}.")
    else:
        rows = [
            [
                str(item["index"]),
                "SUCCEEDED" if item["ok"] else "FAILED",
                render.format_value(value, compact=True)
                if item["ok"]
                else "{type}: {message}".format(**item["error"]),
            ]
            for item, value in zip(items, values, strict=True)
        ]
        render.table(
            ["INPUT", "STATUS", "RESULT"], rows, empty="The batch has no inputs.", status_column=1
        )
    if failed:
        raise Failed(
            f"{len(failed)} of {len(items)} inputs of batch {group_id} failed. "
            f"See: kinetic batch failures {group_id}"
        )


@batch.command()
@click.argument("group_id")
@click.option(
    "--max-cost",
    type=click.FloatRange(min=0, min_open=True),
    help="A new cap on the batch's list cost in USD, for a batch its max_cost stopped.",
)
@pass_cli
def resume(cli: CliContext, group_id: str, max_cost: float | None) -> None:
    """Finish submitting GROUP_ID after the process submitting it died, or after its
    max_cost stopped it (give a higher --max-cost).

    Submits the inputs never submitted, creates children recorded but never started, and
    retries failed ones within the batch's retries; nothing runs twice. This process then
    submits until the batch is done submitting (Ctrl-C stops it; resume again later). Refused
    while the batch's own submitter is alive.
    """
    from kinetic.batch.lease import stopped_on_its_own_error

    handle = cli.attach_batch(group_id)
    render.echo(handle.resume(max_cost=max_cost))
    if handle.submission_status().state != "submitting":
        return
    render.echo(f"Submitting from this process; follow it with: kinetic batch watch {group_id}")
    handle.wait_submitted()
    completion = handle.submission_status().completion
    if completion is not None and completion.cost_capped:
        raise Failed(
            f"Batch {group_id} stopped submitting again: its {completion.cost_capped}. Give "
            f"a higher cap: `kinetic batch resume {group_id} --max-cost USD`."
        )
    if completion is not None and not stopped_on_its_own_error(completion):
        return
    why = completion.error if completion is not None else "its end was not recorded"
    raise Failed(
        f"Resuming batch {group_id} stopped before every input was submitted: {why}. "
        f"Fix the cause, then run `kinetic batch resume {group_id}` again."
    )


@batch.command()
@click.argument("group_id")
@pass_cli
def cancel(cli: CliContext, group_id: str) -> None:
    """Cancel the unfinished jobs of GROUP_ID.

    Stored artifacts are kept for debugging.
    """
    handle = cli.attach_batch(group_id)
    handle.cancel()
    render.echo(
        f"Cancelled the unfinished jobs of batch {group_id}. Artifacts are kept; remove "
        f"everything with `kinetic batch cleanup {group_id}`."
    )


@batch.command()
@click.argument("group_id")
@click.option("--k8s/--no-k8s", default=True, help="Delete each child's backend resource.")
@click.option(
    "--gcs/--no-gcs",
    default=True,
    help="Delete each child's artifacts and the batch's records (it cannot be reattached).",
)
@pass_cli
def cleanup(cli: CliContext, group_id: str, k8s: bool, gcs: bool) -> None:
    """Delete what GROUP_ID left behind."""
    if not (k8s or gcs):
        raise click.UsageError("--no-k8s together with --no-gcs leaves nothing to clean up.")
    from kinetic.batch.cleanup import cleanup_batch

    cleanup_batch(group_id, cli.project, cli.cluster, backend=cli.backend, k8s=k8s, gcs=gcs)
    removed = " and ".join(
        what for what, on in (("backend resources", k8s), ("stored records", gcs)) if on
    )
    render.echo(f"Cleaned up batch {group_id}: removed its {removed}.")
