"""``queue=`` and ``priority=``: checked as names where they are given (decoration, a call's
override), resolved as every setting (argument > ``KINETIC_*`` > profile > default), and a
malformed value from a variable or a profile names where it came from (issue 49)."""

import json
import os
from pathlib import Path

import pytest

import kinetic
from kinetic.config import resolve_settings
from kinetic.submission.queueing import queueing_names
from kinetic_protocol import ConfigError


@pytest.fixture(autouse=True)
def profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith("KINETIC_") or name == "GOOGLE_CLOUD_PROJECT":
            monkeypatch.delenv(name)
    monkeypatch.setenv("KINETIC_HOME", str(tmp_path / "home"))
    path = tmp_path / "profiles.json"
    monkeypatch.setenv("KINETIC_PROFILES_FILE", str(path))
    return path


def _use_profile(path: Path, **values: str) -> None:
    path.write_text(json.dumps({"active": "team", "profiles": {"team": values}}))


def _noop() -> None:
    """A function to decorate."""


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"queue": 3}, TypeError, "queue must be a str naming a queue, got int 3"),
        ({"priority": ["high"]}, TypeError, r"priority must be a str .* list \['high'\]"),
        ({"queue": "Team-A"}, ConfigError, "queue='Team-A' is not a valid name"),
        ({"queue": "team_a"}, ConfigError, "queue='team_a' is not a valid name"),
        ({"priority": "-high"}, ConfigError, "priority='-high' is not a valid name"),
        ({"priority": ""}, ConfigError, "priority='' is not a valid name"),
        ({"queue": "q" * 64}, ConfigError, "at most 63 characters"),
    ],
)
def test_a_malformed_queue_or_class_is_refused_at_decoration(
    options: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        kinetic.run(accelerator="cpu", **options)  # type: ignore[arg-type]


def test_a_calls_override_is_checked_when_it_is_given() -> None:
    remote = kinetic.run(accelerator="cpu", backend="local")(_noop)
    with pytest.raises(ConfigError, match="priority='High'"):
        remote.with_options(priority="High")
    with pytest.raises(TypeError, match="queue must be a str"):
        remote.run_async_map([1], queue=7)  # type: ignore[arg-type]


def test_an_override_replaces_only_what_it_names() -> None:
    remote = kinetic.run(accelerator="cpu", queue="team-a", priority="low")(_noop)
    urgent = remote.with_options(priority="high")
    assert (urgent.options.queue, urgent.options.priority) == ("team-a", "high")
    assert (remote.options.queue, remote.options.priority) == ("team-a", "low")
    assert urgent.with_options().options == urgent.options
    assert urgent.__wrapped__ is _noop


def test_an_argument_beats_the_variable_beats_the_profile_beats_nothing(
    profiles: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nothing = resolve_settings(backend="local")
    assert (nothing.queue.value, nothing.queue.source) == (None, "default")
    assert (nothing.priority.value, nothing.priority.source) == (None, "default")
    assert queueing_names(nothing) == (None, None)

    _use_profile(profiles, queue="team-a", priority="low")
    found = resolve_settings(backend="local")
    assert (found.queue.value, found.queue.source, found.queue.origin) == (
        "team-a",
        "profile",
        "team",
    )
    monkeypatch.setenv("KINETIC_PRIORITY", "normal")
    found = resolve_settings(backend="local")
    assert (found.priority.value, found.priority.source, found.priority.origin) == (
        "normal",
        "env",
        "KINETIC_PRIORITY",
    )
    found = resolve_settings(backend="local", queue="team-b", priority="high")
    assert queueing_names(found) == ("team-b", "high")
    assert dict(found.items())["priority"].source == "argument"


def test_a_malformed_variable_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KINETIC_PRIORITY", "Urgent!")
    with pytest.raises(ConfigError, match=r"priority='Urgent!'.*set by \$KINETIC_PRIORITY"):
        queueing_names(resolve_settings(backend="local"))


def test_a_malformed_profile_value_is_refused_naming_the_profile(profiles: Path) -> None:
    _use_profile(profiles, queue="Team A")
    with pytest.raises(ConfigError, match=r"queue='Team A'.*'queue' key of profile 'team'"):
        queueing_names(resolve_settings(backend="local"))
