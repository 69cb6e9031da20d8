"""Declared settings: every ``KINETIC_*`` variable Kinetic reads is declared once, here or by
the package that owns it, so ``kinetic config show`` can list and explain each one.

A declaration names the variable, its profile key (if a profile can set it), its default and
one line of help. Code reads a variable only through its declaration (``SETTING.from_env()``),
never through ``os.environ`` with a literal name; a test checks that.

Packages declare theirs in a module-level tuple; the client gathers them (core, runtime, and
each installed backend's ``settings`` attribute).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

import msgspec

from kinetic_protocol.errors import ConfigError

__all__ = ["Kind", "ResolvedSetting", "SettingSpec", "SettingsRegistry", "resolve_declared"]

Kind = Literal["setting", "job"]
"""``setting``: chosen by the user. ``job``: set by Kinetic inside a running job for user code
and the runtime (read there, documented, never meant to be set by hand)."""


@dataclass(frozen=True)
class SettingSpec:
    """One setting: where it is read from, its default, who owns it, what it is for."""

    name: str
    env: str
    help: str
    owner: str
    default: str | None = None
    profile_key: str | None = None
    """The key in a profile of ``profiles.json`` that sets it, if profiles can."""
    fallback_env: tuple[str, ...] = ()
    """Variables consulted after the profile (``GOOGLE_CLOUD_PROJECT`` for the project)."""
    kind: Kind = "setting"
    choices: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.env.startswith("KINETIC_"):
            raise ValueError(f"setting {self.name!r}: variable {self.env!r} must start KINETIC_")

    def from_env(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The variable's value, or None when unset or empty."""
        value = (os.environ if environ is None else environ).get(self.env)
        return value or None

    def value(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The variable's value, else the default (no argument or profile involved)."""
        return self.from_env(environ) or self.default

    def flag(self, environ: Mapping[str, str] | None = None) -> bool:
        """A yes/no setting: unset, ``0``, ``false``, ``no`` or ``off`` are no."""
        raw = (self.value(environ) or "").strip().lower()
        return raw not in ("", "0", "false", "no", "off")

    def number(self, environ: Mapping[str, str] | None = None) -> float | None:
        """A number of seconds (or a count); a ConfigError naming the variable if malformed."""
        raw = self.value(environ)
        if raw is None:
            return None
        try:
            return float(raw)
        except ValueError:
            raise ConfigError(f"{self.env} must be a number, got {raw!r}. {self.help}") from None


class ResolvedSetting(msgspec.Struct, frozen=True, kw_only=True):
    """A declared setting's value at one moment, and where it came from: ``env`` (the
    variable was set), ``default`` (the declaration's) or ``unset``."""

    env: str
    value: str | None
    source: Literal["env", "default", "unset"]


def resolve_declared(
    specs: Iterable[SettingSpec], environ: Mapping[str, str] | None = None
) -> tuple[ResolvedSetting, ...]:
    """Each of ``specs`` resolved now (from ``environ``, else this process's environment)."""
    resolved = []
    for spec in specs:
        raw = spec.from_env(environ)
        if raw is not None:
            resolved.append(ResolvedSetting(env=spec.env, value=raw, source="env"))
        elif spec.default is not None:
            resolved.append(ResolvedSetting(env=spec.env, value=spec.default, source="default"))
        else:
            resolved.append(ResolvedSetting(env=spec.env, value=None, source="unset"))
    return tuple(resolved)


class SettingsRegistry:
    """Declarations by variable name; declaring one variable twice is a programming error."""

    def __init__(self, specs: Iterable[SettingSpec] = ()) -> None:
        self._by_env: dict[str, SettingSpec] = {}
        self.declare(*specs)

    def declare(self, *specs: SettingSpec) -> None:
        for spec in specs:
            existing = self._by_env.get(spec.env)
            if existing is not None and existing != spec:
                raise ValueError(
                    f"{spec.env} is declared twice: by {existing.owner} and by {spec.owner}"
                )
            self._by_env[spec.env] = spec

    def __iter__(self) -> Iterator[SettingSpec]:
        return iter(sorted(self._by_env.values(), key=lambda s: (s.owner, s.kind, s.name)))

    def __contains__(self, env: object) -> bool:
        return env in self._by_env

    def __len__(self) -> int:
        return len(self._by_env)

    def get(self, env: str) -> SettingSpec | None:
        return self._by_env.get(env)
