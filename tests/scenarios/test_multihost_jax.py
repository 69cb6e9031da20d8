"""A real multi-process JAX program on a 2-host slice: through ``backend="pathways"`` (the LWS
controller makes the pods, the node agent runs each host, JAX's CPU backend stands in for the
TPU) and through the local backend's multi-host mode. ``jax.distributed`` is initialised by the
runtime from the environment the backend set; a cross-host gather sums every host's value."""

import importlib.util

import pytest
from scenario_support import ScenarioBackend, backend_params

# Checked without importing JAX: importing it here would cost every collecting process (each
# test worker, every run of chosen paths) about 1.5 s of CPU; the test imports it when it runs.
if importlib.util.find_spec("jax") is None:
    pytest.skip("JAX (jax[cpu]) is not installed", allow_module_level=True)

pytestmark = pytest.mark.slow


@pytest.fixture(params=backend_params("local", "pathways"))
def multihost_backend(request: pytest.FixtureRequest) -> ScenarioBackend:
    request.getfixturevalue(f"{request.param}_scenario_env")
    return ScenarioBackend(request.param)


def test_a_cross_host_sum_over_a_two_host_slice(multihost_backend: ScenarioBackend) -> None:
    import jax_userfuncs as jax_uf

    gathered_sum = multihost_backend.decorate(accelerator="tpu-v5litepod-2x4")(jax_uf.gathered_sum)
    job = gathered_sum.run_async()
    assert job.result(timeout=240, cleanup=False) == (3.0, 2)
    for host in (0, 1):
        log = job.logs(host=host) or ""
        assert f"jax.distributed initialised (host {host} of 2)" in log
