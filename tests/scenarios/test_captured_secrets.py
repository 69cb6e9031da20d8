"""Captured variables reach the job, never the store; nothing else of the submitter does."""

import hashlib
import secrets
from pathlib import Path

import pytest
import scenario_funcs as uf
from scenario_support import ScenarioBackend

from kinetic_protocol import ObjectStore, layout
from kinetic_testing.signed import read_call


def _every_object(store: ObjectStore) -> dict[str, bytes]:
    return {key: store.read(key) for key in store.list("")}


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _files_under(root: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Variables of the submitter: two to capture (one by name, one by pattern), one not."""
    values = {
        "SCN_SECRET": f"exact-{secrets.token_hex(16)}",
        "SCN_PREFIX_TOKEN": f"pattern-{secrets.token_hex(16)}",
        "SCN_NOT_CAPTURED": f"stray-{secrets.token_hex(16)}",
    }
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def test_captured_values_reach_the_job_and_never_the_store(
    kinetic_backend: ScenarioBackend, secret_env: dict[str, str], isolated_kinetic: Path
) -> None:
    remote = kinetic_backend.decorate(capture_env_vars=["SCN_SECRET", "SCN_PREFIX_*"])(
        uf.env_digests
    )
    job = remote.run_async("SCN_")
    job.wait(timeout=120)
    store = kinetic_backend.store()
    key = layout.call_key(job.job_id)
    call = read_call(store, job.job_id)
    assert (call.env_names, call.env) == (["SCN_PREFIX_TOKEN", "SCN_SECRET"], {})
    objects = _every_object(store)
    assert key in objects and layout.result_key(job.job_id) in objects
    for name in ("SCN_SECRET", "SCN_PREFIX_TOKEN"):
        value = secret_env[name].encode()
        leaked = [k for k, data in objects.items() if value in data]
        assert not leaked, f"{name}'s value is in {leaked}"
        # Nor anywhere Kinetic keeps files on this machine (a local job's directory).
        leaked_files = [p for p, data in _files_under(isolated_kinetic).items() if value in data]
        assert not leaked_files, f"{name}'s value is in {leaked_files}"
    seen = job.result()
    assert seen.get("SCN_SECRET") == _digest(secret_env["SCN_SECRET"])
    assert seen.get("SCN_PREFIX_TOKEN") == _digest(secret_env["SCN_PREFIX_TOKEN"])
    if kinetic_backend.name != "example":  # a third-party sample that passes os.environ on
        assert "SCN_NOT_CAPTURED" not in seen


def test_a_local_job_sees_only_captured_variables_and_what_it_needs_here(
    local_backend: ScenarioBackend, secret_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "never-passed")
    remote = local_backend.decorate(capture_env_vars=["SCN_SECRET"])(uf.env_snapshot)
    seen = remote("")
    assert seen["SCN_SECRET"] == secret_env["SCN_SECRET"]
    assert "SCN_NOT_CAPTURED" not in seen and "SCN_PREFIX_TOKEN" not in seen
    assert "AWS_SECRET_ACCESS_KEY" not in seen
    assert seen["LC_ALL"] == "C.UTF-8"  # the locale is this machine's to give
    assert seen["KINETIC_ENV"] == "local"
    assert "PATH" in seen and "HOME" in seen


def test_a_local_job_keeps_no_copy_of_its_captured_values_once_started(
    local_backend: ScenarioBackend, secret_env: dict[str, str], isolated_kinetic: Path
) -> None:
    remote = local_backend.decorate(capture_env_vars=["SCN_SECRET"])(uf.env_digests)
    job = remote.run_async("SCN_")
    job.wait(timeout=120)
    job_dir = isolated_kinetic / "local" / "jobs" / job.job_id
    assert job_dir.is_dir()  # kept until cleanup, as a failed job's would be
    assert not (job_dir / "captured-env.json").exists()
    for name in ("SCN_SECRET", "SCN_NOT_CAPTURED"):  # nor the submitter's other variables
        value = secret_env[name].encode()
        assert not [p for p, data in _files_under(job_dir).items() if value in data], name
