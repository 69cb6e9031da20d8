"""Jobs of several hosts on the local backend (issue 51): a JAX program on 2 nodes calls
``jax.distributed.initialize()`` with no arguments and sums across both processes, a PyTorch
program on 2 nodes all-reduces over gloo from the environment alone, and a job of 2 TPU slices
of 2 hosts each sees its multislice variables; a backend that cannot run several hosts refuses
them before anything is uploaded."""

import importlib.util
import json
from pathlib import Path

import pytest
from scenario_support import ScenarioBackend

import kinetic
from kinetic import backends
from kinetic.local.backend import LocalBackend
from kinetic_protocol import BackendSettings, ConfigError
from kinetic_testing import debian_torch

RESULT_TIMEOUT_S = 240


@pytest.fixture
def local(local_scenario_env: None) -> ScenarioBackend:
    return ScenarioBackend("local")


@pytest.fixture(scope="module")
def torch_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A job interpreter with Debian's PyTorch and this checkout's runtime."""
    venv = tmp_path_factory.mktemp("torch-python") / "venv"
    return str(debian_torch.torch_venv(venv, package="kinetic-runtime"))


@pytest.fixture
def local_with_torch(
    local_scenario_env: None, torch_python: str, monkeypatch: pytest.MonkeyPatch
) -> ScenarioBackend:
    """The local backend running its jobs in ``torch_python``, as it runs them in the
    client's own interpreter when that one has the job's frameworks."""

    class LocalWithTorch(LocalBackend):
        def __init__(self, settings: BackendSettings) -> None:
            super().__init__(settings, python=torch_python)

    load_factory = backends.load_factory
    monkeypatch.setattr(
        backends,
        "load_factory",
        lambda name: LocalWithTorch if name == "local" else load_factory(name),
    )
    return ScenarioBackend("local")


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax[cpu] is not installed")
def test_a_jax_program_on_two_nodes_initialises_with_no_arguments(local: ScenarioBackend) -> None:
    import host_group_userfuncs as uf

    job = local.decorate(accelerator="cpu", nodes=2)(uf.two_node_psum).run_async()
    value = job.result(timeout=RESULT_TIMEOUT_S, cleanup=False)
    assert value["psum"] == 6.0, "2 devices of host 0 add 1 each, 2 of host 1 add 2 each"
    assert (value["processes"], value["devices"], value["local_devices"]) == (2, 4, 2)
    assert value["torch"]["RANK"] == "0"
    worker = job.logs(host=1) or ""
    line = next(text for text in worker.splitlines() if text.startswith("host 1 torch "))
    torch_env = json.loads(line.removeprefix("host 1 torch "))
    assert (torch_env["RANK"], torch_env["NODE_RANK"], torch_env["WORLD_SIZE"]) == ("1", "1", "2")
    assert torch_env["MASTER_ADDR"] == value["torch"]["MASTER_ADDR"] == "127.0.0.1"
    assert torch_env["MASTER_PORT"] == value["torch"]["MASTER_PORT"]
    assert "calls jax.distributed.initialize itself" in worker
    job.cleanup()


@pytest.mark.slow
@pytest.mark.skipif(not debian_torch.available(), reason=debian_torch.SKIP_REASON)
def test_a_pytorch_program_on_two_nodes_all_reduces_over_gloo_from_the_environment(
    local_with_torch: ScenarioBackend,
) -> None:
    import host_group_userfuncs as uf

    remote = local_with_torch.decorate(accelerator="cpu", nodes=2)(uf.two_node_all_reduce)
    job = remote.run_async()
    value = job.result(timeout=RESULT_TIMEOUT_S, cleanup=False)
    assert (value["sum"], value["rank"], value["world"]) == (3.0, 0, 2), "1 from host 0, 2 from 1"
    assert Path(value["torch"]).is_relative_to(debian_torch.DEBIAN_TORCH), "Debian's torch ran"
    worker = job.logs(host=1) or ""
    line = next(text for text in worker.splitlines() if text.startswith("host 1 all_reduce "))
    assert json.loads(line.removeprefix("host 1 all_reduce ")) == {
        "sum": 3.0,
        "rank": 1,
        "world": 2,
    }
    job.cleanup()


def test_two_slices_of_two_hosts_see_their_slice(local: ScenarioBackend) -> None:
    import host_group_userfuncs as uf

    job = local.decorate(accelerator="tpu-v5litepod-2x4", slices=2)(uf.place).run_async()
    leader = job.result(timeout=RESULT_TIMEOUT_S, cleanup=False)
    places = []
    for host in range(4):
        log = job.logs(host=host) or ""
        line = next(text for text in log.splitlines() if text.startswith("place "))
        places.append(json.loads(line.removeprefix("place ")))
    assert leader == places[0]
    assert [p["KINETIC_HOST_INDEX"] for p in places] == ["0", "1", "2", "3"]
    assert [p["MEGASCALE_SLICE_ID"] for p in places] == ["0", "0", "1", "1"]
    assert [p["KINETIC_SLICE_HOST_INDEX"] for p in places] == ["0", "1", "0", "1"]
    assert {p["MEGASCALE_NUM_SLICES"] for p in places} == {"2"}
    assert {p["MEGASCALE_COORDINATOR_ADDRESS"] for p in places} == {"127.0.0.1"}
    job.cleanup()


def test_a_batchs_log_stream_has_every_nodes_lines_each_with_its_host(
    local: ScenarioBackend, tmp_path: Path
) -> None:
    """A batch of 2-node jobs is read as jobs of 2 hosts (not as its accelerator's 1): its
    log stream carries both hosts' lines, each prefixed with its input and host."""
    import host_group_userfuncs as uf

    remote = local.decorate(accelerator="cpu", nodes=2)(uf.say_then_fail_on_host_1)
    batch = remote.run_async_map([(str(tmp_path / "host-0-said"),)], input_mode="args")
    [outcome] = batch.results(return_exceptions=True, cleanup=False, timeout=RESULT_TIMEOUT_S)
    assert isinstance(outcome, RuntimeError) and "host 1 gave up" in str(outcome)
    text = batch.logs() or ""
    assert "[0 host 0] host 0 was here" in text and "[0 host 1] host 1 was here" in text, text
    batch.cleanup()


def test_a_backend_without_host_groups_refuses_them_before_uploading(
    example_scenario_env: object,
) -> None:
    import host_group_userfuncs as uf

    backend = ScenarioBackend("example")
    remote = backend.decorate(accelerator="cpu", nodes=2)(uf.place)
    with pytest.raises(ConfigError, match=r"'example' backend .* cannot run nodes=2.*: gke, local"):
        remote.run_async()
    assert backend.store().list("") == [], "nothing was uploaded"
    assert kinetic.run(accelerator="cpu", backend="example")(uf.place)() == uf.place()
