"""Settings resolve argument > KINETIC_* variable > active profile > default."""

import json
import logging
import os
from pathlib import Path

import pytest

from kinetic import _log
from kinetic.config import (
    DEFAULT_CLUSTER,
    DEFAULT_NAMESPACE,
    DEFAULT_ZONE,
    Profile,
    ProfilesFile,
    load_profiles,
    resolve_settings,
    save_profiles,
)
from kinetic_protocol import ConfigError, parse_accelerator


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No KINETIC_* or GCP settings from outside; a profiles file path of our own."""
    for name in list(os.environ):
        if name.startswith("KINETIC_") or name == "GOOGLE_CLOUD_PROJECT":
            monkeypatch.delenv(name)
    monkeypatch.setenv("KINETIC_HOME", str(tmp_path / "home"))
    profiles = tmp_path / "profiles.json"
    monkeypatch.setenv("KINETIC_PROFILES_FILE", str(profiles))
    monkeypatch.setattr(_log, "_noticed", set())
    return profiles


def _write_profiles(path: Path, active: str | None, **profiles: dict[str, str]) -> None:
    path.write_text(json.dumps({"active": active, "profiles": profiles}))


def test_an_argument_beats_env_beats_profile_beats_default(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_profiles(clean_env, "work", work={"zone": "profile-zone", "cluster": "profile-cluster"})
    monkeypatch.setenv("KINETIC_ZONE", "env-zone")
    settings = resolve_settings(zone="arg-zone", backend="local")
    assert (settings.zone.value, settings.zone.source) == ("arg-zone", "argument")

    settings = resolve_settings(backend="local")
    assert (settings.zone.value, settings.zone.source, settings.zone.origin) == (
        "env-zone",
        "env",
        "KINETIC_ZONE",
    )
    assert (settings.cluster.value, settings.cluster.source, settings.cluster.origin) == (
        "profile-cluster",
        "profile",
        "work",
    )
    assert (settings.namespace.value, settings.namespace.source) == (DEFAULT_NAMESPACE, "default")
    assert settings.profile == "work"


def test_defaults_apply_when_nothing_is_set() -> None:
    settings = resolve_settings(backend="local")
    assert settings.zone.value == DEFAULT_ZONE
    assert settings.cluster.value == DEFAULT_CLUSTER
    assert settings.namespace.value == DEFAULT_NAMESPACE
    assert settings.project.value is None
    assert settings.store.value is None


def test_google_cloud_project_comes_after_the_profile(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "gcloud-project")
    assert resolve_settings(backend="local").project.value == "gcloud-project"
    _write_profiles(clean_env, "work", work={"project": "profile-project"})
    assert resolve_settings(backend="local").project.value == "profile-project"
    monkeypatch.setenv("KINETIC_PROJECT", "env-project")
    assert resolve_settings(backend="local").project.value == "env-project"
    assert resolve_settings(backend="local", project="arg").project.value == "arg"


def test_kinetic_profile_selects_a_profile_over_the_files_active_one(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_profiles(clean_env, "a", a={"zone": "zone-a"}, b={"zone": "zone-b"})
    assert resolve_settings(backend="local").zone.value == "zone-a"
    monkeypatch.setenv("KINETIC_PROFILE", "b")
    assert resolve_settings(backend="local").zone.value == "zone-b"


def test_the_store_comes_from_kinetic_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KINETIC_STORE", "gs://my-bucket")
    settings = resolve_settings(backend="local")
    assert settings.store.value == "gs://my-bucket"
    assert settings.backend_settings().store_uri == "gs://my-bucket"


# --- which backend ------------------------------------------------------------------------


def test_with_a_project_configured_the_backend_defaults_to_gke(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    with caplog.at_level(logging.INFO):
        settings = resolve_settings()
    assert (settings.backend.value, settings.backend.source) == ("gke", "default")
    assert caplog.records == []


def test_a_profile_backend_beats_the_project_fallback(clean_env: Path) -> None:
    _write_profiles(clean_env, "w", w={"project": "p", "backend": "local"})
    assert resolve_settings().backend.value == "local"


def test_without_a_project_the_backend_is_local_and_one_line_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        first = resolve_settings()
        second = resolve_settings()
    assert first.backend.value == second.backend.value == "local"
    assert len(caplog.records) == 1
    record = caplog.records[0]
    assert record.name == "kinetic"
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert "\n" not in message
    assert "local" in message and "KINETIC_PROJECT" in message


def test_quiet_resolution_and_a_named_backend_say_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        resolve_settings(quiet=True)
        resolve_settings(backend="local")
    assert caplog.records == []


# --- the profiles file ----------------------------------------------------------------------


def test_a_missing_profiles_file_is_empty(clean_env: Path) -> None:
    assert not clean_env.exists()
    assert load_profiles() == ProfilesFile()


def test_profiles_round_trip_through_save(clean_env: Path) -> None:
    profiles = ProfilesFile(active="w", profiles={"w": Profile(project="p", zone="z")})
    save_profiles(profiles)
    assert load_profiles() == profiles
    assert json.loads(clean_env.read_text())["profiles"]["w"] == {"project": "p", "zone": "z"}


@pytest.mark.parametrize(
    ("content", "hint"),
    [
        ("{not json", "invalid"),
        ('{"profiles": {"w": {"projcet": "typo"}}}', "projcet"),
        ('{"profiles": {"w": {"zone": 3}}}', "zone"),
        ("[]", "invalid"),
    ],
    ids=["malformed", "unknown-key", "wrong-type", "not-an-object"],
)
def test_a_bad_profiles_file_is_a_config_error_naming_the_file(
    clean_env: Path, content: str, hint: str
) -> None:
    clean_env.write_text(content)
    with pytest.raises(ConfigError) as caught:
        resolve_settings(backend="local")
    message = str(caught.value)
    assert str(clean_env) in message
    assert hint in message


def test_an_active_profile_that_does_not_exist_lists_the_known_ones(clean_env: Path) -> None:
    _write_profiles(clean_env, "gone", work={"zone": "z"}, home={"zone": "y"})
    with pytest.raises(ConfigError, match=r"'gone'.*home, work"):
        resolve_settings(backend="local")


@pytest.mark.parametrize(
    ("accelerator", "chosen"),
    [("tpu-v5e-16", "pathways"), ("tpu-v5litepod-2x4", "pathways"), ("tpu-v5e-8", "gke")],
)
def test_with_a_project_the_shape_picks_pathways_or_gke(accelerator: str, chosen: str) -> None:
    shape = parse_accelerator(accelerator)
    settings = resolve_settings(project="p", accelerator=shape)
    assert (settings.backend.value, settings.backend.source) == (chosen, "default")
    named = resolve_settings(project="p", backend="gke", accelerator=shape)
    assert named.backend.value == "gke"  # a named backend is kept; gke itself then refuses
    assert resolve_settings(accelerator=shape, quiet=True).backend.value == "local"


# --- a profiles file written by another Kinetic version ---------------------------------------

_OTHER_VERSION = {
    "current": "dev-tpu",
    "profiles": {
        "dev-tpu": {
            "project": "p-tpu",
            "zone": "us-east5-b",
            "cluster": "tpus",
            "namespace": "ml",
            "state_backend": "gcs",
        },
        "other": {"project": "p-other", "zone": "us-central1-a", "cluster": "c"},
    },
}


def test_the_active_profile_another_version_stored_as_current_is_used(clean_env: Path) -> None:
    clean_env.write_text(json.dumps(_OTHER_VERSION))
    settings = resolve_settings()
    assert settings.profile == "dev-tpu"
    assert (settings.project.value, settings.project.source) == ("p-tpu", "profile")
    assert (settings.cluster.value, settings.namespace.value) == ("tpus", "ml")


def test_writing_keeps_the_other_versions_key_and_fields_in_step(clean_env: Path) -> None:
    clean_env.write_text(json.dumps(_OTHER_VERSION))
    profiles = load_profiles()
    profiles.active = "other"
    save_profiles(profiles)
    written = json.loads(clean_env.read_text())
    assert (written["active"], written["current"]) == ("other", "other")
    assert written["profiles"]["dev-tpu"]["state_backend"] == "gcs"


def test_an_unreadable_profiles_file_is_a_config_error_saying_so(clean_env: Path) -> None:
    clean_env.mkdir()  # a path that exists but cannot be read as a file
    with pytest.raises(ConfigError) as caught:
        resolve_settings(backend="local")
    assert str(clean_env) in str(caught.value)
    assert "cannot be read" in str(caught.value)


def test_the_build_service_account_comes_from_the_profile_and_the_variable_wins(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = "kn-c-build@p.iam.gserviceaccount.com"
    clean_env.write_text(
        json.dumps(
            {
                "active": "c",
                "profiles": {"c": {"project": "p", "build_service_account": account}},
            }
        )
    )
    found = resolve_settings()
    assert (found.build_service_account.value, found.build_service_account.source) == (
        account,
        "profile",
    )
    monkeypatch.setenv("KINETIC_BUILD_SERVICE_ACCOUNT", "other@p.iam.gserviceaccount.com")
    assert resolve_settings().build_service_account.value == "other@p.iam.gserviceaccount.com"
    assert dict(resolve_settings().items())["build_service_account"].source == "env"


def test_the_kinetic_home_has_one_definition_the_client_and_the_store_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kinetic.config.kinetic_home`` is the runtime's, and the default local store is in it
    (a relative ``KINETIC_HOME`` taken from the current directory)."""
    from kinetic import config
    from kinetic_runtime import settings as runtime_settings
    from kinetic_runtime.stores import default_local_store_uri

    assert config.kinetic_home is runtime_settings.kinetic_home
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KINETIC_HOME", "relative-home")
    assert config.kinetic_home() == tmp_path / "relative-home"
    assert default_local_store_uri() == (tmp_path / "relative-home" / "store").as_uri()
