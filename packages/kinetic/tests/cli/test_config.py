"""``kinetic config show`` and ``kinetic profile ...``."""

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.usefixtures("kinetic_env")


@pytest.fixture(autouse=True)
def no_profiles(kinetic_env: Path) -> None:
    """Every test starts without a profiles file."""
    (kinetic_env / "profiles.json").unlink(missing_ok=True)


def _json(result: Any) -> Any:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_profile_create_ls_use_show_rm(invoke, kinetic_env: Path) -> None:
    created = invoke("profile", "create", "dev", "--project", "p-dev", "--zone", "europe-west4-a")
    assert created.exit_code == 0, created.stderr
    assert (
        invoke("profile", "create", "prod", "--project", "p-prod", "--backend", "gke").exit_code
        == 0
    )
    stored = json.loads((kinetic_env / "profiles.json").read_text())
    assert stored["profiles"]["dev"] == {"project": "p-dev", "zone": "europe-west4-a"}
    assert "active" not in stored

    listed = _json(invoke("profile", "ls", "--json"))
    assert [(p["name"], p["active"]) for p in listed] == [("dev", False), ("prod", False)]
    assert invoke("profile", "use", "prod").exit_code == 0
    table = invoke("profile", "ls").stdout.splitlines()
    assert table[2].split()[:4] == ["*", "prod", "gke", "p-prod"]

    shown = _json(invoke("profile", "show", "--json"))
    assert shown == {
        "name": "prod",
        "active": True,
        "backend": "gke",
        "project": "p-prod",
        "zone": None,
        "cluster": None,
        "namespace": None,
        "queue": None,
        "priority": None,
        "queues": None,
    }
    human = invoke("profile", "show", "dev")
    assert "Profile:   dev" in human.stdout
    assert "Zone:      europe-west4-a" in human.stdout

    assert invoke("profile", "rm", "prod").exit_code == 0
    remaining = json.loads((kinetic_env / "profiles.json").read_text())
    assert list(remaining["profiles"]) == ["dev"]
    assert remaining.get("active") is None


def test_create_with_use_activates_it(invoke) -> None:
    assert invoke("profile", "create", "ci", "--backend", "local", "--use").exit_code == 0
    assert _json(invoke("profile", "show", "--json"))["name"] == "ci"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["profile", "use", "ghost"], "No profile 'ghost'"),
        (["profile", "show", "ghost"], "No profile 'ghost'"),
        (["profile", "rm", "ghost"], "No profile 'ghost'"),
        (["profile", "show"], "No active profile"),
        (["profile", "create", "bad name"], "'bad name'"),
        (["profile", "create", "x", "--backend", "gkee"], "Unknown backend 'gkee'"),
    ],
)
def test_profile_mistakes_are_exit_2_with_one_clear_line(invoke, args, message) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_creating_an_existing_profile_needs_force(invoke) -> None:
    assert invoke("profile", "create", "dev", "--project", "a").exit_code == 0
    again = invoke("profile", "create", "dev", "--project", "b")
    assert again.exit_code == 2
    assert "--force" in again.stderr
    assert invoke("profile", "create", "dev", "--project", "b", "--force").exit_code == 0
    assert _json(invoke("profile", "show", "dev", "--json"))["project"] == "b"


def test_config_show_says_where_each_setting_came_from(
    invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (
        invoke(
            "profile", "create", "dev", "--project", "p-dev", "--backend", "local", "--use"
        ).exit_code
        == 0
    )
    monkeypatch.setenv("KINETIC_CLUSTER", "from-env")
    document = _json(invoke("--zone", "asia-east1-b", "config", "show", "--json"))
    settings = {
        name: {key: entry[key] for key in ("value", "source", "origin")}
        for name, entry in document["settings"].items()
    }
    assert settings["zone"] == {"value": "asia-east1-b", "source": "argument", "origin": ""}
    assert settings["cluster"] == {
        "value": "from-env",
        "source": "env",
        "origin": "KINETIC_CLUSTER",
    }
    assert settings["project"] == {"value": "p-dev", "source": "profile", "origin": "dev"}
    assert settings["namespace"]["source"] == "default"
    assert document["settings"]["cluster"]["env"] == "KINETIC_CLUSTER"
    assert document["profile"] == "dev"
    rows = {
        line.split()[0]: line.split()
        for line in invoke("config", "show").stdout.splitlines()
        if line.strip()
    }
    assert rows["project"] == ["project", "p-dev", "profile", "profile", "'dev'", "KINETIC_PROJECT"]
    assert rows["cluster"] == ["cluster", "from-env", "env", "$KINETIC_CLUSTER", "KINETIC_CLUSTER"]


def test_config_show_explains_the_queue_and_the_priority_class(
    invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``queue`` from a profile (made with ``--queue``), ``priority`` from its variable."""
    created = invoke("profile", "create", "team", "--queue", "team-a", "--priority", "low", "--use")
    assert created.exit_code == 0, created.stderr
    monkeypatch.setenv("KINETIC_PRIORITY", "high")
    settings = _json(invoke("config", "show", "--json"))["settings"]
    assert {key: settings["queue"][key] for key in ("value", "source", "origin", "env")} == {
        "value": "team-a",
        "source": "profile",
        "origin": "team",
        "env": "KINETIC_QUEUE",
    }
    assert {key: settings["priority"][key] for key in ("value", "source", "origin")} == {
        "value": "high",
        "source": "env",
        "origin": "KINETIC_PRIORITY",
    }
    monkeypatch.delenv("KINETIC_PRIORITY")
    rows = {
        line.split()[0]: line.split()
        for line in invoke("config", "show").stdout.splitlines()
        if line.strip()
    }
    assert rows["priority"] == [
        "priority",
        "low",
        "profile",
        "profile",
        "'team'",
        "KINETIC_PRIORITY",
    ]


@pytest.mark.parametrize(("option", "value"), [("--queue", "Team A"), ("--priority", "-high")])
def test_a_profile_with_a_malformed_queue_or_class_is_refused(
    invoke, option: str, value: str
) -> None:
    result = invoke("profile", "create", "bad", option, value)
    assert result.exit_code == 2
    assert repr(value) in result.stderr and option in result.stderr
    assert invoke("profile", "ls", "--json").stdout.strip() == "[]"


def test_config_show_lists_every_declared_variable_with_its_source(
    invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Backend settings (gke's, the local backend's) and the runtime's are listed too."""
    from kinetic.settings import registry

    monkeypatch.setenv("KINETIC_SERVICE_ACCOUNT", "runner")
    document = _json(invoke("config", "show", "--json"))
    listed = {entry["env"]: entry for entry in document["settings"].values()}
    assert set(listed) == {spec.env for spec in registry()}
    assert {"KINETIC_SERVICE_ACCOUNT", "KINETIC_LOCAL_SLOTS", "KINETIC_OUTPUT_DIR"} <= set(listed)
    assert listed["KINETIC_SERVICE_ACCOUNT"]["value"] == "runner"
    assert listed["KINETIC_SERVICE_ACCOUNT"]["source"] == "env"
    assert listed["KINETIC_SERVICE_ACCOUNT"]["owner"] == "kinetic-gke"
    assert listed["KINETIC_UNSCHEDULABLE_TIMEOUT"] | {"help": ""} == {
        "value": "900",
        "source": "default",
        "origin": "",
        "env": "KINETIC_UNSCHEDULABLE_TIMEOUT",
        "owner": "kinetic-gke",
        "kind": "setting",
        "help": "",
    }


def test_config_show_defaults_to_the_local_backend_without_a_project(invoke) -> None:
    document = _json(invoke("config", "show", "--json"))
    assert document["settings"]["backend"] | {"help": ""} == {
        "value": "local",
        "source": "default",
        "origin": "no GCP project is configured",
        "env": "KINETIC_BACKEND",
        "owner": "kinetic",
        "kind": "setting",
        "help": "",
    }


def test_config_show_of_an_unknown_backend_is_exit_2(invoke) -> None:
    result = invoke("--backend", "gkee", "config", "show")
    assert result.exit_code == 2
    assert "Backend 'gkee' (from command-line option) is not installed" in result.stderr


def test_a_missing_active_profile_is_exit_2(invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KINETIC_PROFILE", "ghost")
    result = invoke("config", "show")
    assert result.exit_code == 2
    assert "Active profile 'ghost' does not exist" in result.stderr


def test_a_malformed_profiles_file_is_exit_2(invoke, kinetic_env: Path) -> None:
    (kinetic_env / "profiles.json").write_text('{"profiles": {"dev": {"projekt": "x"}}}')
    result = invoke("profile", "ls")
    assert result.exit_code == 2
    assert "is invalid" in result.stderr


def test_subprocess_profile_then_config_show(run_cli) -> None:
    created = run_cli(
        "profile", "create", "dev", "--project", "p-sub", "--backend", "local", "--use"
    )
    assert created.returncode == 0, created.stderr
    shown = run_cli("config", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    project = document["settings"]["project"]
    assert (project["value"], project["source"], project["origin"]) == ("p-sub", "profile", "dev")
    assert document["settings"]["backend"]["value"] == "local"


def test_the_cluster_options_are_taken_after_the_subcommand_too(invoke) -> None:
    """``kinetic config show --project P`` is ``kinetic --project P config show``; given in
    both places, the one nearer the command wins."""
    after = _json(invoke("config", "show", "--project", "p-after", "--zone", "z-1", "--json"))
    assert after["settings"]["project"]["value"] == "p-after"
    assert after["settings"]["project"]["source"] == "argument"
    assert after["settings"]["zone"]["value"] == "z-1"
    both = _json(invoke("--project", "p-before", "config", "show", "--project", "p-near", "--json"))
    assert both["settings"]["project"]["value"] == "p-near"
    listed = invoke("jobs", "list", "--backend", "local", "--cluster", "c", "--json")
    assert listed.exit_code == 0, listed.stderr
