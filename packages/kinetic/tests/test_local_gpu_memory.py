"""Local jobs share this machine's GPUs with each other and with the submitter: on a machine
with GPUs they take memory as they need it, not all at start, unless the job says otherwise.
(On an H200, a batch of four JAX jobs lost one to out-of-memory before this.)"""

import sys
from pathlib import Path

import pytest

import kinetic

sys.path.insert(0, str(Path(__file__).resolve().parent))

import multihost_userfuncs as uf

pytestmark = pytest.mark.usefixtures("clean_kinetic_env")


def _memory_view(captured: list[str] | None = None) -> tuple[str | None, str | None]:
    remote = kinetic.run(accelerator="cpu", backend="local", capture_env_vars=captured)(
        uf.gpu_memory_view
    )
    view: tuple[str | None, str | None] = remote()
    return view


def test_on_a_machine_with_gpus_jobs_take_memory_as_they_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert _memory_view() == ("false", "true")


def test_a_setting_the_job_captured_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")
    assert _memory_view(["XLA_PYTHON_CLIENT_PREALLOCATE"]) == ("true", "true")


def test_without_gpus_nothing_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert _memory_view() == (None, None)
