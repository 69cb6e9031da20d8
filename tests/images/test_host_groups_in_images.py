"""A job of several hosts in a built accelerator image (issue 51): the bundled tpu image of a
multi-node job's requirements runs 2 hosts, each a runtime in its own container of the image
as the pods' user, told its place as a backend tells it; JAX joins them with
``jax.distributed.initialize()`` and no arguments and sums across both.

The image is the tpu image ``test_built_images`` builds (no user requirements: the same
context, so one build a session). No TPU exists here: ``jax[tpu]`` runs on its CPU, with
gloo collectives between the hosts. A gpu image is not built here at all (see
docs/testing.md: its base, ``uv python install`` and CUDA wheels are out of reach).
"""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from image_jobs import IMAGE_SITE, BucketJobs, BuildahImageBuilder, ImageRun, job_function

from kinetic_gke.images import resolve_image
from kinetic_protocol.accelerators import parse_accelerator
from kinetic_testing.fake_gcs import FakeGcsServer
from kinetic_testing.images.fixtures import ImageBuilds
from kinetic_testing.sockets import free_port

pytestmark = [
    pytest.mark.images,
    pytest.mark.accelerator_images,
    pytest.mark.gcs,
    pytest.mark.slow,
]

HOSTS = 2
TWO_HOST_PSUM = """
def two_host_psum():
    import os

    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    import jax

    jax.distributed.initialize()
    local = jax.local_device_count()
    mine = jax.numpy.full((local,), float(jax.process_index() + 1))
    summed = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")(mine)
    seen = {"psum": float(summed[0]), "process": jax.process_index(),
            "processes": jax.process_count(), "devices": jax.device_count()}
    print("PSUM", seen, flush=True)
    return {**seen, "jax": os.path.dirname(jax.__file__)}
"""
"""Two CPU devices per host; every device adds its host's ``index + 1``: 2 * 1 + 2 * 2."""


def test_a_two_host_jax_job_sums_across_both_hosts_in_the_built_tpu_image(
    image_builds: ImageBuilds, fake_gcs: FakeGcsServer, gcs_bucket: str, tmp_path: Path
) -> None:
    jobs = BucketJobs(gcs_bucket, fake_gcs.endpoint, tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    builder = BuildahImageBuilder(image_builds)
    resolved = resolve_image(
        container_image="bundled",
        base_image_repo=None,
        accelerator=parse_accelerator("tpu-v5litepod-2x4"),
        project_root=project,
        project="test",
        zone="us-central1-a",
        builder=builder,
    )
    image = builder.local_tags[resolved.uri]
    job_id = jobs.stage(job_function(TWO_HOST_PSUM, "two_host_psum"))
    group = {
        "KINETIC_NUM_HOSTS": str(HOSTS),
        "KINETIC_NUM_SLICES": "1",
        "KINETIC_COORDINATOR_ADDRESS": f"127.0.0.1:{free_port()}",
    }

    def host(index: int) -> ImageRun:
        place = {"KINETIC_HOST_INDEX": str(index), "KINETIC_HOST_INSTANCE": f"host{index}"}
        return jobs.run_in(image_builds, image, job_id, env={**group, **place})

    with ThreadPoolExecutor(HOSTS) as pool:
        leader, worker = pool.map(host, range(HOSTS))
    value = leader.value()
    assert value["jax"] == f"{IMAGE_SITE}/jax", "the image's JAX ran"
    assert (value["psum"], value["processes"], value["devices"]) == (6.0, 2, 4), leader.output
    assert worker.exit_code == 0, worker.output
    assert "PSUM {'psum': 6.0, 'process': 1, 'processes': 2, 'devices': 4}" in worker.output
