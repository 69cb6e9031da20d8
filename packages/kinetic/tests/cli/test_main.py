"""The ``kinetic`` group itself: help everywhere, lazy imports, exit codes, logging."""

import json
import logging
import subprocess
import sys
from typing import Any, ClassVar

import click
import pytest

from kinetic.batch.errors import BatchError
from kinetic.cli import LazyGroup, _configure_logging, cli
from kinetic.cli.errors import (
    EXIT_FAILED,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    CliError,
    translate,
)
from kinetic_protocol import ConfigError, JobNotFoundError, RemoteError, StorageError


def _command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    ctx = click.Context(group)
    paths = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        paths.append((*prefix, name))
        if isinstance(command, click.Group):
            paths += _command_paths(command, (*prefix, name))
    return paths


ALL_COMMANDS = _command_paths(cli)


def test_every_command_of_the_issue_exists() -> None:
    expected = (
        {("jobs", n) for n in ("list", "status", "logs", "result", "cancel", "cleanup")}
        | {
            ("batch", n)
            for n in ("list", "status", "watch", "results", "failures", "cancel", "cleanup")
        }
        | {("config", "show"), ("accelerators",)}
        | {("profile", n) for n in ("create", "ls", "use", "show", "rm")}
    )
    assert expected <= set(ALL_COMMANDS)


@pytest.mark.parametrize("path", [(), *ALL_COMMANDS], ids=lambda p: " ".join(p) or "kinetic")
def test_help_of_every_command(invoke, path: tuple[str, ...]) -> None:
    result = invoke(*path, "--help")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(" ".join(("Usage: kinetic", *path)) + " [OPTIONS]")


_PROBE = """
import json, sys
from kinetic.cli import main
try:
    main(["--help"])
except SystemExit as exit:
    code = exit.code
heavy = sorted(m for m in sys.modules if m == "kubernetes" or m.startswith(("kubernetes.",
               "google.cloud", "kinetic.batch", "kinetic_gke", "kinetic_pathways"))
               and not m.startswith("kinetic_gke.cli") and m != "kinetic_gke")
print(json.dumps({"code": code, "heavy": heavy}), file=sys.stderr)
"""


def test_help_imports_no_kubernetes_or_google_cloud() -> None:
    """The help lists the commands backend packages contribute (their modules are imported for
    their one-line help), and loads no backend, Kubernetes or Google Cloud module for them."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=False, timeout=60
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report == {"code": 0, "heavy": []}
    assert "Exit codes:" in done.stdout


def test_python_dash_m_kinetic_prints_the_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kinetic", "--version"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("kinetic, version ")


def test_an_unknown_command_is_exit_2(invoke) -> None:
    result = invoke("jbos")
    assert result.exit_code == 2
    assert "No such command 'jbos'" in result.stderr


def test_lazy_group_rejects_a_target_that_is_not_a_command() -> None:
    group = LazyGroup(lazy={"bad": "kinetic.cli.render:emit_json"})
    with pytest.raises(TypeError, match="not a click command"):
        group.get_command(click.Context(group), "bad")


# -- the one exception mapping ------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "code", "message"),
    [
        (ConfigError("bad accelerator 'tpu-v9'"), EXIT_USAGE, "bad accelerator 'tpu-v9'"),
        (JobNotFoundError("No job 'x'"), EXIT_FAILED, "No job 'x'"),
        (StorageError("bucket gone"), EXIT_FAILED, "bucket gone"),
        (TimeoutError("still RUNNING after 5s"), EXIT_TIMEOUT, "still RUNNING after 5s"),
        (KeyError("oops"), EXIT_FAILED, "Unexpected KeyError: 'oops'. Rerun with --debug"),
    ],
)
def test_translate_maps_each_family_to_its_exit_code(
    exc: Exception, code: int, message: str
) -> None:
    error = translate(exc)
    assert error.exit_code == code
    assert message in error.message


def _remote(exc: Exception, traceback: str, phase: str = "run") -> Exception:
    exc.remote_traceback = traceback  # type: ignore[attr-defined]
    exc.job_phase = phase  # type: ignore[attr-defined]
    return exc


def test_a_remote_exception_shows_type_message_and_the_traceback_tail() -> None:
    lines = [f"  line {i}" for i in range(30)]
    error = translate(_remote(KeyError("k"), "\n".join(lines)), job_id="job-1")
    assert (error.exit_code, error.message) == (EXIT_FAILED, "Job job-1 failed: KeyError: 'k'")
    assert "line 29" in error.details
    assert "line 5\n" not in error.details  # only the tail
    assert error.details.endswith("Full output: kinetic jobs logs job-1")


def test_a_remote_error_of_unknown_type_keeps_the_remote_type_name() -> None:
    exc = RemoteError("torch.OutOfMemoryError", "CUDA out of memory", "Traceback ...")
    error = translate(_remote(exc, "Traceback ...", phase="deserialize"))
    assert error.message == (
        "The job failed before your function ran (phase 'deserialize'): "
        "torch.OutOfMemoryError: CUDA out of memory"
    )


def test_batch_errors_keep_their_own_message() -> None:
    error = translate(BatchError("grp-1", [], [None, None, 1, 2], {0: ValueError("x")}))
    assert error.exit_code == EXIT_FAILED
    assert error.message == "Batch grp-1: 0 of 4 jobs failed; 1 could not be submitted"


def test_errors_are_mapped_by_type_not_by_name() -> None:
    """A foreign exception that merely shares a Kinetic error's name is unexpected."""

    class BatchError(Exception):
        partial_results: ClassVar[list[Any]] = []

    class ConfigError(Exception):
        pass

    for impostor in (BatchError("looks like a batch"), ConfigError("looks like config")):
        error = translate(impostor)
        assert error.exit_code == EXIT_FAILED
        assert error.message.startswith(f"Unexpected {type(impostor).__name__}:")


def test_a_cli_error_passes_through() -> None:
    error = CliError("already mapped")
    assert translate(error) is error


def test_a_command_error_is_one_line_on_stderr(invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KINETIC_PROFILES_FILE", "/nonexistent/dir/profiles.json")
    monkeypatch.setenv("KINETIC_PROFILE", "ghost")
    result = invoke("config", "show", "--json")
    assert result.exit_code == EXIT_USAGE
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("Error: Active profile 'ghost' does not exist")


# -- logging ------------------------------------------------------------------------------


def test_logging_goes_to_stderr_at_warning_or_info_with_debug(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = logging.getLogger("kinetic.test_cli")
    before = logging.getLogger().level
    for debug, shown in (
        (False, ["warned"]),
        (True, ["INFO kinetic.test_cli: told", "WARNING kinetic.test_cli: warned"]),
    ):
        undo = _configure_logging(debug)
        try:
            log.info("told")
            log.warning("warned")
        finally:
            undo()
        assert capsys.readouterr().err.splitlines() == shown
    assert logging.getLogger().level == before
    log.warning("after undo")
    assert "after undo" not in capsys.readouterr().err.splitlines()
