"""What a job loads before the user's code: every job start pays for it, in a pod and locally.

``tools/bench/job_local.py`` reports the time; this keeps the heavy parts out for good, by name,
since a timed assertion would only measure the machine.
"""

import json
import os
import subprocess
import sys

import pytest

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
