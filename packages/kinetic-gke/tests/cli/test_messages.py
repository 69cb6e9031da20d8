"""What the cluster commands say when the project or the Google credentials are missing: the
command that was run, and the one thing to do about it, never "unexpected"."""

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kinetic_testing.command_host import stand_in_command_line

NO_PROJECT_COMMANDS = [
    ("status",),
    ("doctor",),
    ("pool", "list"),
    ("down", "--dry-run"),
    ("init", "--yes"),
    ("up", "--dry-run"),
    ("pool", "add", "--accelerator", "l4", "--dry-run"),
]
NO_CREDENTIALS_COMMANDS = [
    ("status",),
    ("up", "--dry-run"),
    ("down", "--dry-run"),
    ("pool", "list"),
    ("pool", "add", "--accelerator", "l4", "--dry-run"),
    ("init", "--yes"),
]


def _kinetic(*args: str) -> Result:
    return CliRunner().invoke(stand_in_command_line, list(args), prog_name="kinetic")


@pytest.fixture
def bare_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No Kinetic settings at all, and Google credentials that do not exist (nothing is
    reached: the failures happen before any request)."""
    for name in list(os.environ):
        if name.startswith(("KINETIC_", "GOOGLE_", "CLOUDSDK_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("KINETIC_PROFILES_FILE", str(tmp_path / "profiles.json"))
    monkeypatch.setenv("KINETIC_ZONE", "us-central1-a")
    monkeypatch.setenv("KINETIC_CLUSTER", "kinetic-cluster")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-adc.json"))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))


@pytest.mark.parametrize("args", NO_PROJECT_COMMANDS, ids=" ".join)
def test_without_a_project_each_command_names_itself_and_how_to_set_the_project(
    bare_settings: None, args: tuple[str, ...]
) -> None:
    result = _kinetic(*args)
    assert result.exit_code == 2, result.output
    command = "kinetic " + " ".join(a for a in args if not a.startswith("-") and a != "l4")
    assert f"`{command}` needs a GCP project" in result.output
    assert f"{command} --project P" in result.output and "KINETIC_PROJECT" in result.output


@pytest.mark.parametrize("args", NO_CREDENTIALS_COMMANDS, ids=" ".join)
def test_without_credentials_each_command_says_to_log_in(
    bare_settings: None, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    monkeypatch.setenv("KINETIC_PROJECT", "kp-test")
    result = _kinetic(*args)
    assert result.exit_code == 2, (result.output, result.exception)
    assert "gcloud auth application-default login" in result.output
    assert "Unexpected" not in result.output


def test_doctor_shows_the_whole_credentials_advice(
    bare_settings: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Google's own message ends with where to read more; doctor cut it at "...for mor"."""
    from kinetic_gke.doctor import Context
    from kinetic_gke.doctor.checks import credentials
    from kinetic_gke.provision import ClusterSpec

    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS")
    (tmp_path / "no-gcloud").mkdir()
    for name in ("GCE_METADATA_HOST", "GCE_METADATA_IP"):  # no metadata server answers
        monkeypatch.setenv(name, "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_DETECT_RETRIES", "1")
    spec = ClusterSpec(project="kp-test", zone="us-central1-a", cluster="kinetic-cluster")
    outcome, message, fix = credentials(Context(spec))
    assert outcome == "FAIL" and fix == "gcloud auth application-default login"
    assert message.rstrip().endswith("for more information."), message


def test_a_long_google_api_message_is_kept_whole() -> None:
    from google.api_core import exceptions

    from kinetic_gke.gcp import google_error

    advice = "Enable billing for the project, then retry. " * 10 + "See the console for more."
    error = google_error(exceptions.FailedPrecondition(advice), "creating the cluster")
    assert advice in str(error)
