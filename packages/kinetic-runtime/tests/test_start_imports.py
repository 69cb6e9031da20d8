"""What a job loads before the user's code: every job start pays for it, in a pod and locally.

``tools/bench/job_local.py`` reports the time; this keeps the heavy parts out for good, by name,
since a timed assertion would only measure the machine.
"""

import json
import os
import subprocess
import sys

import pytest
from runtime_jobs import JobStage, pickled_call

from kinetic_protocol import layout
from kinetic_runtime.stores import open_store

_PROBE = """
import json, sys
import kinetic_runtime.main
print(json.dumps(sorted(sys.modules)))
"""

NOT_AT_START = [
    "kinetic_runtime.stores.gcs",  # a file:// job never opens a bucket
    "kinetic_runtime.data.stage",  # most jobs have no Data to stage
    "kinetic_runtime.data.transfer",
    "kinetic_runtime.data.namespace",
    "kinetic_runtime.debugging",  # only debug=True jobs
    "kinetic_protocol.accelerators",  # the client's catalogue, not the job's
    "kinetic_protocol.backend",
    "google",
    "http.client",
    "urllib.request",
    "concurrent.futures",
    "subprocess",  # only a job with requirements to install, or a debug job
]


@pytest.fixture(scope="module")
def loaded_at_start() -> set[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-I", "-c", _PROBE], capture_output=True, text=True, env=env, check=True
    )
    return set(json.loads(done.stdout))


@pytest.mark.parametrize("module", NOT_AT_START)
def test_the_runtime_entrypoint_does_not_load_at_start(
    loaded_at_start: set[str], module: str
) -> None:
    assert module not in loaded_at_start
    assert "kinetic_runtime.main" in loaded_at_start  # the probe did import it


@pytest.mark.gcs
def test_a_gs_job_imports_the_storage_client_once_for_both_its_processes(
    jobs: JobStage, gcs_bucket: str
) -> None:
    """The runtime forks the keeper of the job's output before the job first uses its store:
    unless the library is loaded before the fork, each process imports it (0.2 s of CPU)."""
    jobs.stage("once", pickled_call(divmod, 7, 2))
    bucket = open_store(gcs_bucket)
    for key in jobs.store.list(""):
        bucket.write(key, jobs.store.read(key))

    run = jobs.run("once", store_uri=gcs_bucket, env={"PYTHONPROFILEIMPORTTIME": "1"})

    assert run.exit_code == 0 and bucket.exists(layout.result_key("once")), run.output
    imports = [line for line in run.output.splitlines() if line.endswith("| google.cloud.storage")]
    assert len(imports) == 1, "\n".join(imports)
