"""The commands kinetic-gke adds to the ``kinetic`` command line: ``up``, ``down``, ``status``,
``pool``, ``init``, ``doctor`` and ``build-image``.

They are registered in the ``kinetic.cli`` entry-point group (see
:mod:`kinetic_protocol.commands`) and import nothing of the client: the command line that runs
them lends its resolved settings, profile store and output through a
:class:`~kinetic_protocol.commands.CommandHost`, which :data:`pass_host` hands to each command.
"""

import functools
import sys
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
        try:
            return ctx.invoke(f, host_of(ctx), *args, **kwargs)
        except Exception as exc:
            if _no_google_credentials(exc):
                from kinetic_gke.gcp import google_error

                raise google_error(exc, ctx.command_path) from exc
            raise

    return functools.update_wrapper(run, f)


def _no_google_credentials(exc: Exception) -> bool:
    """Whether ``exc`` says the Google credentials are missing or unusable: a known condition
    with a known fix, wherever in a command (a client being built, a token refreshed) it shows.
    Only a module already imported can have raised it, so nothing is imported to ask."""
    auth = sys.modules.get("google.auth.exceptions")
    return auth is not None and isinstance(exc, auth.DefaultCredentialsError | auth.RefreshError)
