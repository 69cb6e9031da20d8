"""The contract between the ``kinetic`` command line and the commands a backend package adds.

A package registers click commands in the entry-point group :data:`COMMANDS_GROUP`
(``up = "kinetic_gke.cli.infra:up"``); the ``kinetic`` command line lists them in its help and
imports one only when it runs. While it runs, the root context's ``obj`` is a
:class:`CommandHost`: the settings the global options, ``KINETIC_*`` variables and the active
profile resolve to, the profile store, and the shell's output, so the command holds no copy of
any of them and its package never imports the client.
"""

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from kinetic_protocol.backend import BackendSettings
from kinetic_protocol.settings import SettingSpec

__all__ = ["COMMANDS_GROUP", "CommandHost"]

COMMANDS_GROUP = "kinetic.cli"
"""Entry-point group of contributed commands: name -> ``module:click_command``."""


@runtime_checkable
class CommandHost(Protocol):
    """What a contributed command may ask of the command line that runs it."""

    def backend_settings(self) -> BackendSettings:
        """Project, zone, cluster and namespace: option > ``KINETIC_*`` > profile > default."""
        ...

    def setting(self, spec: SettingSpec) -> str | None:
        """A setting the backend declares, as every setting resolves: its ``KINETIC_*``
        variable, else the active profile's ``spec.profile_key``, else its default."""
        ...

    def save_profile(
        self, name: str, settings: BackendSettings, *, build_service_account: str = ""
    ) -> None:
        """Keep ``settings`` as the profile ``name`` (its other keys as they were) and make it
        the active one."""
        ...

    def emit_json(self, document: Any) -> None:
        """Write ``document`` as the command's one JSON document."""
        ...

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[str]], *, empty: str) -> None:
        """Show rows under headers (``empty`` when there are none)."""
        ...

    def key_values(self, pairs: Mapping[str, str]) -> None:
        """Show labelled values, one per line."""
        ...
