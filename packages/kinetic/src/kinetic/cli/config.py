"""``kinetic config show`` and ``kinetic profile ...``: settings and where they come from.

Profiles live in ``~/.kinetic/profiles.json`` (``KINETIC_PROFILES_FILE`` moves it); the active
one is the file's ``active`` entry unless ``KINETIC_PROFILE`` names another.
"""

import re
from typing import TYPE_CHECKING, Any

import click

from kinetic.cli import render
from kinetic.cli.context import CliContext, pass_cli
from kinetic.cli.errors import ConfigProblem
from kinetic.config import Setting
from kinetic_protocol import ConfigError

if TYPE_CHECKING:
    from kinetic.config import Profile

__all__ = ["config", "profile"]

JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
_PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
_FIELDS = ("backend", "project", "zone", "cluster", "namespace", "queue", "priority", "queues")


@click.group()
def config() -> None:
    """Show the resolved settings."""


@config.command()
@JSON_OPTION
@pass_cli
def show(cli: CliContext, as_json: bool) -> None:
    """Show every setting and where it came from.

    Sources: argument (a global option), env, profile or default.
    Exits 2 if the resolved backend is not installed.
    """
    from kinetic.backends import available_backends
    from kinetic.config import kinetic_home, profiles_path
    from kinetic.settings import registry

    settings = cli.resolve()
    resolved = dict(settings.items())
    entries: dict[str, dict[str, Any]] = {}
    for spec in registry():
        found = resolved.get(spec.name)
        if found is None:
            value = spec.from_env()
            found = Setting(value, "env", spec.env) if value else Setting(spec.default, "default")
        entries[spec.name] = {
            "value": found.value,
            "source": found.source,
            "origin": found.origin,
            "env": spec.env,
            "owner": spec.owner,
            "kind": spec.kind,
            "help": spec.help,
        }
    document = {
        "settings": entries,
        "profile": settings.profile,
        "profiles_file": str(profiles_path()),
        "kinetic_home": str(kinetic_home()),
    }
    if as_json:
        render.emit_json(document)
    else:
        rows = [
            [
                name,
                e["value"] or "(not set)",
                e["source"],
                _origin(e["source"], e["origin"]),
                e["env"],
            ]
            for name, e in entries.items()
            if e["kind"] == "setting"
        ]
        render.table(["SETTING", "VALUE", "SOURCE", "FROM", "VARIABLE"], rows)
        click.echo(f"\nActive profile: {settings.profile or 'none'}  (file: {profiles_path()})")
        click.echo(f"Kinetic home: {kinetic_home()}")
    known = available_backends()
    backend = settings.backend
    if backend.value not in known:
        raise ConfigProblem(
            f"Backend {backend.value!r} (from {_origin(backend.source, backend.origin)}) is not "
            f"installed. Available: {', '.join(sorted(known))}."
        )


def _origin(source: str, origin: str) -> str:
    if source == "argument":
        return "command-line option"
    if source == "env":
        return f"${origin}"
    if source == "profile":
        return f"profile {origin!r}"
    return origin or "default"


@click.group()
def profile() -> None:
    """Manage named settings profiles."""


def _check_name(name: str) -> str:
    if not _PROFILE_NAME.match(name):
        raise click.BadParameter(
            f"{name!r}: use letters, digits, '.', '_' or '-' (up to 63 characters), starting "
            "with a letter or digit.",
            param_hint="NAME",
        )
    return name


def _check_queueing(queue: str | None, priority: str | None) -> None:
    from kinetic_protocol.queueing import check_priority_name, check_queue_name

    for option, value, check in (
        ("--queue", queue, check_queue_name),
        ("--priority", priority, check_priority_name),
    ):
        if value is not None:
            try:
                check(value)
            except ConfigError as exc:
                raise click.BadParameter(str(exc), param_hint=option) from None


def _unknown(name: str, known: dict[str, "Profile"]) -> ConfigProblem:
    names = ", ".join(sorted(known)) or "none"
    return ConfigProblem(
        f"No profile {name!r}. Known profiles: {names}. Create it with "
        f"`kinetic profile create {name}`."
    )


def _profile_document(name: str, entry: "Profile", active: str | None) -> dict[str, Any]:
    return {"name": name, "active": name == active} | {f: getattr(entry, f) for f in _FIELDS}


def _active_name(file_active: str | None) -> str | None:
    from kinetic.settings import PROFILE

    return PROFILE.from_env() or file_active


@profile.command()
@click.argument("name")
@click.option("--project", help="GCP project.")
@click.option("--zone", help="GCP zone.")
@click.option("--cluster", help="GKE cluster name.")
@click.option("--namespace", help="Kubernetes namespace.")
@click.option("--backend", help="Backend name (local, gke, pathways).")
@click.option("--queue", help="Queue jobs are admitted through (default: the backend's).")
@click.option("--priority", help="Priority class of jobs (low, normal, high, ...).")
@click.option("--queues", help="Queues `kinetic up` makes on a cluster with Kueue: NAME=SHARE,...")
@click.option("--use", "activate", is_flag=True, help="Also make it the active profile.")
@click.option("--force", is_flag=True, help="Replace a profile of the same name.")
def create(
    name: str,
    *,
    project: str | None,
    zone: str | None,
    cluster: str | None,
    namespace: str | None,
    backend: str | None,
    queue: str | None,
    priority: str | None,
    queues: str | None,
    activate: bool,
    force: bool,
) -> None:
    """Create the profile NAME with the given settings."""
    from kinetic.backends import available_backends
    from kinetic.config import Profile, load_profiles, profiles_path, save_profiles

    _check_name(name)
    _check_queueing(queue, priority)
    if backend is not None and backend not in available_backends():
        raise ConfigProblem(
            f"Unknown backend {backend!r}. Available: {', '.join(sorted(available_backends()))}."
        )
    profiles = load_profiles()
    if name in profiles.profiles and not force:
        raise ConfigProblem(
            f"Profile {name!r} already exists in {profiles_path()}. Pass --force to replace "
            f"it, or remove it first: kinetic profile rm {name}"
        )
    profiles.profiles[name] = Profile(
        project=project,
        zone=zone,
        cluster=cluster,
        namespace=namespace,
        backend=backend,
        queue=queue,
        priority=priority,
        queues=queues,
    )
    if activate:
        profiles.active = name
    save_profiles(profiles)
    click.echo(f"Created profile {name!r}" + (" and made it active." if activate else "."))


@profile.command("ls")
@JSON_OPTION
def ls(as_json: bool) -> None:
    """List the profiles; the active one is marked with *."""
    from kinetic.config import load_profiles

    profiles = load_profiles()
    active = _active_name(profiles.active)
    if as_json:
        render.emit_json(
            [_profile_document(n, p, active) for n, p in sorted(profiles.profiles.items())]
        )
        return
    rows = [
        ["*" if name == active else "", name, *(getattr(entry, f) or "" for f in _FIELDS)]
        for name, entry in sorted(profiles.profiles.items())
    ]
    render.table(
        ["", "NAME", *(f.upper() for f in _FIELDS)],
        rows,
        empty="No profiles yet. Create one with `kinetic profile create NAME --project ...`.",
    )


@profile.command()
@click.argument("name")
def use(name: str) -> None:
    """Make NAME the active profile."""
    from kinetic.config import load_profiles, save_profiles

    profiles = load_profiles()
    if name not in profiles.profiles:
        raise _unknown(name, profiles.profiles)
    profiles.active = name
    save_profiles(profiles)
    click.echo(f"Active profile: {name}")
    from kinetic.settings import PROFILE

    overriding = PROFILE.from_env()
    if overriding and overriding != name:
        click.echo(
            f"Note: KINETIC_PROFILE={overriding} is set in this shell and takes precedence.",
            err=True,
        )


@profile.command("show")
@click.argument("name", required=False)
@JSON_OPTION
def show_profile(name: str | None, as_json: bool) -> None:
    """Show the settings of NAME (default: the active profile)."""
    from kinetic.config import load_profiles

    profiles = load_profiles()
    active = _active_name(profiles.active)
    chosen = name or active
    if chosen is None:
        raise ConfigProblem(
            "No active profile. Name one (`kinetic profile show NAME`) or activate one with "
            "`kinetic profile use NAME`."
        )
    entry = profiles.profiles.get(chosen)
    if entry is None:
        raise _unknown(chosen, profiles.profiles)
    document = _profile_document(chosen, entry, active)
    if as_json:
        render.emit_json(document)
        return
    pairs = {"Profile": chosen + (" (active)" if chosen == active else "")}
    pairs |= {f.capitalize(): getattr(entry, f) or "(not set)" for f in _FIELDS}
    render.key_values(pairs)


@profile.command()
@click.argument("name")
def rm(name: str) -> None:
    """Remove the profile NAME.

    If it was active, no profile is active afterwards.
    """
    from kinetic.config import load_profiles, save_profiles

    profiles = load_profiles()
    if name not in profiles.profiles:
        raise _unknown(name, profiles.profiles)
    del profiles.profiles[name]
    was_active = profiles.active == name
    if was_active:
        profiles.active = None
    save_profiles(profiles)
    click.echo(f"Removed profile {name!r}" + ("; no profile is active now." if was_active else "."))
