"""Settings resolution: argument > ``KINETIC_*`` environment variable > active profile > default.

Every resolved value remembers where it came from, so ``kinetic config show`` can explain it.
Nothing here runs at import time.
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import msgspec

from kinetic import settings as declared
from kinetic._log import notice
from kinetic_protocol import Accelerator, BackendSettings, ConfigError
from kinetic_protocol.settings import SettingSpec
from kinetic_runtime.private_files import make_private_dirs, write_private_atomically
from kinetic_runtime.settings import STORE, kinetic_home

__all__ = [
    "DEFAULT_CLUSTER",
    "DEFAULT_NAMESPACE",
    "DEFAULT_ZONE",
    "Profile",
    "ProfilesFile",
    "ResolvedSettings",
    "Setting",
    "kinetic_home",
    "load_profiles",
    "profiles_path",
    "resolve_setting",
    "resolve_settings",
    "save_profiles",
]

DEFAULT_ZONE = declared.ZONE.default or ""
DEFAULT_CLUSTER = declared.CLUSTER.default or ""
DEFAULT_NAMESPACE = declared.NAMESPACE.default or ""

Source = Literal["argument", "env", "profile", "default"]


class Profile(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A named set of defaults; unknown keys are errors because they are typos."""

    project: str | None = None
    zone: str | None = None
    cluster: str | None = None
    namespace: str | None = None
    backend: str | None = None
    queue: str | None = None
    priority: str | None = None
    build_service_account: str | None = None
    queues: str | None = None
    """The queues ``kinetic up`` makes on a cluster with Kueue (``KINETIC_QUEUES``)."""
    state_backend: str | None = None
    """Written by another Kinetic version (where its provisioning state lives); unused here,
    kept so that version still reads the file after this one writes it."""


class ProfilesFile(msgspec.Struct, omit_defaults=True):
    active: str | None = None
    profiles: dict[str, Profile] = msgspec.field(default_factory=dict)
    current: str | None = None
    """The active profile as another Kinetic version stores it: read when ``active`` is
    absent, and written beside ``active`` once the file had it, so both versions agree."""

    def __post_init__(self) -> None:
        if self.active is None and self.current is not None:
            self.active = self.current

    def mirrored(self) -> "ProfilesFile":
        """This file as written: ``current`` follows ``active`` where the file uses it."""
        if self.current is None:
            return self
        return ProfilesFile(active=self.active, profiles=self.profiles, current=self.active)


@dataclass(frozen=True)
class Setting:
    """One resolved value and where it came from (``env`` names the variable)."""

    value: str | None
    source: Source
    origin: str = ""


@dataclass(frozen=True)
class ResolvedSettings:
    backend: Setting
    project: Setting
    zone: Setting
    cluster: Setting
    namespace: Setting
    store: Setting
    build_service_account: Setting
    queue: Setting
    """``queue=``; None: the backend's default queue."""
    priority: Setting
    """``priority=``; None: no priority class."""
    profile: str | None

    @property
    def backend_name(self) -> str:
        """The chosen backend (resolution always picks one)."""
        return self.backend.value or "local"

    def backend_settings(self) -> BackendSettings:
        return BackendSettings(
            project=self.project.value or "",
            zone=self.zone.value or DEFAULT_ZONE,
            cluster=self.cluster.value or DEFAULT_CLUSTER,
            namespace=self.namespace.value or DEFAULT_NAMESPACE,
            store_uri=self.store.value,
            build_service_account=self.build_service_account.value or "",
        )

    def items(self) -> list[tuple[str, Setting]]:
        return [
            ("backend", self.backend),
            ("project", self.project),
            ("zone", self.zone),
            ("cluster", self.cluster),
            ("namespace", self.namespace),
            ("queue", self.queue),
            ("priority", self.priority),
            ("store", self.store),
            ("build_service_account", self.build_service_account),
        ]


def profiles_path() -> Path:
    return Path(declared.PROFILES_FILE.value() or "~/.kinetic/profiles.json").expanduser()


def load_profiles(path: Path | None = None) -> ProfilesFile:
    """Read the profiles file; a missing file is empty, a malformed one is a ConfigError."""
    path = path or profiles_path()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ProfilesFile()
    except OSError as exc:  # a directory, no permission, an I/O error
        raise ConfigError(
            f"Profiles file {path} cannot be read: {exc.strerror or exc}. Fix its permissions "
            f"or move it away, or point KINETIC_PROFILES_FILE at another file."
        ) from exc
    try:
        return msgspec.json.decode(data, type=ProfilesFile)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ConfigError(
            f"Profiles file {path} is invalid: {exc}. Fix or delete it, or manage it with "
            "`kinetic profile`."
        ) from exc


def save_profiles(profiles: ProfilesFile, path: Path | None = None) -> None:
    path = path or profiles_path()
    make_private_dirs(path.parent)
    write_private_atomically(path, msgspec.json.format(msgspec.json.encode(profiles.mirrored())))


def _pick(
    spec: SettingSpec, argument: str | None, profile: Profile | None, profile_name: str | None
) -> Setting:
    """Argument, then the variable, then the profile, then the fallback variables (such as
    ``GOOGLE_CLOUD_PROJECT``, which ranks below a profile), then the default."""
    if argument:
        return Setting(argument, "argument")
    if spec.from_env():
        return Setting(spec.from_env(), "env", spec.env)
    value = getattr(profile, spec.profile_key) if profile and spec.profile_key else None
    if value:
        return Setting(value, "profile", profile_name or "")
    for var in spec.fallback_env:
        fallback = os.environ.get(var)
        if fallback:
            return Setting(fallback, "env", var)
    return Setting(spec.default, "default")


def resolve_setting(spec: SettingSpec) -> Setting:
    """One declared setting (a backend's too): its variable, the active profile, its default."""
    profiles = load_profiles()
    active = declared.PROFILE.from_env() or profiles.active
    return _pick(spec, None, profiles.profiles.get(active) if active else None, active)


def resolve_settings(
    *,
    backend: str | None = None,
    project: str | None = None,
    zone: str | None = None,
    cluster: str | None = None,
    namespace: str | None = None,
    queue: str | None = None,
    priority: str | None = None,
    quiet: bool = False,
    accelerator: Accelerator | None = None,
    slices: int = 1,
) -> ResolvedSettings:
    """Resolve every setting. With no backend named and no project anywhere, use ``local``;
    with a project, ``pathways`` for one multi-host ``accelerator`` slice and ``gke``
    otherwise (several slices run on ``gke``, which makes them one JobSet)."""
    profiles = load_profiles()
    active = declared.PROFILE.from_env() or profiles.active
    profile = profiles.profiles.get(active) if active else None
    if active and profile is None:
        raise ConfigError(
            f"Active profile {active!r} does not exist in {profiles_path()}. Known profiles: "
            f"{', '.join(sorted(profiles.profiles)) or 'none'}. Run `kinetic profile ls`."
        )
    resolved_project = _pick(declared.PROJECT, project, profile, active)
    chosen_backend = _pick(declared.BACKEND, backend, profile, active)
    if chosen_backend.value is None:
        one_slice = accelerator if accelerator and accelerator.multi_host and slices == 1 else None
        if resolved_project.value and one_slice:
            chosen_backend = Setting(
                "pathways",
                "default",
                f"a GCP project is configured and {one_slice.name} spans several hosts",
            )
        elif resolved_project.value:
            chosen_backend = Setting("gke", "default", "a GCP project is configured")
        else:
            chosen_backend = Setting("local", "default", "no GCP project is configured")
            if not quiet:
                notice(
                    "local-backend",
                    "kinetic: no GCP project configured; running jobs on this machine "
                    "(backend='local'). Set KINETIC_PROJECT or pass backend= to change.",
                )
    return ResolvedSettings(
        backend=chosen_backend,
        project=resolved_project,
        zone=_pick(declared.ZONE, zone, profile, active),
        cluster=_pick(declared.CLUSTER, cluster, profile, active),
        namespace=_pick(declared.NAMESPACE, namespace, profile, active),
        store=_pick(STORE, None, None, None),
        build_service_account=_pick(declared.BUILD_SERVICE_ACCOUNT, None, profile, active),
        queue=_pick(declared.QUEUE, queue, profile, active),
        priority=_pick(declared.PRIORITY, priority, profile, active),
        profile=active,
    )
