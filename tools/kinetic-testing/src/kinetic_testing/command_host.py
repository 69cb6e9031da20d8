"""A stand-in for the ``kinetic`` command line, to run a backend package's contributed commands
(``kinetic.cli`` entry points) where the client is not installed.

A backend package's own tests run in an environment without ``kinetic`` (see ``.ci/run``); its
commands still need a root group and a :class:`kinetic_protocol.commands.CommandHost`. This one
resolves the settings from ``KINETIC_PROJECT``/``ZONE``/``CLUSTER``/``NAMESPACE`` only (no
profiles, no defaults: tests set what they use; a backend's declared setting from its variable
and default), keeps profiles in ``KINETIC_PROFILES_FILE`` in
the client's format (``active`` and ``profiles``), renders plain text, and maps errors to the
client's exit codes (configuration 2, other failures 1). That the real command line lists and
hosts the same commands is checked on the client's side (``tests/test_contributed_commands.py``).
"""

import json
import os
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import click

from kinetic_protocol import BackendSettings, ConfigError, KineticError
from kinetic_protocol.commands import COMMANDS_GROUP
from kinetic_protocol.settings import SettingSpec

__all__ = ["StandInHost", "stand_in_command_line"]


class StandInHost:
    """A :class:`~kinetic_protocol.commands.CommandHost` from the environment alone."""

    def backend_settings(self) -> BackendSettings:
        env = os.environ
        return BackendSettings(
            project=env.get("KINETIC_PROJECT", ""),
            zone=env.get("KINETIC_ZONE", ""),
            cluster=env.get("KINETIC_CLUSTER", ""),
            namespace=env.get("KINETIC_NAMESPACE", "default"),
        )

    def setting(self, spec: SettingSpec) -> str | None:
        return spec.value()

    def save_profile(
        self, name: str, settings: BackendSettings, *, build_service_account: str = ""
    ) -> None:
        path = Path(os.environ["KINETIC_PROFILES_FILE"])
        document = json.loads(path.read_text()) if path.exists() else {}
        profile = {
            "project": settings.project, "zone": settings.zone, "cluster": settings.cluster,
            "namespace": settings.namespace, "build_service_account": build_service_account,
        }  # fmt: skip
        kept = document.setdefault("profiles", {}).get(name, {})
        document["profiles"][name] = {**kept, **{k: v for k, v in profile.items() if v}}
        document["active"] = name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document))

    def emit_json(self, document: Any) -> None:
        click.echo(json.dumps(document, indent=2))

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[str]], *, empty: str) -> None:
        if not rows:
            click.echo(empty, err=True)
            return
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
        for line in [headers, *rows]:
            click.echo("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())

    def key_values(self, pairs: Mapping[str, str]) -> None:
        width = max((len(k) for k in pairs), default=0) + 1
        for key, value in pairs.items():
            click.echo(f"{key + ':':<{width}} {value}".rstrip())


class _StandInGroup(click.Group):
    """Every contributed command, under a root whose context object is a StandInHost."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(point.name for point in entry_points(group=COMMANDS_GROUP))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        for point in entry_points(group=COMMANDS_GROUP, name=cmd_name):
            command = point.load()
            assert isinstance(command, click.Command), point.value
            return command
        return None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except ConfigError as exc:
            raise click.UsageError(str(exc)) from exc
        except KineticError as exc:
            raise click.ClickException(str(exc)) from exc


@click.group(cls=_StandInGroup)
@click.pass_context
def stand_in_command_line(ctx: click.Context) -> None:
    """Contributed commands, run without the kinetic client."""
    ctx.obj = StandInHost()
