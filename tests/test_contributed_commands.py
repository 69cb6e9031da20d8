"""The commands kinetic-gke contributes (``kinetic.cli`` entry points) under the real ``kinetic``
command line: listed by ``kinetic --help`` with the names and options they always had, run
with the shell's settings, profile store, output and exit codes.

kinetic-gke's own tests run these commands under a stand-in host (without the client); these
check that the client hosts them the same way."""

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from kinetic.cli import _SUBCOMMANDS, cli, contributed_commands
from kinetic.cli.context import CliContext
from kinetic.config import resolve_settings
from kinetic_protocol import BackendSettings
from kinetic_protocol.commands import CommandHost

OPTIONS = {
    "up": {"dry_run", "max_cpu", "max_memory_gb", "profile_name"},
    "down": {"yes", "delete_bucket", "dry_run"},
    "status": {"as_json"},
    "init": {"yes"},
    "doctor": {"accelerator", "fuse", "as_json"},
    "build-image": {"categories", "repo", "python_version", "as_json"},
    "pool add": {
        "accelerator",
        "min_nodes",
        "max_nodes",
        "spot",
        "reservation",
        "flex_start",
        "pool_name",
        "dry_run",
    },
    "pool list": {"as_json"},
    "pool remove": {"name", "yes", "dry_run"},
}
"""Each command's own parameters, as they were when the client defined these commands."""
SHARED = {"backend", "project", "zone", "cluster", "namespace"}


def _command(path: str) -> click.Command:
    ctx = click.Context(cli)
    command: Any = cli
    for name in path.split():
        command = command.get_command(ctx, name)
        assert command is not None, path
    return command  # type: ignore[no-any-return]


def test_the_gke_commands_come_from_entry_points_not_from_the_shell() -> None:
    gke = {"up", "down", "status", "pool", "init", "doctor", "build-image"}
    assert gke.isdisjoint(_SUBCOMMANDS)
    contributed = contributed_commands()
    assert gke <= set(contributed)
    assert all(contributed[name].startswith("kinetic_gke.cli.") for name in gke)


def test_help_lists_them_with_their_options() -> None:
    listed = CliRunner().invoke(cli, ["--help"], prog_name="kinetic")
    assert listed.exit_code == 0, listed.output
    commands = listed.output.partition("Commands:")[2]
    for name in ("up", "down", "status", "pool", "init", "doctor", "build-image"):
        assert f"\n  {name} " in commands, name
    for path, own in OPTIONS.items():
        names = {param.name for param in _command(path).params}
        assert names == own | SHARED, path


def test_the_shell_is_their_host_and_keeps_profiles_it_resolves_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "KINETIC_PROJECT",
        "KINETIC_ZONE",
        "KINETIC_CLUSTER",
        "KINETIC_NAMESPACE",
        "KINETIC_PROFILE",
        "KINETIC_STORE",
        "KINETIC_BUILD_SERVICE_ACCOUNT",
        "KINETIC_QUEUES",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KINETIC_PROFILES_FILE", str(tmp_path / "profiles.json"))
    host = CliContext()
    assert isinstance(host, CommandHost)
    made = BackendSettings(project="p1", zone="europe-west4-a", cluster="c1", namespace="ns")
    host.save_profile("c1", made, build_service_account="b@p1.iam.gserviceaccount.com")

    resolved = resolve_settings(quiet=True)
    assert resolved.profile == "c1"
    assert resolved.build_service_account.value == "b@p1.iam.gserviceaccount.com"
    assert host.backend_settings() == BackendSettings(
        project="p1",
        zone="europe-west4-a",
        cluster="c1",
        namespace="ns",
        build_service_account="b@p1.iam.gserviceaccount.com",
    )
    assert CliContext(project="other").backend_settings().project == "other"

    # A backend's own setting resolves as the client's do, and `kinetic up` keeps it.
    from kinetic_gke.settings import QUEUES

    profiles = json.loads((tmp_path / "profiles.json").read_text())
    profiles["profiles"]["c1"]["queues"] = "team-a=2,team-b=1"
    (tmp_path / "profiles.json").write_text(json.dumps(profiles))
    assert host.setting(QUEUES) == "team-a=2,team-b=1"
    host.save_profile("c1", made)
    assert host.setting(QUEUES) == "team-a=2,team-b=1"
    monkeypatch.setenv("KINETIC_QUEUES", "solo")
    assert host.setting(QUEUES) == "solo"


def test_a_contributed_command_gets_the_shells_settings_output_and_exit_codes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kinetic_gke.cli import images

    for name in ("KINETIC_PROJECT", "GOOGLE_CLOUD_PROJECT", "KINETIC_ZONE", "KINETIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KINETIC_PROFILES_FILE", "/nonexistent/profiles.json")
    refused = CliRunner().invoke(cli, ["build-image"], prog_name="kinetic")
    assert refused.exit_code == 2  # the shell's exit code for a configuration error
    assert "KINETIC_PROJECT" in refused.output

    built: list[tuple[str, str, list[str]]] = []

    def build_base_images(categories: Any, repo: str, python: Any, builder: Any) -> list[str]:
        built.append((*builder, list(categories)))
        return [f"{repo}/kinetic-{category}:v" for category in categories]

    monkeypatch.setattr(images, "make_builder", lambda project, zone: (project, zone))
    monkeypatch.setattr("kinetic_gke.images.build_base_images", build_base_images)
    done = CliRunner().invoke(
        cli,
        ["build-image", "--project", "p2", "--category", "cpu", "--repo", "r", "--json"],
        prog_name="kinetic",
    )
    assert done.exit_code == 0, done.output
    assert built == [("p2", "us-central1-a", ["cpu"])]  # the shell's default zone
    assert json.loads(done.stdout) == {"images": ["r/kinetic-cpu:v"]}
