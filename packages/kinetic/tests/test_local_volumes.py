"""Local volumes are refused at submit, naming the alternative, where a job could not have
them: a machine without private mount namespaces, or a path that would hide the job's own."""

from pathlib import Path

import pytest

import kinetic
from kinetic.local import volumes


def _identity(x: object) -> object:
    return x


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean_kinetic_env: Path) -> Path:
    monkeypatch.setenv("KINETIC_STORE", f"file://{tmp_path / 'store'}")
    volumes._namespace_problem.cache_clear()
    yield tmp_path / "store"
    volumes._namespace_problem.cache_clear()


def test_a_machine_without_private_mount_namespaces_refuses_local_volumes_at_submit(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the probe answers on, e.g., Ubuntu 24.04 with AppArmor's default policy.
    monkeypatch.setattr(volumes, "probe", lambda python: "unshare(...): Operation not permitted")
    remote = kinetic.run(
        accelerator="cpu", backend="local", volumes={"/data": kinetic.Data(str(tmp_path))}
    )(_identity)
    with pytest.raises(kinetic.ConfigError) as caught:
        remote.run_async(1)
    message = str(caught.value)
    assert "Operation not permitted" in message
    assert "Pass the kinetic.Data as a function argument instead" in message
    assert not (store / "jobs").exists(), "nothing was submitted"


def test_a_volume_that_would_hide_kinetics_own_directories_is_refused(
    store: Path, clean_kinetic_env: Path
) -> None:
    remote = kinetic.run(
        accelerator="cpu",
        backend="local",
        volumes={str(clean_kinetic_env.parent): kinetic.Data(str(store.parent))},
    )(_identity)
    with pytest.raises(kinetic.ConfigError, match=r"would hide .*which local jobs need"):
        remote.run_async(1)


def test_the_probe_runs_once_a_process(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    monkeypatch.setattr(volumes, "probe", calls.append)
    for _ in range(3):
        volumes.check_volumes(["/data"], "/usr/bin/python3", "file:///elsewhere")
    assert len(calls) == 1
