"""``sys.exit`` and ``BaseException`` in the user's function: always an envelope, never the
runtime's own exit or a traceback through the runtime (issue 16)."""

import sys
from typing import Any

import cloudpickle
import pytest
from runtime_jobs import JobStage, pickled_call

from kinetic_protocol import Failed, Succeeded

EXIT_OK, EXIT_USER_ERROR = 0, 1


def _calling(action: Any) -> Any:
    """A function defined here, so it is pickled by value like a user's function."""

    def user_function() -> None:
        action()

    return user_function


def _exit(*code: Any) -> Any:
    return _calling(lambda: sys.exit(*code))


@pytest.mark.parametrize("code", [(), (0,), (None,), (False,)], ids=["bare", "0", "None", "False"])
def test_a_successful_sys_exit_succeeds_with_none(jobs: JobStage, code: tuple[Any, ...]) -> None:
    run = jobs.run(jobs.stage("job-exit-ok", pickled_call(_exit(*code))))
    assert run.exit_code == EXIT_OK, run.output
    assert isinstance(run.envelope, Succeeded), run.output
    assert cloudpickle.loads(run.envelope.value) is None


@pytest.mark.parametrize(
    ("code", "shown"), [(3, "sys.exit(3)"), ("bad config", "sys.exit('bad config')")]
)
def test_a_failing_sys_exit_is_a_run_failure_with_a_clear_message(
    jobs: JobStage, code: Any, shown: str
) -> None:
    run = jobs.run(jobs.stage("job-exit-bad", pickled_call(_exit(code))))
    assert run.exit_code == EXIT_USER_ERROR, run.output
    assert isinstance(run.envelope, Failed), run.output
    assert run.envelope.phase == "run"
    assert run.envelope.exc_type == "builtins.SystemExit"
    assert run.envelope.message == f"the function called {shown}"
    assert cloudpickle.loads(run.envelope.exception or b"").code == code
    assert "user_function" in run.envelope.traceback
    assert "kinetic_runtime" not in run.envelope.traceback


def _own_base_error(message: str) -> BaseException:
    class OwnBaseError(BaseException):  # defined in a function: pickled by value
        pass

    return OwnBaseError(message)


def _raise(exc: BaseException) -> Any:
    def action() -> None:
        raise exc

    return _calling(action)


@pytest.mark.parametrize(
    ("exc", "exc_type"),
    [
        (KeyboardInterrupt(), "builtins.KeyboardInterrupt"),
        (GeneratorExit(), "builtins.GeneratorExit"),
        (_own_base_error("mine"), "OwnBaseError"),
    ],
    ids=["KeyboardInterrupt", "GeneratorExit", "own"],
)
def test_a_base_exception_is_stored_as_a_run_failure(
    jobs: JobStage, exc: BaseException, exc_type: str
) -> None:
    run = jobs.run(jobs.stage("job-base", pickled_call(_raise(exc))))
    assert run.exit_code == EXIT_USER_ERROR, run.output
    assert isinstance(run.envelope, Failed), run.output
    assert run.envelope.phase == "run"
    assert run.envelope.exc_type.endswith(exc_type)
    assert type(cloudpickle.loads(run.envelope.exception or b"")).__name__ == type(exc).__name__
    assert run.envelope.message  # never empty, even for a bare KeyboardInterrupt()
    assert "kinetic_runtime" not in run.envelope.traceback
    assert "kinetic_runtime" not in run.output.replace("[kinetic]", "")
