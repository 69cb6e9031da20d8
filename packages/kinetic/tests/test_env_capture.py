"""capture_env_vars: exact names and patterns, the blocklist, and the credential warning."""

import logging
import os
from collections.abc import Mapping

import pytest

import kinetic
from kinetic import _log
from kinetic.env_capture import (
    BLOCKED_NAMES,
    BLOCKED_PREFIXES,
    capture_env,
    check_patterns,
    recapture_env,
)
from kinetic_protocol import ConfigError

ENVIRON = {
    "WANDB_API_KEY": "k",
    "WANDB_PROJECT": "p",
    "HF_TOKEN": "t",
    "HOME": "/root",
    "PATH": "/usr/bin",
    "PYTHONPATH": "/src",
    "LD_PRELOAD": "/evil.so",
    "KINETIC_STORE": "file:///x",
    "KINETIC_HF_MIRROR": "/mirror",
    "GOOGLE_APPLICATION_CREDENTIALS": "/home/me/key.json",
    "WANDBX": "not a prefix match",
}


@pytest.fixture(autouse=True)
def _fresh_notices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the once-per-process warnings as a new process would."""
    monkeypatch.setattr(_log, "_noticed", set())


@pytest.mark.parametrize(
    ("patterns", "expected"),
    [
        ((), {}),
        (("HF_TOKEN",), {"HF_TOKEN": "t"}),
        (("WANDB_*",), {"WANDB_API_KEY": "k", "WANDB_PROJECT": "p"}),
        (("WANDB_*", "HF_TOKEN"), {"WANDB_API_KEY": "k", "WANDB_PROJECT": "p", "HF_TOKEN": "t"}),
        (("NOT_SET", "NOPE_*"), {}),
        (("WANDB",), {}),
        (("KINETIC_HF_MIRROR",), {"KINETIC_HF_MIRROR": "/mirror"}),
    ],
    ids=["none", "exact", "prefix", "both", "unset", "exact-is-not-a-prefix", "passable-setting"],
)
def test_capture_takes_exact_names_and_prefix_patterns(
    patterns: tuple[str, ...], expected: dict[str, str]
) -> None:
    assert capture_env(patterns, ENVIRON) == expected


def test_a_star_captures_everything_except_the_blocklist() -> None:
    captured = capture_env(("*",), ENVIRON)
    assert captured == {
        "WANDB_API_KEY": "k",
        "WANDB_PROJECT": "p",
        "HF_TOKEN": "t",
        "KINETIC_HF_MIRROR": "/mirror",
        "WANDBX": "not a prefix match",
    }


@pytest.mark.parametrize(
    "pattern", ["P*", "PY*", "LD_*", "KINETIC_*", "GOOGLE_*", "H*"], ids=lambda p: p
)
def test_a_pattern_silently_skips_blocked_names(pattern: str) -> None:
    captured = capture_env((pattern,), ENVIRON)
    blocked = {"HOME", "PATH", "PYTHONPATH", "LD_PRELOAD", "KINETIC_STORE"}
    assert not blocked & captured.keys()
    assert "GOOGLE_APPLICATION_CREDENTIALS" not in captured


@pytest.mark.parametrize(
    "name",
    [
        *BLOCKED_NAMES,
        *(f"{prefix}SOMETHING" for prefix in BLOCKED_PREFIXES),
        "KINETIC_STORE",
        "PYTHONPATH",
    ],
)
def test_an_exact_blocked_name_is_refused_at_decoration_saying_why(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"cannot capture '{name}': .+Remove it"):
        kinetic.run(accelerator="cpu", capture_env_vars=[name])


def test_the_blocklist_covers_what_describes_this_machine_or_its_credentials() -> None:
    for name in ("PATH", "HOME", "PWD", "OLDPWD", "SHELL", "USER", "LOGNAME", "TMPDIR"):
        assert name in BLOCKED_NAMES
    for name in (
        "GOOGLE_APPLICATION_CREDENTIALS",
        "CLOUDSDK_CONFIG",
        "KUBECONFIG",
        "AWS_SHARED_CREDENTIALS_FILE",
        "AWS_CONFIG_FILE",
        "DOCKER_CONFIG",
        "SSH_AUTH_SOCK",
        "VIRTUAL_ENV",
    ):
        assert name in BLOCKED_NAMES
    assert set(BLOCKED_PREFIXES) >= {"PYTHON", "LD_", "DYLD_", "KINETIC_", "CONDA_", "UV_"}


MUST_NEVER_TRAVEL = (
    "PATH",
    "HOME",
    "PWD",
    "OLDPWD",
    "SHELL",
    "USER",
    "LOGNAME",
    "USERNAME",
    "HOSTNAME",
    "TMPDIR",
    "TMP",
    "TEMP",
    "SHLVL",
    "VIRTUAL_ENV",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_SESSION_ID",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "SSH_CONNECTION",
    "SSH_CLIENT",
    "SSH_TTY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
    "KUBECONFIG",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "DOCKER_CONFIG",
    "GNUPGHOME",
    "NETRC",
    "PYTHONPATH",
    "PYTHONHOME",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "DYLD_INSERT_LIBRARIES",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "UV_INDEX_URL",
    "KINETIC_STORE",
)
"""Written out by hand, not read from the blocklist: an entry dropped from the blocklist
(a name or a whole prefix) must fail a test rather than shrink it."""


@pytest.mark.parametrize("name", MUST_NEVER_TRAVEL)
def test_each_name_that_must_never_travel_is_refused_by_name(name: str) -> None:
    with pytest.raises(ConfigError, match=rf"cannot capture '{name}': .+Remove it"):
        kinetic.run(accelerator="cpu", capture_env_vars=[name])


@pytest.fixture
def machine_environ(monkeypatch: pytest.MonkeyPatch) -> Mapping[str, str]:
    """This process's environment with every name that must never travel set, beside one
    that may."""
    for name in MUST_NEVER_TRAVEL:
        monkeypatch.setenv(name, f"this machine's {name}")
    monkeypatch.setenv("PROJECT_NAME", "travels")
    return os.environ


@pytest.mark.parametrize("pattern", ["*", "XDG_*", "SSH_*", "P*", "L*", "C*", "K*"])
def test_patterns_capture_none_of_the_names_that_must_never_travel(
    pattern: str, machine_environ: Mapping[str, str]
) -> None:
    captured = capture_env((pattern,), machine_environ)
    assert not set(MUST_NEVER_TRAVEL) & captured.keys(), sorted(captured)
    assert capture_env(("*",), machine_environ)["PROJECT_NAME"] == "travels"


def test_recapture_hands_out_none_of_the_names_that_must_never_travel(
    machine_environ: Mapping[str, str],
) -> None:
    """A stored call rewritten to name them gets none of them back on resume."""
    names = [*MUST_NEVER_TRAVEL, "PROJECT_NAME"]
    recaptured = recapture_env(names, machine_environ, owner="Batch grp-1")
    assert recaptured == {"PROJECT_NAME": "travels"}


@pytest.mark.parametrize("pattern", ["*", "WANDB_*", "A*", "HF_TOKEN", "_X"])
def test_star_and_prefix_patterns_are_accepted(pattern: str) -> None:
    assert check_patterns([pattern]) == (pattern,)


def test_a_pattern_that_captures_credential_names_warns_once_naming_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    environ = {"MY_API_KEY": "v1", "DB_PASSWORD": "v2", "MY_PROJECT": "v3", "GH_TOKEN": "v4"}
    capture_env(("MY_*", "DB_*"), environ)
    capture_env(("MY_*", "DB_*"), environ)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "DB_PASSWORD, MY_API_KEY" in warnings[0]
    assert "MY_PROJECT" not in warnings[0] and "GH_TOKEN" not in warnings[0]
    assert not any(value in warnings[0] for value in environ.values())
    capture_env(("*",), environ)  # another set of names: warned about too
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2 and "GH_TOKEN" in warnings[1]


def test_an_exact_credential_name_does_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    assert capture_env(("HF_TOKEN", "HF_*"), {"HF_TOKEN": "t"}) == {"HF_TOKEN": "t"}
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_recapture_takes_values_from_here_and_warns_about_missing_names(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    values = recapture_env(["A_SET", "B_MISSING"], {"A_SET": "1"}, owner="Batch grp-1")
    assert values == {"A_SET": "1"}
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "Batch grp-1" in warning and "B_MISSING" in warning and "A_SET" not in warning


def test_recapture_never_hands_out_a_blocked_name_a_rewritten_call_asks_for(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    names = ["A_SET", "GOOGLE_APPLICATION_CREDENTIALS", "KINETIC_STORE", "not a name"]
    assert recapture_env(names, ENVIRON | {"A_SET": "1"}, owner="Batch grp-1") == {"A_SET": "1"}
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "GOOGLE_APPLICATION_CREDENTIALS" in warning and "KINETIC_STORE" in warning
