"""``kinetic batch timeline`` and ``kinetic batch logs``: a batch as one picture and as one
stream of output (registered on the ``kinetic batch`` group)."""

from pathlib import Path

import click

from kinetic.cli.context import CliContext, pass_cli

__all__ = ["timeline"]


@click.command()
@click.argument("group_id")
@click.option(
    "--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
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
    from kinetic.batch.timeline_plot import check_suffix

    check_suffix(out)
    drawn = cli.attach_batch(group_id).timeline()
    written = drawn.write(out)
    click.echo(f"{drawn.summary().describe()}")
    click.echo(f"Wrote {written}")
