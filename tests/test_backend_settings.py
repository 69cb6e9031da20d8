"""A backend gets its declared settings resolved, with where each came from, when the client
builds it; the client reuses a built backend only while those settings are unchanged."""

import pytest

from kinetic.backends import get_backend
from kinetic_protocol import BackendSettings
from kinetic_protocol.settings import ResolvedSetting

SETTINGS = BackendSettings(project="my-proj", zone="europe-west4-a", cluster="train")


def test_a_changed_setting_of_a_backend_builds_a_fresh_one(
    clean_kinetic_env: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_POD_CPU", "2")
    first = get_backend("gke", SETTINGS)
    assert get_backend("gke", SETTINGS) is first
    monkeypatch.setenv("KINETIC_POD_CPU", "3")
    second = get_backend("gke", SETTINGS)
    assert second is not first
    assert (first.pod_options.cpu, second.pod_options.cpu) == ("2", "3")  # type: ignore[attr-defined]
    monkeypatch.setenv("KINETIC_SOMETHING_ELSE", "x")  # not one of its settings
    assert get_backend("gke", SETTINGS) is second


def test_the_backend_is_built_with_its_settings_and_their_provenance(
    clean_kinetic_env: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_SERVICE_ACCOUNT", "runner")
    built = get_backend("pathways", SETTINGS)
    declared = {setting.env: setting for setting in built._settings.declared}  # type: ignore[attr-defined]
    assert declared["KINETIC_SERVICE_ACCOUNT"] == ResolvedSetting(
        env="KINETIC_SERVICE_ACCOUNT", value="runner", source="env"
    )
    assert declared["KINETIC_GKE_POLL"] == ResolvedSetting(
        env="KINETIC_GKE_POLL", value="1,10", source="default"
    )
    assert declared["KINETIC_POD_MEMORY"].source == "unset"
    assert built.pod_options.service_account == "runner"  # type: ignore[attr-defined]
