"""The runtime never takes variable values from the stored call: the backend set them."""

import os
import sys
from pathlib import Path

import pytest

from kinetic_protocol import ArtifactRef, CallDescriptor
from kinetic_runtime.workspace import apply_environment, missing_env


def _call(**fields: object) -> CallDescriptor:
    payload = ArtifactRef(key="jobs/j/payload.pkl", sha256="0" * 64, size=1)
    return CallDescriptor(job_id="j", func_name="f", payload=payload, **fields)  # type: ignore[arg-type]


def test_values_in_an_old_calls_env_field_are_never_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("PLANTED", "KINETIC_OUTPUT_DIR", "KINETIC_JOB_ID"):  # restored afterwards
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PATH", os.environ.get("PATH", ""))  # restored after apply_environment
    call = _call(env={"PLANTED": "from-the-store", "PATH": "/evil"})
    apply_environment(call, tmp_path, str(tmp_path / "out"), "j")
    assert "PLANTED" not in os.environ
    assert os.environ["PATH"] != "/evil"


def test_missing_env_names_what_the_call_promised_and_the_process_lacks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GIVEN", "1")
    monkeypatch.delenv("NOT_GIVEN", raising=False)
    assert missing_env(_call(env_names=["GIVEN", "NOT_GIVEN"])) == ["NOT_GIVEN"]


def _apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: CallDescriptor) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in ("KINETIC_OUTPUT_DIR", "KINETIC_JOB_ID"):  # restored afterwards
        monkeypatch.setenv(name, "")
    apply_environment(call, tmp_path, str(tmp_path / "out"), "j")


def test_keras_runs_on_jax_in_a_job_given_no_keras_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    _apply(tmp_path, monkeypatch, _call())
    assert os.environ["KERAS_BACKEND"] == "jax"


def test_a_keras_backend_the_job_was_given_wins_over_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The backend put the captured value in the process's environment (a pod's Secret, a
    local job's captured file); the default must not replace it."""
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    _apply(tmp_path, monkeypatch, _call(env_names=["KERAS_BACKEND"]))
    assert os.environ["KERAS_BACKEND"] == "torch"
