"""Where a host of a multi-node or multislice job sits, read from the variables a backend
sets (``kinetic_runtime.host_place``), and what each framework then reads: JAX's process
variables, PyTorch's ``env://`` rendezvous, JAX multislice's ``MEGASCALE_*`` (issue 51)."""

import subprocess
import sys
import textwrap

import pytest

from kinetic_protocol import ConfigError
from kinetic_runtime.host_place import SliceHost
from kinetic_runtime.multihost import initialises_jax

TORCH_ENV_RENDEZVOUS = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK")
"""What ``torch.distributed``'s ``env://`` handler reads (``_env_rendezvous_handler`` in
``torch/distributed/rendezvous.py``: each must be set and non-empty, the ports and ranks
integers); torch itself is not in the workspace, so the contract is checked here."""


def _jobset_pod(slice_index: str, completion_index: str, slices: int = 2) -> dict[str, str]:
    """A JobSet pod of a job of 2 slices of 2 hosts: its place from the downward API."""
    return {
        "KINETIC_NUM_HOSTS": "4",
        "KINETIC_NUM_SLICES": str(slices),
        "KINETIC_SLICE_INDEX": slice_index,
        "JOB_COMPLETION_INDEX": completion_index,
        "KINETIC_COORDINATOR_ADDRESS": "train-slice-0-0.train:8476",
        "HOSTNAME": f"train-slice-{slice_index}-{completion_index}",
    }


def test_a_two_node_job_sets_what_jax_and_torch_read() -> None:
    env = {
        "KINETIC_NUM_HOSTS": "2",
        "KINETIC_HOST_INDEX": "1",
        "KINETIC_COORDINATOR_ADDRESS": "train-nodes-0-0.train:8476",
        "KINETIC_HOST_INSTANCE": "pod-b",
    }
    host = SliceHost.from_env(env)
    assert host is not None
    assert host.environment() == {
        "KINETIC_HOST_INDEX": "1",
        "KINETIC_NUM_HOSTS": "2",
        "KINETIC_NUM_SLICES": "1",
        "KINETIC_SLICE_INDEX": "0",
        "KINETIC_SLICE_HOST_INDEX": "1",
        "JAX_COORDINATOR_ADDRESS": "train-nodes-0-0.train:8476",
        "JAX_NUM_PROCESSES": "2",
        "JAX_PROCESS_ID": "1",
        "MASTER_ADDR": "train-nodes-0-0.train",
        "MASTER_PORT": "29500",
        "WORLD_SIZE": "2",
        "RANK": "1",
        "NODE_RANK": "1",
        "LOCAL_RANK": "0",
        "LOCAL_WORLD_SIZE": "1",
    }
    rendezvous = {name: host.environment()[name] for name in TORCH_ENV_RENDEZVOUS}
    assert all(rendezvous.values())
    assert 0 <= int(rendezvous["RANK"]) < int(rendezvous["WORLD_SIZE"])
    assert 0 < int(rendezvous["MASTER_PORT"]) < 65536


def test_every_host_of_two_slices_knows_its_slice_and_the_multislice_coordinator() -> None:
    seen = []
    for index in range(4):
        env = {
            "KINETIC_NUM_HOSTS": "4",
            "KINETIC_NUM_SLICES": "2",
            "KINETIC_HOST_INDEX": str(index),
            "KINETIC_COORDINATOR_ADDRESS": "127.0.0.1:5000",
            "KINETIC_TORCH_PORT": "5001",
            "KINETIC_MEGASCALE_PORT": "5002",
        }
        host = SliceHost.from_env(env)
        assert host is not None
        seen.append(host.environment())
    assert [e["MEGASCALE_SLICE_ID"] for e in seen] == ["0", "0", "1", "1"]
    assert [e["KINETIC_SLICE_HOST_INDEX"] for e in seen] == ["0", "1", "0", "1"]
    assert {e["MEGASCALE_NUM_SLICES"] for e in seen} == {"2"}
    assert {e["MEGASCALE_COORDINATOR_ADDRESS"] for e in seen} == {"127.0.0.1"}
    assert {e["MEGASCALE_PORT"] for e in seen} == {"5002"}
    assert {e["MASTER_PORT"] for e in seen} == {"5001"}
    assert [e["JAX_PROCESS_ID"] for e in seen] == ["0", "1", "2", "3"]


@pytest.mark.parametrize(
    ("slice_index", "completion_index", "expected"),
    [("0", "0", 0), ("0", "1", 1), ("1", "0", 2), ("1", "1", 3)],
)
def test_a_jobset_pod_places_itself_from_its_job_and_completion_index(
    slice_index: str, completion_index: str, expected: int
) -> None:
    host = SliceHost.from_env(_jobset_pod(slice_index, completion_index))
    assert host is not None
    assert (host.index, host.slice_index) == (expected, int(slice_index))
    assert host.instance == f"train-slice-{slice_index}-{completion_index}"
    assert host.environment()["MEGASCALE_COORDINATOR_ADDRESS"] == "train-slice-0-0.train"


def test_a_single_slice_job_sets_no_multislice_variables() -> None:
    host = SliceHost(index=0, count=2, coordinator="h:1", instance="a")
    assert not any(name.startswith("MEGASCALE_") for name in host.environment())


@pytest.mark.parametrize(
    ("env", "message"),
    [
        # TPU_WORKER_ID counts within one slice: with two, it cannot say which host this is.
        (
            {"KINETIC_NUM_HOSTS": "4", "KINETIC_NUM_SLICES": "2", "TPU_WORKER_ID": "1"},
            "no host index is set",
        ),
        (
            {"KINETIC_NUM_HOSTS": "4", "KINETIC_NUM_SLICES": "3", "KINETIC_HOST_INDEX": "0"},
            "KINETIC_NUM_SLICES=3 must be a positive divisor of KINETIC_NUM_HOSTS=4",
        ),
        (_jobset_pod("2", "0"), r"KINETIC_SLICE_INDEX=2 is outside 0\.\.1"),
        (_jobset_pod("0", "2"), r"JOB_COMPLETION_INDEX=2 is outside 0\.\.1"),
        (
            {**_jobset_pod("0", "0"), "KINETIC_TORCH_PORT": "70000"},
            r"KINETIC_TORCH_PORT=70000 is not a port",
        ),
    ],
)
def test_a_place_that_cannot_be_read_is_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SliceHost.from_env(env)


def _calls_initialize() -> None:
    import jax

    jax.distributed.initialize()


def _uses_jax_only() -> int:
    import jax

    return jax.process_count()


def test_a_function_that_initialises_jax_itself_is_told_apart() -> None:
    assert initialises_jax(_calls_initialize)
    assert not initialises_jax(_uses_jax_only)


def test_jax_finds_the_hosts_place_once_it_is_imported() -> None:
    """In a fresh interpreter (JAX not loaded yet): the hook defines Kinetic's cluster when
    the job imports JAX, ahead of the others, so initialize() needs no arguments."""
    pytest.importorskip("jax")
    script = textwrap.dedent(
        """
        import sys
        from kinetic_runtime.host_place import SliceHost
        from kinetic_runtime.jax_cluster import register_when_imported

        import importlib.util

        assert "jax" not in sys.modules
        register_when_imported(SliceHost(index=2, count=4, coordinator="h0:9", instance="x"))
        assert importlib.util.find_spec("jax") is not None  # a search: no import yet
        import jax
        from jax._src import clusters

        found = clusters.ClusterEnv.auto_detect_unset_distributed_params(
            None, None, None, None, None, 1
        )
        print(clusters.ClusterEnv._cluster_types[0].name, *found[:3])
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["kinetic", "h0:9", "4", "2"]
