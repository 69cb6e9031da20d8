"""The install phase: a prebuilt image's requirements go into the job's interpreter with uv.

No network: the requirement is a wheel built here, uv runs offline, and the job runs in a
throwaway virtual environment layered on this one, so nothing is installed into the
workspace's own environment.
"""

import base64
import hashlib
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Callable
from pathlib import Path

import cloudpickle
import pytest
from runtime_jobs import JobStage, pickled_call

from kinetic_protocol import Failed, Succeeded

PROBE = "kinetic_install_probe"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _build_wheel(folder: Path) -> Path:
    """A minimal pure-Python wheel of ``kinetic_install_probe`` 0.1 (VALUE = 42)."""
    info = f"{PROBE}-0.1.dist-info"
    files = {
        f"{PROBE}/__init__.py": b"VALUE = 42\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {PROBE}\nVersion: 0.1\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: kinetic-tests\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [_record_line(name, data) for name, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = folder / f"{PROBE}-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return wheel


def _job_python(folder: Path) -> str:
    """A fresh venv whose ``sys.path`` ends with this environment's packages (the runtime)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    workspace = sysconfig.get_paths()["purelib"]
    Path(own, "_kinetic_tests_workspace.pth").write_text(
        f"import site; site.addsitedir({workspace!r})\n"
    )
    return str(python)


def _probe_importer() -> Callable[[], tuple[int, str]]:
    """A function the job imports the probe with (nested, so it is pickled by value)."""

    def import_probe() -> tuple[int, str]:
        import kinetic_install_probe  # type: ignore[import-not-found]

        value: int = kinetic_install_probe.VALUE
        return value, str(kinetic_install_probe.__file__)

    return import_probe


@pytest.fixture
def offline_uv(tmp_path: Path) -> dict[str, str]:
    return {"UV_OFFLINE": "1", "UV_CACHE_DIR": str(tmp_path / "uv-cache"), "UV_NO_CONFIG": "1"}


def test_requirements_are_installed_before_the_function_runs(
    jobs: JobStage, tmp_path: Path, offline_uv: dict[str, str]
) -> None:
    wheel = _build_wheel(tmp_path)
    python = _job_python(tmp_path / "venv")
    payload = pickled_call(_probe_importer())
    staged = jobs.stage("job-install", payload, requirements=[str(wheel)])
    run = jobs.run(staged, python=python, env=offline_uv)
    assert run.exit_code == 0, run.output
    assert isinstance(run.envelope, Succeeded)
    value, location = cloudpickle.loads(run.envelope.value)
    assert value == 42
    assert Path(location).is_relative_to(tmp_path / "venv")  # the job's interpreter, not ours


def test_a_failing_install_fails_the_job_in_phase_install(
    jobs: JobStage, tmp_path: Path, offline_uv: dict[str, str]
) -> None:
    python = _job_python(tmp_path / "venv")
    missing = tmp_path / f"{PROBE}-9.9-py3-none-any.whl"
    staged = jobs.stage(
        "job-bad-install", pickled_call(_probe_importer()), requirements=[str(missing)]
    )
    run = jobs.run(staged, python=python, env=offline_uv)
    assert run.exit_code == 2, run.output
    assert isinstance(run.envelope, Failed)
    assert run.envelope.phase == "install"
    assert "installing" in run.envelope.message and str(missing) in run.envelope.message
