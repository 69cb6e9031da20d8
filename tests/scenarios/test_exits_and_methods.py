"""Issue 16: ``sys.exit`` and other ``BaseException``s in the user's function, remote methods,
and ``functools.partial`` functions, end to end."""

import functools
import json
from pathlib import Path

import exit_userfuncs as uf
import pytest
from batch_support import four_local_slots  # noqa: F401 (an autouse fixture)
from scenario_support import ScenarioBackend, client_only

import kinetic
from kinetic import JobStatus
from kinetic.batch import BatchError
from kinetic_protocol import Failed, Succeeded
from kinetic_protocol.errors import RemoteExitError

pytestmark = client_only


# --- sys.exit ---------------------------------------------------------------------------------


def test_sys_exit_0_or_none_succeeds_with_none(kinetic_backend: ScenarioBackend) -> None:
    remote_exit = kinetic_backend.decorate()(uf.exit_with)
    jobs = [
        remote_exit.run_async(0),
        remote_exit.run_async(None),
        kinetic_backend.decorate()(uf.exit_without_code).run_async(),
    ]
    for job in jobs:
        assert job.result(cleanup=False) is None
        assert job.status() is JobStatus.SUCCEEDED
        assert isinstance(job.read_envelope(), Succeeded)


def test_a_non_zero_sys_exit_fails_with_a_clear_message(
    kinetic_backend: ScenarioBackend,
) -> None:
    remote_exit = kinetic_backend.decorate()(uf.exit_with)
    job = remote_exit.run_async(3)
    with pytest.raises(RemoteExitError, match=r"sys\.exit\(3\)") as caught:
        job.result()
    assert isinstance(caught.value, kinetic.RemoteError)
    assert caught.value.exit_code == 3
    assert isinstance(caught.value.original, SystemExit)
    assert "exit_with" in caught.value.remote_traceback
    assert job.status() is JobStatus.FAILED
    envelope = job.read_envelope()
    assert isinstance(envelope, Failed)
    assert envelope.phase == "run"

    message = remote_exit.run_async("no config found")
    with pytest.raises(RemoteExitError, match=r"sys\.exit\('no config found'\)") as by_message:
        message.result()
    assert by_message.value.exit_code == "no config found"


def test_a_batch_retries_a_non_zero_exit_and_counts_it_failed(
    kinetic_backend: ScenarioBackend,
) -> None:
    remote_exit = kinetic_backend.decorate()(uf.exit_with)
    batch = remote_exit.run_async_map([0, 4], retries=1)
    batch.wait(timeout=120)
    assert [job.attempt for job in batch.jobs if job is not None] == [0, 1]
    failing = batch.jobs[1]
    assert failing is not None
    assert [job.job_id for job in batch.failures()] == [failing.job_id]
    assert batch.status_counts().get("FAILED") == 1
    results = batch.results(return_exceptions=True, cleanup=False)
    assert results[0] is None
    assert isinstance(results[1], RemoteExitError)
    assert results[1].exit_code == 4
    with pytest.raises(BatchError):
        batch.results(cleanup=False)


# --- other BaseExceptions -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "original"),
    [
        ("KeyboardInterrupt", KeyboardInterrupt),
        ("GeneratorExit", GeneratorExit),
        ("own", uf.OwnBaseError),
    ],
)
def test_a_base_exception_is_stored_and_raised_as_a_remote_exit_error(
    local_backend: ScenarioBackend, kind: str, original: type[BaseException]
) -> None:
    job = local_backend.decorate()(uf.raise_base).run_async(kind)
    # An Exception, so ``except Exception`` catches it and this process is not interrupted.
    with pytest.raises(Exception) as caught:
        job.result()
    error = caught.value
    assert isinstance(error, RemoteExitError)
    assert type(error.original) is original
    assert error.exc_type.endswith(original.__name__)
    assert "raise_base" in error.remote_traceback
    assert "kinetic_runtime" not in error.remote_traceback
    assert job.job_id in "\n".join(error.__notes__)
    state = job.status_detail()
    assert state.status is JobStatus.FAILED
    assert "exit 2" not in state.describe(), state.describe()
    envelope = job.read_envelope()
    assert isinstance(envelope, Failed)
    assert envelope.phase == "run"


# --- cleaned-up jobs -------------------------------------------------------------------------


def test_result_of_a_cleaned_up_job_raises_a_runtime_error(local_backend: ScenarioBackend) -> None:
    job = local_backend.decorate()(uf.scale).run_async(2, 21)
    assert job.result() == 42  # cleans up
    with pytest.raises(RuntimeError, match="cleaned up"):
        job.result()


# --- methods and partials --------------------------------------------------------------------


def test_a_decorated_method_binds_its_instance(local_backend: ScenarioBackend) -> None:
    adder = uf.Adder(100)
    assert adder.add(1) == 101
    job = adder.add.run_async(2)
    adder.base = 0  # the instance was pickled with the call: the job sees base 100
    assert job.result() == 102
    adder.base = 100
    batch = adder.add.run_async_map([3, 4])
    assert batch.results() == [103, 104]
    other = uf.Adder(-1)
    assert other.add(1) == 0
    assert uf.Adder.add is uf.Adder.__dict__["add"]  # unbound access is the remote function


def test_a_partial_ships_the_project_of_the_function_it_wraps(
    local_backend: ScenarioBackend,
) -> None:
    double = local_backend.decorate()(functools.partial(uf.scale, 2))
    job = double.run_async(21)
    assert job.result() == 42


def test_a_function_of_the_python_installation_is_refused_clearly(
    local_backend: ScenarioBackend,
) -> None:
    remote = local_backend.decorate()(functools.partial(json.dumps, indent=2))
    with pytest.raises(TypeError, match="defined in the Python installation"):
        remote.run_async({"a": 1})
    assert Path.cwd().exists()
