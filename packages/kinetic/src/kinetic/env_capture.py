"""Which of this machine's environment variables travel to a job (``capture_env_vars``).

An entry is an exact name (``"WANDB_API_KEY"``) or a pattern ending in ``*`` (``"WANDB_*"``,
or ``"*"`` for everything). Some variables never travel, because they describe this machine
rather than the job (its paths, its interpreter, its user) or point at credentials kept here
(:data:`BLOCKED_NAMES`, :data:`BLOCKED_PREFIXES`); a job gets its own. Naming one exactly is a
ConfigError at decoration time; a pattern skips them silently.

Only names are stored with the call: the values go to the backend, which hands them to the
job privately (see ``Backend.submit``).
"""

import re
from collections.abc import Iterable, Mapping

from kinetic import _log
from kinetic_protocol import ConfigError
from kinetic_runtime import settings as runtime_settings

__all__ = [
    "BLOCKED_NAMES",
    "BLOCKED_PREFIXES",
    "CREDENTIAL_WORDS",
    "blocked_reason",
    "capture_env",
    "check_patterns",
    "recapture_env",
]


BLOCKED_NAMES: Mapping[str, str] = {
    **dict.fromkeys(
        (
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
            "_",
            "VIRTUAL_ENV",
            "XDG_RUNTIME_DIR",
        ),
        "it describes this machine (its paths, its user, its shell); a job has its own",
    ),
    **dict.fromkeys(
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            "CLOUDSDK_CONFIG",
            "KUBECONFIG",
            "AWS_SHARED_CREDENTIALS_FILE",
            "AWS_CONFIG_FILE",
            "DOCKER_CONFIG",
            "SSH_AUTH_SOCK",
            "SSH_AGENT_PID",
            "GNUPGHOME",
            "NETRC",
        ),
        "it points at credentials kept on this machine, which a job cannot (and must not) "
        "read; give the job its own identity (a Kubernetes service account) instead",
    ),
}
"""Exact names that are never captured, with why."""

BLOCKED_PREFIXES: Mapping[str, str] = {
    "PYTHON": "it configures this machine's Python interpreter, not the job's",
    "LD_": "it changes how this machine loads native libraries",
    "DYLD_": "it changes how this machine loads native libraries",
    "CONDA_": "it describes this machine's conda environment",
    "UV_": "it configures this machine's uv",
    "KINETIC_": "Kinetic sets its own variables in a job",
    "XDG_": "it names this machine's per-user directories or desktop session",
    "SSH_": "it describes this machine's SSH session or agent",
}
"""Name prefixes that are never captured, with why (``KINETIC_*`` except :func:`_passable`)."""

CREDENTIAL_WORDS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "API_KEY",
    "APIKEY",
    "CREDENTIAL",
    "PRIVATE_KEY",
    "ACCESS_KEY",
    "SESSION_KEY",
)
"""Words in a name that make a pattern's capture worth a warning: it may carry a secret."""

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PATTERN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)?\*$")


def _passable() -> frozenset[str]:
    """The runtime's settings a user may pass to a job through ``capture_env_vars``."""
    return frozenset(spec.env for spec in runtime_settings.CAPTURABLE)


def blocked_reason(name: str) -> str | None:
    """Why ``name`` is never captured, or None if it may be."""
    if name in BLOCKED_NAMES:
        return BLOCKED_NAMES[name]
    for prefix, reason in BLOCKED_PREFIXES.items():
        if name.startswith(prefix) and name not in _passable():
            return reason
    return None


def check_patterns(patterns: Iterable[object]) -> tuple[str, ...]:
    """``capture_env_vars`` checked at decoration time: every entry a str that is a name or
    a ``PREFIX*`` pattern, and no exact name that is never captured."""
    checked: list[str] = []
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise TypeError(f"capture_env_vars entry {pattern!r} must be a str.")
        if not (_NAME.match(pattern) or _PATTERN.match(pattern)):
            raise ConfigError(
                f"capture_env_vars entry {pattern!r} is not an environment variable name "
                "or a pattern ending in '*' ('PREFIX*', or '*' for every variable)."
            )
        reason = None if pattern.endswith("*") else blocked_reason(pattern)
        if reason is not None:
            raise ConfigError(
                f"capture_env_vars cannot capture {pattern!r}: {reason}. Remove it from "
                "capture_env_vars (patterns skip such variables on their own)."
            )
        checked.append(pattern)
    return tuple(checked)


def _looks_like_credential(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in CREDENTIAL_WORDS)


def capture_env(patterns: tuple[str, ...], environ: Mapping[str, str]) -> dict[str, str]:
    """The set variables that ``patterns`` name, never a blocked one; warns (once per process
    for each set of names) when a pattern captured names that look like credentials."""
    captured: dict[str, str] = {}
    by_pattern: set[str] = set()
    for pattern in patterns:
        if pattern.endswith("*"):
            prefix = pattern[:-1]
            for name, value in environ.items():
                if name.startswith(prefix) and blocked_reason(name) is None:
                    captured[name] = value
                    by_pattern.add(name)
        elif pattern in environ and blocked_reason(pattern) is None:
            captured[pattern] = environ[pattern]
    exact = {pattern for pattern in patterns if not pattern.endswith("*")}
    suspicious = sorted(name for name in by_pattern - exact if _looks_like_credential(name))
    if suspicious:
        listed = ", ".join(suspicious)
        _log.notice(
            f"capture-credentials:{listed}",
            f"capture_env_vars patterns {[p for p in patterns if p.endswith('*')]} "
            f"captured variables that look like credentials: {listed}. They reach the job "
            "privately (never the store), but check that the job should have them; name "
            "each variable exactly to silence this.",
        )
    return dict(sorted(captured.items()))


def recapture_env(
    names: Iterable[str], environ: Mapping[str, str], *, owner: str
) -> dict[str, str]:
    """The values of a stored call's ``names`` from this process's environment (a batch
    resumed elsewhere); warns, naming them, about those that are not set here. The names come
    from the store: one that is never captured (or is no name at all) is skipped, so a rewritten
    call cannot make this process hand out its credentials."""
    wanted = [name for name in names if _NAME.match(name) and blocked_reason(name) is None]
    refused = sorted(set(names) - set(wanted))
    if refused:
        _log.say(
            f"{owner}'s stored call names {', '.join(map(repr, refused))} among its captured "
            "variables, which are never captured: they are not passed on."
        )
    missing = [name for name in wanted if name not in environ]
    if missing:
        _log.say(
            f"{owner} was submitted capturing {', '.join(missing)}, which this process does "
            "not have set: the jobs it submits from here run without them (set them in the "
            "process that resumes a batch to pass them on)."
        )
    return {name: environ[name] for name in wanted if name in environ}
