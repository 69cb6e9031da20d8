"""The runtime never takes variable values from the stored call: the backend set them."""

import os
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
