"""``kinetic batch timeline`` and ``kinetic batch logs``: a batch as one picture and as one
stream of output (registered on the ``kinetic batch`` group)."""

from pathlib import Path

import click

from kinetic.cli import render
from kinetic.cli.context import CliContext, pass_cli
from kinetic.cli.out_files import check_out
from kinetic.cli.params import GivenPath

__all__ = ["logs", "timeline"]


@click.command()
@click.argument("group_id")
@click.option(
    "--out", "out", required=True, type=GivenPath(dir_okay=False, path_type=Path),
    help="File to write: .html (interactive, self-contained), .svg or .png.",
)  # fmt: skip
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
