"""``kinetic jobs``: every JobHandle operation of the "Python and CLI side by side" table.

====================  ===========================================
Python                CLI
====================  ===========================================
kinetic.attach(id)    (every command below takes the job id)
kinetic.list_jobs()   kinetic jobs list
job.status()          kinetic jobs status ID
job.tail(n=N)         kinetic jobs logs ID --tail N
job.logs(follow=True) kinetic jobs logs ID --follow
job.result()          kinetic jobs result ID [--timeout S] [--no-cleanup]
job.cancel()          kinetic jobs cancel ID
job.cleanup(...)      kinetic jobs cleanup ID [--no-k8s] [--no-gcs]
job.debug_attach()    kinetic jobs debug ID [--port N] [--working-dir DIR]
job.list_outputs()    kinetic jobs outputs ID
job.download_outputs  kinetic jobs outputs ID --download DIR [--overwrite]
====================  ===========================================
"""

import contextlib
import subprocess
from typing import TYPE_CHECKING, Any

import click

from kinetic.cli import render
from kinetic.cli.context import CliContext, pass_cli
from kinetic.cli.errors import TimedOut
from kinetic.cli.params import GivenPath, Seconds
from kinetic_protocol import HostSelection, JobNotFoundError, KineticError
from kinetic_protocol.capacity import record_capacity

if TYPE_CHECKING:
    from kinetic.jobs import JobHandle
    from kinetic_protocol import AttemptFailure, JobState

__all__ = ["jobs"]

JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")


@click.group()
def jobs() -> None:
    """Observe, collect, cancel and clean up detached jobs."""


def _job_document(
    job: "JobHandle", state: "JobState | None", failure: "AttemptFailure | None" = None
) -> dict[str, Any]:
    """The handle's fields (``queue`` and ``priority`` among them), its state
    (``preemptions``: runs started again after a preemption; ``queue_place``: where it waits
    in its queue, ``QueuePlace``'s fields; ``placement``: the accelerator and capacity it was
    given, ``Placement``'s fields), and (once it ended without a value) its ``failure``:
    ``{"cause", "reason", "attempt", "phase", "exit_code"}``."""
    document = job.to_dict()
    if state is not None:
        from kinetic.cli.batch_views import place_document, placement_document
        from kinetic.failure import failure_document

        document.update(
            status=state.status.value,
            status_detail=state.detail,
            exit_code=state.exit_code,
            description=state.describe(),
            preemptions=state.preemptions,
            queue_place=place_document(state),
            placement=placement_document(state),
            failure=failure_document(failure),
        )
    return document


def _accelerator(job: "JobHandle") -> str:
    """``gpu-h100-x8 (nodes=4)``: the accelerator with the job's shape where it spans
    several nodes or slices; ``gpu-h100-x8 or gpu-a100-80gb-x8`` for a list of them."""
    from kinetic_protocol.host_groups import shape_label

    named = " or ".join([job.accelerator, *job.record.fallback_accelerators])
    shape = shape_label(job.record.nodes, job.record.slices)
    return f"{named} ({shape})" if shape else named


def _failure(job: "JobHandle", state: "JobState") -> "AttemptFailure | None":
    from kinetic.failure import failure_of

    return failure_of(job, state)


@jobs.command("list")
@JSON_OPTION
@pass_cli
def list_(cli: CliContext, as_json: bool) -> None:
    """List the jobs the backend still holds, with their status."""
    found = sorted(cli.list_jobs(), key=lambda job: (job.created_at, job.job_id), reverse=True)
    from kinetic.jobs import job_states

    current = job_states(found)
    states = [(job, current[job.job_id]) for job in found]
    failures = {job.job_id: _failure(job, state) for job, state in states}
    if as_json:
        render.emit_json([_job_document(job, state, failures[job.job_id]) for job, state in states])
        return
    rows = [
        [
            job.job_id,
            job.func_name,
            _accelerator(job),
            state.describe(),
            failure.cause.value if (failure := failures[job.job_id]) else "",
            job.created_at,
            f"{job.group_id}[{job.group_index}]" if job.group_id else "",
        ]
        for job, state in states
    ]
    render.table(
        ["JOB ID", "FUNCTION", "ACCELERATOR", "STATUS", "CAUSE", "CREATED", "BATCH"],
        rows,
        empty="No jobs found.",
        status_column=3,
    )


@jobs.command()
@click.argument("job_id")
@JSON_OPTION
@pass_cli
def status(cli: CliContext, job_id: str, as_json: bool) -> None:
    """Show the status of JOB_ID and its reason.

    Exits 0 whatever the status is: the read worked.
    """
    from kinetic.cli.batch_views import usage_document

    job = cli.attach(job_id)
    state = job.status_detail()
    failure = _failure(job, state)
    usage = job.usage()
    if as_json:
        render.emit_json(_job_document(job, state, failure) | {"usage": usage_document(usage)})
        return
    pairs = {
        "Job": job.job_id,
        "Status": state.describe(),
        "Function": job.func_name,
        "Accelerator": _accelerator(job),
        "Backend": job.backend,
        "Created": job.created_at,
    }
    if job.group_id:
        pairs["Batch"] = f"{job.group_id} (input {job.group_index})"
    if job.queue or job.priority:
        from kinetic.display import queue_text

        pairs["Queue"] = queue_text(job)
    kinds = record_capacity(job.record)
    if kinds != ("on-demand",):
        pairs["Capacity"] = ", then ".join(kinds)
    if state.placement is not None:
        pairs["Placed"] = state.placement.describe()
    if usage is not None:
        pairs["Used"] = usage.describe()
    if state.preemptions:
        pairs["Preempted"] = f"{state.preemptions} time(s), run again each time"
    if failure is not None:
        phase = f", phase {failure.phase}" if failure.phase else ""
        pairs["Cause"] = f"{failure.cause.value} (attempt {failure.attempt}{phase})"
        pairs["Reason"] = failure.reason
    render.key_values(pairs)


@jobs.command()
@click.argument("job_id")
@click.option("--follow", "-f", is_flag=True, help="Stream the output until the job ends.")
@click.option("--tail", "-n", type=click.IntRange(min=0), help="Only the last N lines.")
@click.option(
    "--host",
    type=click.IntRange(min=0),
    help="Multi-host job: host N's output (0: the leader).",
)
@click.option(
    "--all-hosts",
    is_flag=True,
    help="Multi-host job: every host's output, prefixed.",
)
@JSON_OPTION
@pass_cli
def logs(
    cli: CliContext,
    job_id: str,
    follow: bool,
    tail: int | None,
    host: int | None,
    all_hosts: bool,
    as_json: bool,
) -> None:
    """Print the output of JOB_ID (stdout and stderr of the job; on a multi-host job the
    leader's, or that of the host whose failure ended it, unless --host or --all-hosts)."""
    if follow and (tail is not None or as_json):
        raise click.UsageError(
            "--follow streams the output; it cannot be combined with --tail or --json."
        )
    if host is not None and all_hosts:
        raise click.UsageError("--host and --all-hosts each choose whose output; give one.")
    selection: HostSelection = "all" if all_hosts else host
    try:
        job = cli.attach(job_id)
    except KineticError as exc:
        if follow:
            raise
        # Out of reach (no cluster credentials, no signing key): the output the job kept in
        # the store needs neither.
        kept = cli.stored_output(job_id, tail=tail, host=selection)
        if kept is None:
            raise
        render.echo(f"Showing the output job {job_id} kept in the store ({exc})", err=True)
        if as_json:
            render.emit_json({"job_id": job_id, "logs": kept})
        else:
            render.echo(kept, nl=not kept.endswith("\n"))
        return
    if follow:  # shown as every other store text is (the kept output, once the pod is gone)
        for line in job.follow_lines(host=selection):
            render.echo(line, nl=False)
        return
    text = job.tail(tail, host=selection) if tail is not None else (job.logs(host=selection) or "")
    if as_json:
        render.emit_json({"job_id": job.job_id, "logs": text})
    elif text:
        render.echo(text, nl=not text.endswith("\n"))
    else:
        render.echo(f"Job {job.job_id} has no output (yet).", err=True)


@jobs.command()
@click.argument("job_id")
@click.option("--timeout", type=Seconds(), help="Give up after S seconds (exit 3).")
@click.option(
    "--cleanup/--no-cleanup",
    default=None,
    help="Delete the job's resource and artifacts after a successful collection. "
    "[default: cleanup, except for debug jobs]",
)
@JSON_OPTION
@pass_cli
def result(
    cli: CliContext, job_id: str, timeout: float | None, cleanup: bool | None, as_json: bool
) -> None:
    """Wait for JOB_ID and print its return value.

    A failed job prints the remote exception and the tail of its traceback, and exits 1.
    Values that JSON cannot hold print as their repr.
    """
    job = cli.attach(job_id)
    try:
        value = job.result(timeout=timeout, cleanup=cleanup)
    except TimeoutError:
        # The handle's advice names Python calls; in a shell, name the commands.
        raise TimedOut(
            f"Job {job.job_id} is still {job.status().value} after {timeout:g}s; it keeps running.",
            f"Wait again:  kinetic jobs result {job.job_id}\n"
            f"Its output:  kinetic jobs logs {job.job_id} --tail 100\n"
            f"Stop it:     kinetic jobs cancel {job.job_id}",
        ) from None
    if as_json:
        ok = render.jsonable(value)
        render.emit_json(
            {"job_id": job.job_id, "value": value if ok else None}
            | ({} if ok else {"repr": repr(value)})
        )
        return
    render.echo(render.format_value(value))


@jobs.command()
@click.argument("job_id")
@pass_cli
def cancel(cli: CliContext, job_id: str) -> None:
    """Stop JOB_ID and delete its backend resource.

    Stored artifacts are kept; `kinetic jobs cleanup` removes them.
    """
    job = cli.attach(job_id)
    job.cancel()
    render.echo(
        f"Cancelled {job.job_id}. Its stored artifacts are kept; remove them with "
        f"`kinetic jobs cleanup {job.job_id}`."
    )


@jobs.command()
@click.argument("job_id")
@click.option("--k8s/--no-k8s", default=True, help="Delete the backend resource (Job/pod).")
@click.option("--gcs/--no-gcs", default=True, help="Delete the stored artifacts.")
@pass_cli
def cleanup(cli: CliContext, job_id: str, k8s: bool, gcs: bool) -> None:
    """Delete what JOB_ID left behind.

    Files written under KINETIC_OUTPUT_DIR are always kept.
    """
    if not (k8s or gcs):
        raise click.UsageError("--no-k8s together with --no-gcs leaves nothing to clean up.")
    from kinetic.handle import JobHandle
    from kinetic.jobs import record_for_cleanup

    cli.job_id = job_id
    record = record_for_cleanup(job_id, cli.project, cli.cluster, backend=cli.backend)
    job = JobHandle.from_record(record)
    job.cleanup(k8s=k8s, gcs=gcs)
    removed = " and ".join(
        what for what, on in (("backend resource", k8s), ("stored artifacts", gcs)) if on
    )
    render.echo(f"Cleaned up {job.job_id}: removed its {removed}.")


@jobs.command()
@click.argument("job_id")
@click.option(
    "--download",
    "directory",
    type=GivenPath(file_okay=False, path_type=str),
    help="Copy every output file into DIR, keeping their paths.",
)
@click.option("--overwrite", is_flag=True, help="With --download: replace files already in DIR.")
@JSON_OPTION
@pass_cli
def outputs(
    cli: CliContext, job_id: str, directory: str | None, overwrite: bool, as_json: bool
) -> None:
    """List the files JOB_ID wrote to its output directory (KINETIC_OUTPUT_DIR), or download
    them with --download DIR. Outputs are kept after the job is cleaned up."""
    if overwrite and directory is None:
        raise click.UsageError("--overwrite only applies with --download DIR.")
    found = cli.job_outputs(job_id)
    if not found.recorded and not found.files():
        # Nothing to tell an unknown id from a cleaned-up job without outputs: both fail.
        raise JobNotFoundError(
            f"No job {job_id!r} in {found.store_uri}, and no outputs at {found.location}. "
            "Check the id with `kinetic jobs list`; a job cleaned up without writing outputs "
            "leaves none behind."
        )
    if directory is not None:
        written = found.download(directory, overwrite=overwrite)
        if as_json:
            render.emit_json({"job_id": job_id, "downloaded": [str(p) for p in written]})
        else:
            render.echo(f"Downloaded {len(written)} file(s) of {job_id} to {directory}.")
        return
    files = found.files()
    if as_json:
        render.emit_json(
            {
                "job_id": job_id,
                "output_dir": found.location,
                "files": [{"name": f.name, "size": f.size} for f in files],
            }
        )
        return
    render.echo(f"Outputs of {job_id} in {found.location}:", err=True)
    render.table(
        ["FILE", "SIZE"],
        [[f.name, render.size(f.size)] for f in files],
        empty="No outputs (yet).",
    )


@jobs.command()
@click.argument("job_id")
@click.option(
    "--port",
    type=click.IntRange(min=1, max=65535),
    default=5678,
    show_default=True,
    help="Local port to forward the job's debug server to.",
)
@click.option(
    "--working-dir",
    help="Local source root the debugger maps to the job's files. [default: the project root]",
)
@click.option(
    "--timeout",
    type=Seconds(),
    default=900,
    show_default=True,
    help="Seconds to wait for the job's debug server (exit 3 past it).",
)
@pass_cli
def debug(
    cli: CliContext, job_id: str, port: int, working_dir: str | None, timeout: float | None
) -> None:
    """Attach a debugger to the debug=True job JOB_ID.

    Waits for its debug server, forwards PORT to it where the backend needs that, prints the
    VS Code launch.json configuration, and keeps the forward open until the job ends or
    Ctrl-C.
    """
    from kinetic.debug import cleanup_port_forward

    job = cli.attach(job_id)
    proc = job.debug_attach(local_port=port, working_dir=working_dir, timeout=timeout)
    render.echo("Waiting until the job ends; Ctrl-C stops forwarding.", err=True)
    try:
        while proc.poll() is None:
            state = job.status_detail()
            if state.status.is_terminal:
                render.echo(f"Job {job.job_id} ended {state.describe()}.", err=True)
                return
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1.0)
        raise click.ClickException(
            f"Forwarding to job {job.job_id} stopped (exit {proc.returncode}). "
            f"Run `kinetic jobs debug {job.job_id}` again to reconnect."
        )
    except KeyboardInterrupt:
        render.echo("Stopped forwarding.", err=True)
    finally:
        cleanup_port_forward(proc)
