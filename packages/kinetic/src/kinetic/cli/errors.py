"""The one place where exceptions become a CLI error line and an exit code.

Exit codes (also shown by ``kinetic --help``):

* 0: success (``jobs status`` of a failed job is still a success: the read worked);
* 1: the job or batch failed, or could not be found, or the backend/storage failed;
* 2: usage or configuration error (bad option, unknown profile, bad accelerator, ...);
* 3: a ``--timeout`` ran out; the job or batch keeps running.

Exceptions are mapped by their class (``isinstance`` on the ``KineticError`` hierarchy), never
by their name. Every error is one ``Error: ...`` line on stderr (a failed job adds the tail of
its remote traceback). Tracebacks of the CLI itself are printed only with ``--debug``.
"""

import sys
import traceback
from typing import IO, Any, ClassVar

import click

from kinetic.cli.render import printable

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "CliError",
    "ConfigProblem",
    "Failed",
    "TimedOut",
    "print_traceback",
    "translate",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 3
TRACEBACK_TAIL = 12
"""How many lines of a remote traceback an error shows; `kinetic jobs logs` has the rest."""


class CliError(click.ClickException):
    """A message for the user plus optional detail lines, shown on stderr."""

    exit_code: ClassVar[int] = EXIT_FAILED

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details

    def show(self, file: IO[Any] | None = None) -> None:
        text = f"Error: {self.format_message()}"
        if self.details:
            text += "\n" + self.details.rstrip("\n")
        click.echo(printable(text), file=file, err=file is None)  # messages quote the store


class Failed(CliError):
    """The job or batch failed, was not found, or the backend or storage failed (exit 1)."""


class ConfigProblem(CliError):
    """A usage or configuration error (exit 2, like click's own usage errors)."""

    exit_code: ClassVar[int] = EXIT_USAGE


class TimedOut(CliError):
    """A wait ran out of time; what was waited for keeps running (exit 3)."""

    exit_code: ClassVar[int] = EXIT_TIMEOUT


def _tail(text: str, lines: int = TRACEBACK_TAIL) -> str:
    kept = text.rstrip("\n").splitlines()
    shown = kept[-lines:]
    prefix = ["  ..."] if len(kept) > lines else []
    return "\n".join(prefix + ["  " + line for line in shown])


def _remote_failure(exc: BaseException, job_id: str | None) -> CliError:
    """A user exception re-raised from a job: its type, message and remote traceback tail."""
    remote_tb = str(getattr(exc, "remote_traceback", "") or "")
    phase = str(getattr(exc, "job_phase", "run") or "run")
    exc_type = getattr(exc, "exc_type", None) or type(exc).__name__
    message = getattr(exc, "message", None) or str(exc)
    job = f"Job {job_id}" if job_id else "The job"
    where = "" if phase == "run" else f" before your function ran (phase {phase!r})"
    details = f"Remote traceback (last lines):\n{_tail(remote_tb)}" if remote_tb else ""
    if job_id:
        details += f"\nFull output: kinetic jobs logs {job_id}"
    return Failed(f"{job} failed{where}: {exc_type}: {message}", details)


def translate(exc: Exception, *, job_id: str | None = None) -> CliError:  # noqa: PLR0911
    """Map any exception raised under a command to the CLI error the user sees."""
    from kinetic_protocol import ConfigError, KineticError

    if isinstance(exc, CliError):
        return exc
    # A user's exception re-raised from a job keeps its own type, so only the remote traceback
    # that ``kinetic._results`` attached tells it apart.
    if hasattr(exc, "remote_traceback"):
        return _remote_failure(exc, job_id)
    if isinstance(exc, ConfigError):
        return ConfigProblem(str(exc))
    if isinstance(exc, TimeoutError):
        return TimedOut(str(exc) or "Timed out; the job keeps running.")
    if isinstance(exc, KineticError):  # BatchError too: its message names the next command
        return Failed(str(exc))
    if isinstance(exc, OSError) and exc.filename:
        return Failed(f"{exc.strerror or exc}: {exc.filename}")
    return Failed(
        f"Unexpected {type(exc).__name__}: {exc}. Rerun with --debug for the traceback, "
        "and report it if it looks like a Kinetic bug."
    )


def print_traceback(exc: BaseException) -> None:
    """The full traceback, for ``--debug`` (its messages quote the store, so escaped)."""
    sys.stderr.write(printable("".join(traceback.format_exception(exc))))
