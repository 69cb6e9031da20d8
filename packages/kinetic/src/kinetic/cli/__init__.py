"""The ``kinetic`` command line: jobs, batches, settings, profiles and the accelerator catalogue,
and the commands installed backend packages add (``kinetic.cli`` entry points: ``kinetic-gke``'s
``up``, ``down``, ``status``, ``pool``, ``init``, ``doctor`` and ``build-image``).

The root group loads each subcommand module only when it is used (or listed by ``--help``), and
those modules import the library inside their command bodies, so ``kinetic --help`` stays fast
and never imports Kubernetes or Google Cloud clients. Commands are thin: parse, call the public
library API, render. A contributed command gets the resolved settings, the profile store and
the output helpers through :class:`~kinetic.cli.context.CliContext`, the group's context
object (a :class:`kinetic_protocol.commands.CommandHost`).
"""

import importlib
import logging
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any

import click

from kinetic._log import printable
from kinetic.cli.context import SHARED_OPTIONS, CliContext, accept_shared_options
from kinetic.cli.errors import print_traceback, translate
from kinetic_protocol.commands import COMMANDS_GROUP

__all__ = ["LazyGroup", "cli", "main"]

_SUBCOMMANDS = {
    "jobs": "kinetic.cli.jobs:jobs",
    "batch": "kinetic.cli.batch:batch",
    "config": "kinetic.cli.config:config",
    "profile": "kinetic.cli.config:profile",
    "accelerators": "kinetic.cli.accelerators:accelerators",
    "bundle": "kinetic.cli.bundle:bundle",
    "keys": "kinetic.cli.keys:keys",
}
"""The shell's own commands; installed packages add theirs through ``kinetic.cli`` entry
points (a name taken here stays the shell's)."""

_EPILOG = """\b
Exit codes:
  0  success
  1  the job or batch failed, was not found, or the backend/storage failed
  2  usage or configuration error
  3  a --timeout ran out (the job keeps running)
"""


def contributed_commands() -> dict[str, str]:
    """``name -> "module:attribute"`` of every command installed packages register."""
    return {point.name: point.value for point in entry_points(group=COMMANDS_GROUP)}


class LazyGroup(click.Group):
    """A group whose subcommands are ``"module:attribute"`` strings imported on first use:
    ``lazy`` ones, then (with ``contributed``) those of the ``kinetic.cli`` entry points, read
    from the installed packages' metadata only when the commands are listed or looked up."""

    def __init__(
        self,
        *args: Any,
        lazy: dict[str, str] | None = None,
        contributed: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})
        self._contributed = contributed

    def _targets(self) -> dict[str, str]:
        if not self._contributed:
            return self.lazy
        return contributed_commands() | self.lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._targets()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self.lazy.get(cmd_name) or (
            self._targets().get(cmd_name) if cmd_name not in self.commands else None
        )
        if target:
            module_name, attribute = target.split(":")
            command = getattr(importlib.import_module(module_name), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{target} is not a click command: {command!r}")
            return accept_shared_options(command)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; any non-click exception becomes one error line and an exit code."""
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort, BrokenPipeError):
            raise  # click reports these itself (a closed pipe exits quietly)
        except Exception as exc:
            state = ctx.find_object(CliContext)
            if state is not None and state.debug:
                print_traceback(exc)
            raise translate(exc, job_id=state.job_id if state else None) from exc


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at the time of each record, control characters
    shown as escapes: any library's record may quote what the store holds."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(printable(self.format(record)) + "\n")
        except Exception:
            self.handleError(record)


def _configure_logging(debug: bool) -> Callable[[], None]:
    """Library events to stderr (WARNING, or INFO with ``--debug``); returns the undo."""
    root = logging.getLogger()
    handler = _StderrHandler()
    fmt = "%(levelname)s %(name)s: %(message)s" if debug else "%(message)s"
    handler.setFormatter(logging.Formatter(fmt))
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO if debug else logging.WARNING)

    def undo() -> None:
        root.removeHandler(handler)
        root.setLevel(previous)

    return undo


@click.group(
    cls=LazyGroup,
    lazy=_SUBCOMMANDS,
    contributed=True,
    epilog=_EPILOG,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option("--backend", help=SHARED_OPTIONS["backend"])
@click.option("--project", help=SHARED_OPTIONS["project"])
@click.option("--zone", help=SHARED_OPTIONS["zone"])
@click.option("--cluster", help=SHARED_OPTIONS["cluster"])
@click.option("--namespace", help=SHARED_OPTIONS["namespace"])
@click.option("--debug", is_flag=True, help="Log at INFO and show tracebacks of errors.")
@click.version_option(package_name="kinetic", prog_name="kinetic")
@click.pass_context
def cli(
    ctx: click.Context,
    *,
    backend: str | None,
    project: str | None,
    zone: str | None,
    cluster: str | None,
    namespace: str | None,
    debug: bool,
) -> None:
    """Run, watch and collect Kinetic jobs and batches from a shell.

    Settings not given here fall back to KINETIC_* environment variables, the active profile,
    then defaults (see `kinetic config show`); every command also takes them after its name.
    Read commands take --json for scripts.
    """
    ctx.obj = CliContext(backend, project, zone, cluster, namespace, debug)
    ctx.call_on_close(_configure_logging(debug))


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point (``kinetic``, ``python -m kinetic``)."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="kinetic")
