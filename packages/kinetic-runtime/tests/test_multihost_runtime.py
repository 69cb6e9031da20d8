"""Multi-host jobs in the runtime: which host a process is, claiming it once, and what each
host stores (the leader the job's result, a worker only its failure)."""

from collections.abc import Callable

import cloudpickle
import pytest
from runtime_jobs import JobStage, pickled_call

from kinetic_protocol import ConfigError, Failed, HostStart, Succeeded, layout
from kinetic_protocol.records import decode_json
from kinetic_runtime.main import EXIT_HOST_REPLACED, _start_host
from kinetic_runtime.multihost import (
    COORDINATOR_PORT,
    SliceError,
    SliceHost,
    claim_host,
    wait_for_slice,
)

EXIT_OK, EXIT_USER_ERROR, EXIT_INFRA_ERROR = 0, 1, 2


def _host_env(
    index: int, count: int = 2, instance: str = "pod-a", jax_distributed: str = "off"
) -> dict[str, str]:
    """One host's environment; JAX is left alone unless asked (these tests run one host at a
    time, so no slice could form)."""
    return {
        "KINETIC_NUM_HOSTS": str(count),
        "KINETIC_HOST_INDEX": str(index),
        "KINETIC_COORDINATOR_ADDRESS": "127.0.0.1:1",
        "KINETIC_HOST_INSTANCE": instance,
        "KINETIC_JAX_DISTRIBUTED": jax_distributed,
    }


def _fails_on(host: int) -> Callable[[], int]:
    """A function (a closure, so it travels by value) that raises on ``host`` only."""

    def on_each_host() -> int:
        import os

        index = int(os.environ["KINETIC_HOST_INDEX"])
        if index == host:
            raise RuntimeError(f"host {index} gave up")
        return index

    return on_each_host


# --- SliceHost.from_env -----------------------------------------------------------------------


@pytest.mark.parametrize("env", [{}, {"KINETIC_NUM_HOSTS": "1", "KINETIC_HOST_INDEX": "0"}])
def test_a_single_host_job_has_no_slice_host(env: dict[str, str]) -> None:
    assert SliceHost.from_env(env) is None


def test_kinetic_variables_name_the_host() -> None:
    host = SliceHost.from_env(_host_env(1, count=4, instance="pod-b"))
    assert host == SliceHost(index=1, count=4, coordinator="127.0.0.1:1", instance="pod-b")
    assert not host.is_leader
    assert host.label == "host 1 of 4"
    assert host.environment()["JAX_PROCESS_ID"] == "1", "test_host_place.py has the rest"


def test_a_leader_worker_set_pod_falls_back_to_what_lws_injects() -> None:
    env = {
        "KINETIC_NUM_HOSTS": "2",
        "LWS_WORKER_INDEX": "0",
        "LWS_LEADER_ADDRESS": "job-0.job.default",
        "HOSTNAME": "job-0",
    }
    host = SliceHost.from_env(env)
    assert host == SliceHost(
        index=0, count=2, coordinator=f"job-0.job.default:{COORDINATOR_PORT}", instance="job-0"
    )
    assert host.is_leader


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"KINETIC_NUM_HOSTS": "2", "KINETIC_COORDINATOR_ADDRESS": "h:1"}, "no host index"),
        ({**_host_env(2)}, r"KINETIC_HOST_INDEX=2 is outside 0\.\.1"),
        ({**_host_env(0), "KINETIC_HOST_INDEX": "-1"}, r"is outside 0\.\.1"),
        ({**_host_env(0), "KINETIC_HOST_INDEX": "first"}, "must be an integer"),
        ({**_host_env(0), "KINETIC_NUM_HOSTS": "two"}, "KINETIC_NUM_HOSTS must be an integer"),
        ({"KINETIC_NUM_HOSTS": "2", "KINETIC_HOST_INDEX": "0"}, "no coordinator address"),
    ],
)
def test_a_multi_host_environment_that_is_incomplete_is_refused(
    env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        SliceHost.from_env(env)


# --- claim_host -------------------------------------------------------------------------------


def test_a_host_is_claimed_once_then_restarted_or_replaced(jobs: JobStage) -> None:
    first = SliceHost(index=1, count=2, coordinator="127.0.0.1:1", instance="pod-a")
    assert claim_host(jobs.store, "job-claim", first) == "run"
    assert claim_host(jobs.store, "job-claim", first) == "restarted"
    other_pod = SliceHost(index=1, count=2, coordinator="127.0.0.1:1", instance="pod-b")
    assert claim_host(jobs.store, "job-claim", other_pod) == "replaced"
    key = layout.host_started_key("job-claim", 1)
    start = decode_json(jobs.store.read(key), HostStart, what=key)
    assert (start.host, start.hosts, start.instance) == (1, 2, "pod-a")
    leader = SliceHost(index=0, count=2, coordinator="127.0.0.1:1", instance="pod-b")
    assert claim_host(jobs.store, "job-claim", leader) == "run", "each host is claimed apart"


def test_a_new_run_of_the_whole_group_claims_its_hosts_anew(jobs: JobStage) -> None:
    """A JobSet runs every host again, in new pods, after a preemption: each host of that run
    runs (a host replaced within one run still does not), and waits for that run's hosts."""
    first = SliceHost(index=1, count=2, coordinator="127.0.0.1:1", instance="pod-a")
    assert claim_host(jobs.store, "job-runs", first) == "run"
    again = SliceHost(index=1, count=2, coordinator="127.0.0.1:1", instance="pod-b", run=1)
    assert claim_host(jobs.store, "job-runs", again) == "run"
    replaced = SliceHost(index=1, count=2, coordinator="127.0.0.1:1", instance="pod-c", run=1)
    assert claim_host(jobs.store, "job-runs", replaced) == "replaced"
    leader = SliceHost(index=0, count=2, coordinator="127.0.0.1:1", instance="pod-d", run=1)
    with pytest.raises(SliceError, match=r"host\(s\) 1 did not start"):
        wait_for_slice(jobs.store, "job-other", leader, timeout_s=0.01)
    wait_for_slice(jobs.store, "job-runs", leader, timeout_s=0.01)
    env = {**_host_env(1, instance="pod-b"), "KINETIC_RESTART_ATTEMPT": "1"}
    assert SliceHost.from_env(env) == again


def test_a_replaced_host_does_not_run_again_and_exits_3(jobs: JobStage) -> None:
    host = SliceHost(index=1, count=2, coordinator="127.0.0.1:1", instance="pod-a")
    assert _start_host(jobs.store, "job-replaced", host) is None
    replacement = SliceHost(index=1, count=2, coordinator="127.0.0.1:1", instance="pod-b")
    assert _start_host(jobs.store, "job-replaced", replacement) == EXIT_HOST_REPLACED


# --- run_job on two hosts ---------------------------------------------------------------------


def test_the_leaders_success_is_the_jobs_result(jobs: JobStage) -> None:
    job_id = jobs.stage("job-leader", pickled_call(_fails_on(1)))
    run = jobs.run(job_id, env=_host_env(0))
    assert run.exit_code == EXIT_OK, run.output
    assert isinstance(run.envelope, Succeeded)
    assert cloudpickle.loads(run.envelope.value) == 0
    assert not jobs.store.exists(layout.host_result_key(job_id, 0))
    assert "succeeded on host 0 of 2" in run.output


def test_a_workers_failure_is_stored_apart_with_its_host(jobs: JobStage) -> None:
    job_id = jobs.stage("job-worker-fails", pickled_call(_fails_on(1)))
    run = jobs.run(job_id, env=_host_env(1))
    assert run.exit_code == EXIT_USER_ERROR, run.output
    assert run.envelope is None, "a worker never writes the job's result"
    key = layout.host_result_key(job_id, 1)
    failed = jobs.envelope(key, job_id)
    assert isinstance(failed, Failed)
    assert (failed.host, failed.hosts, failed.phase) == (1, 2, "run")
    assert "host 1 gave up" in failed.message


def test_a_workers_failure_in_a_later_run_of_its_group_is_stored_as_that_runs(
    jobs: JobStage,
) -> None:
    """JobSet runs the whole group again after a host was taken away: a failure then is
    that run's, apart from any an earlier run left."""
    job_id = jobs.stage("job-worker-fails-again", pickled_call(_fails_on(1)))
    run = jobs.run(job_id, env={**_host_env(1), "KINETIC_RESTART_ATTEMPT": "2"})
    assert run.exit_code == EXIT_USER_ERROR, run.output
    assert not jobs.store.exists(layout.host_result_key(job_id, 1))
    failed = jobs.envelope(layout.host_result_key(job_id, 1, run=2), job_id)
    assert isinstance(failed, Failed) and "host 1 gave up" in failed.message


def test_a_workers_success_stores_nothing(jobs: JobStage) -> None:
    job_id = jobs.stage("job-worker-ok", pickled_call(_fails_on(0)))
    run = jobs.run(job_id, env=_host_env(1))
    assert run.exit_code == EXIT_OK, run.output
    assert run.envelope is None
    assert not jobs.store.exists(layout.host_result_key(job_id, 1))
    assert jobs.store.exists(layout.host_started_key(job_id, 1))


def test_a_host_run_again_is_restarted_or_replaced_never_rerun(jobs: JobStage) -> None:
    job_id = jobs.stage("job-again", pickled_call(_fails_on(1)))
    assert jobs.run(job_id, env=_host_env(1)).exit_code == EXIT_USER_ERROR
    same_pod = SliceHost.from_env(_host_env(1))
    assert same_pod is not None
    assert claim_host(jobs.store, job_id, same_pod) == "restarted"
    jobs.store.delete(layout.host_result_key(job_id, 1))
    run = jobs.run(job_id, env=_host_env(1, instance="pod-b"))
    assert run.exit_code == EXIT_HOST_REPLACED, run.output
    assert "new pod" in run.output
    assert not jobs.store.exists(layout.host_result_key(job_id, 1)), "the function ran again"


# --- jax.distributed --------------------------------------------------------------------------


def _counts_processes() -> Callable[[], int]:
    def count_processes() -> int:
        import jax  # imported when called, the usual style: not when the call is unpickled

        return jax.process_count()

    return count_processes


def test_a_host_whose_slice_never_forms_fails_saying_which_host_is_missing(
    jobs: JobStage,
) -> None:
    """JAX is installed and the function imports it only in its body: the host must join the
    slice before the function runs, and with host 0 never started it fails saying so rather
    than running the function as a separate single host."""
    pytest.importorskip("jax")
    job_id = jobs.stage("job-no-slice", pickled_call(_counts_processes()))
    env = {**_host_env(1, jax_distributed="auto"), "KINETIC_SLICE_TIMEOUT": "1"}
    run = jobs.run(job_id, env=env)
    assert run.exit_code == EXIT_INFRA_ERROR, run.output
    failed = jobs.envelope(layout.host_result_key(job_id, 1), job_id)
    assert isinstance(failed, Failed)
    assert failed.phase == "distributed"
    assert "host 1 of 2 cannot form the slice: host(s) 0 did not start within 1s" in (
        failed.message
    )
    assert "running test_function" not in run.output, "the function must not run alone"


def test_jax_distributed_off_leaves_jax_to_the_function(jobs: JobStage) -> None:
    pytest.importorskip("jax")
    job_id = jobs.stage("job-jax-off", pickled_call(_counts_processes()))
    run = jobs.run(job_id, env={**_host_env(0), "KINETIC_SLICE_TIMEOUT": "1"})
    assert run.exit_code == EXIT_OK, run.output
    assert isinstance(run.envelope, Succeeded)
    assert cloudpickle.loads(run.envelope.value) == 1


@pytest.mark.parametrize("raw", ["0", "-5", "soon"])
def test_a_bad_slice_timeout_is_refused_naming_the_value(jobs: JobStage, raw: str) -> None:
    pytest.importorskip("jax")
    job_id = jobs.stage(f"job-timeout-{raw.strip('-')}", pickled_call(_counts_processes()))
    run = jobs.run(
        job_id, env={**_host_env(0, jax_distributed="auto"), "KINETIC_SLICE_TIMEOUT": raw}
    )
    assert run.exit_code == EXIT_INFRA_ERROR, run.output
    failed = run.envelope
    assert isinstance(failed, Failed)
    assert failed.phase == "distributed"
    assert f"KINETIC_SLICE_TIMEOUT must be a positive number of seconds, got {raw!r}" in (
        failed.message
    )


def test_a_function_that_does_not_use_jax_runs_without_joining_a_slice(jobs: JobStage) -> None:
    """JAX is installed, but the function never imports it: the host must not join
    jax.distributed (it would wait for the other hosts, then tie its exit to theirs; under
    load JAX aborted such hosts with exit 134)."""
    pytest.importorskip("jax")
    job_id = jobs.stage("job-no-jax", pickled_call(_fails_on(host=5)))
    env = {**_host_env(1, jax_distributed="auto"), "KINETIC_SLICE_TIMEOUT": "1"}
    run = jobs.run(job_id, env=env)
    assert run.exit_code == EXIT_OK, run.output
    assert "jax.distributed" not in run.output


def test_jax_imported_anywhere_in_the_functions_code_counts_as_using_it() -> None:
    from kinetic_runtime.multihost import _code_imports_jax

    def in_body() -> object:
        import jax

        return jax

    def submodule() -> object:
        import jax.numpy as jnp

        return jnp

    def nested() -> object:
        def inner() -> object:
            from jax import numpy

            return numpy

        return inner

    def none() -> object:
        import json

        return json

    found = {f.__name__: _code_imports_jax(f.__code__) for f in (in_body, submodule, nested, none)}
    assert found == {"in_body": True, "submodule": True, "nested": True, "none": False}
