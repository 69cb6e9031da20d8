"""`kinetic init`: credentials and tools, the project's clusters, then join, create or
troubleshoot; non-interactive with --yes, interactive through the prompt."""

import json
import os
from pathlib import Path

import pytest
from provision_support import PROJECT, ZONE, Invoke, mutations, ok

from kinetic_testing.gcp_fake import FakeGoogleCloud

pytestmark = [pytest.mark.realk8s, pytest.mark.gcs]


def _profiles() -> dict[str, object]:
    path = Path(os.environ["KINETIC_PROFILES_FILE"])
    return json.loads(path.read_text()) if path.exists() else {}  # type: ignore[no-any-return]


def _forget_profiles() -> None:
    Path(os.environ["KINETIC_PROFILES_FILE"]).unlink()


def test_yes_on_a_new_project_creates_the_cluster(
    up_env: FakeGoogleCloud, kinetic: Invoke, cluster_name: str
) -> None:
    out = ok(kinetic("init", "--yes"))
    assert "APIs off" in out and f"Clusters in {PROJECT}: none" in out
    assert "Done." in out
    assert up_env.container.cluster(PROJECT, ZONE, cluster_name) is not None
    assert _profiles()["active"] == cluster_name


def test_yes_joins_the_cluster_that_exists_without_changing_anything(
    up_env: FakeGoogleCloud, kinetic: Invoke, cluster_name: str
) -> None:
    ok(kinetic("up"))
    _forget_profiles()
    before = len(up_env.calls)
    out = ok(kinetic("init", "--yes"))
    assert mutations(up_env.calls[before:]) == []
    assert f"{cluster_name} ({ZONE})" in out
    assert f"gcloud container clusters get-credentials {cluster_name}" in out
    profiles = _profiles()
    assert profiles["active"] == cluster_name
    profile = profiles["profiles"][cluster_name]  # type: ignore[index]
    assert profile["project"] == PROJECT
    assert profile["build_service_account"].startswith(f"kn-{cluster_name}-build@")


def test_interactive_join_and_troubleshoot_answered_at_the_prompt(
    up_env: FakeGoogleCloud, kinetic: Invoke, cluster_name: str, kubeconfig: Path
) -> None:
    ok(kinetic("up"))
    _forget_profiles()
    joined = ok(kinetic("init", input="join\n"))
    assert f"Join cluster {cluster_name} ({ZONE}), create it, or troubleshoot?" in joined
    assert "(join, create, troubleshoot)" in joined  # the word the detached-jobs guide uses
    assert _profiles()["active"] == cluster_name
    for answer in ("troubleshoot", "diagnose"):  # the guide's word, and the older one
        diagnosed = ok(kinetic("init", input=f"{answer}\n"))
        assert "PASS  kube-context" in diagnosed and "FAIL" not in diagnosed


def test_interactive_join_of_a_cluster_that_does_not_exist_says_so(
    up_env: FakeGoogleCloud, kinetic: Invoke
) -> None:
    refused = kinetic("init", input="join\n")
    assert refused.exit_code == 2  # a configuration problem, as click usage errors
    assert "nothing to join" in refused.output
    assert _profiles() == {}


def test_an_unknown_answer_is_asked_again(up_env: FakeGoogleCloud, kinetic: Invoke) -> None:
    out = ok(kinetic("init", input="maybe\ncreate\n"))
    assert "'maybe' is not one of 'join', 'create', 'troubleshoot'" in out
    assert "Done." in out


def test_without_credentials_init_stops_with_the_login_command(
    up_env: FakeGoogleCloud, kinetic: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KINETIC_GCP_API_ENDPOINT")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/adc.json")
    failed = kinetic("init", "--yes")
    assert failed.exit_code == 2
    assert "gcloud auth application-default login" in failed.output
    assert up_env.calls == []
