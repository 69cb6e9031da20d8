"""The ``example`` backends of the scenario suite: registered through a real entry point.

A ``.dist-info`` directory whose ``entry_points.txt`` names ``example_backend:ExampleBackend``
(and its ``gs://`` flavour, ``example-gcs``) is put on ``sys.path`` (and ``PYTHONPATH``, for
scripts run in subprocesses), which is exactly how an installed third-party package registers
a backend.
"""

import importlib
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import pytest

import kinetic.backends

__all__ = ["example_gcs_scenario_env", "example_scenario_env"]

_HERE = Path(__file__).resolve().parent


@pytest.fixture
def example_scenario_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    site = tmp_path / "site"
    dist_info = site / "kinetic_example_backend-0.1.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: kinetic-example-backend\nVersion: 0.1\n"
    )
    (dist_info / "entry_points.txt").write_text(
        "[kinetic.backends]\nexample = example_backend:ExampleBackend\n"
        "example-gcs = example_backend:ExampleGcsBackend\n"
    )
    monkeypatch.syspath_prepend(str(site))
    path = os.pathsep.join([str(site), str(_HERE), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path.rstrip(os.pathsep))
    importlib.invalidate_caches()
    kinetic.backends.available_backends.cache_clear()
    try:
        yield site
    finally:
        for pid_file in Path(os.environ["KINETIC_HOME"]).glob("example/*/pid"):
            with suppress(FileNotFoundError, ValueError, ProcessLookupError):
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)
        kinetic.backends.available_backends.cache_clear()
        if str(site) in sys.path:
            sys.path.remove(str(site))


@pytest.fixture
def example_gcs_scenario_env(
    example_scenario_env: Path, gcs_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The example backend's ``gs://`` flavour: its jobs' store is a fresh fake-gcs-server
    bucket, and local data is uploaded there as for a pod."""
    monkeypatch.setenv("KINETIC_STORE", gcs_bucket)
    return example_scenario_env
