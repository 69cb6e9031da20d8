"""The commands kinetic-gke adds to the ``kinetic`` command line: ``up``, ``down``, ``status``,
``pool``, ``init``, ``doctor`` and ``build-image``.

They are registered in the ``kinetic.cli`` entry-point group (see
:mod:`kinetic_protocol.commands`) and import nothing of the client: the command line that runs
them lends its resolved settings, profile store and output through a
:class:`~kinetic_protocol.commands.CommandHost`, which :data:`pass_host` hands to each command.
"""

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import click

from kinetic_protocol.commands import CommandHost

__all__ = ["host_of", "pass_host"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def host_of(ctx: click.Context) -> CommandHost:
    """The host of the command line ``ctx`` belongs to."""
    host = ctx.find_root().obj
    if not isinstance(host, CommandHost):
        raise click.UsageError(
            f"{ctx.command_path} is a command of the kinetic command line and runs under it "
            f"(its context object is {type(host).__name__}, not a CommandHost): run `kinetic "
            f"{ctx.info_name}`."
        )
    return host


def pass_host(f: Callable[Concatenate[CommandHost, _P], _R]) -> Callable[_P, _R]:
    """Decorate a command so that it receives the :class:`CommandHost` first."""

    @click.pass_context
    def run(ctx: click.Context, /, *args: Any, **kwargs: Any) -> Any:
        return ctx.invoke(f, host_of(ctx), *args, **kwargs)

    return functools.update_wrapper(run, f)
