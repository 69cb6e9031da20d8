"""The state every command shares: the group's global options and the calls they shape.

Commands receive it with :data:`pass_cli`. It is the only place that turns the global options
into library calls, so every command attaches, lists and resolves the same way. It is also the
:class:`kinetic_protocol.commands.CommandHost` of the commands backend packages contribute.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from kinetic.batch import BatchHandle, BatchSummary
    from kinetic.config import ResolvedSettings
    from kinetic.jobs import JobHandle
    from kinetic.outputs import JobOutputs
    from kinetic_protocol import BackendSettings, HostSelection
    from kinetic_protocol.settings import SettingSpec

__all__ = ["SHARED_OPTIONS", "CliContext", "accept_shared_options", "pass_cli"]

ATTACH_POLL_INTERVAL = 1.0
"""Seconds between manifest reads while a batch is still being submitted elsewhere."""


@dataclass
class CliContext:
    """The global options (``None`` when not given: the library resolves the rest)."""

    backend: str | None = None
    project: str | None = None
    zone: str | None = None
    cluster: str | None = None
    namespace: str | None = None
    debug: bool = False
    job_id: str | None = None
    """The job the running command attached to, so an error can name it."""

    def attach(self, job_id: str) -> "JobHandle":
        import kinetic

        self.job_id = job_id
        return kinetic.attach(job_id, self.project, self.cluster, backend=self.backend)

    def stored_output(self, job_id: str, *, tail: int | None, host: "HostSelection") -> str | None:
        from kinetic.jobs import stored_output

        return stored_output(
            job_id, self.project, self.cluster, backend=self.backend, tail=tail, host=host
        )

    def job_outputs(self, job_id: str) -> "JobOutputs":
        from kinetic.jobs import job_outputs

        self.job_id = job_id
        return job_outputs(job_id, self.project, self.cluster, backend=self.backend)

    def list_jobs(self) -> "list[JobHandle]":
        import kinetic

        return kinetic.list_jobs(
            self.project, self.zone, self.cluster, self.namespace, backend=self.backend
        )

    def attach_batch(self, group_id: str, *, follow: bool = False) -> "BatchHandle":
        """The batch ``group_id``; with ``follow``, children still being submitted elsewhere
        keep appearing, otherwise the handle is a snapshot of what the manifest holds now."""
        from kinetic.batch import attach_batch

        return attach_batch(
            group_id,
            self.project,
            self.cluster,
            poll_interval=ATTACH_POLL_INTERVAL,
            poll_timeout=None if follow else 0.0,
            backend=self.backend,
        )

    def list_batches(self) -> "list[BatchSummary]":
        from kinetic.batch import list_batches

        return list_batches(self.project, self.cluster, backend=self.backend)

    def resolve(self) -> "ResolvedSettings":
        from kinetic.config import resolve_settings

        return resolve_settings(
            backend=self.backend,
            project=self.project,
            zone=self.zone,
            cluster=self.cluster,
            namespace=self.namespace,
            quiet=True,
        )

    # The CommandHost of contributed commands (kinetic_protocol.commands).

    def backend_settings(self) -> "BackendSettings":
        return self.resolve().backend_settings()

    def setting(self, spec: "SettingSpec") -> str | None:
        from kinetic.config import resolve_setting

        return resolve_setting(spec).value

    def save_profile(
        self, name: str, settings: "BackendSettings", *, build_service_account: str = ""
    ) -> None:
        import msgspec

        from kinetic.config import Profile, load_profiles, save_profiles

        profiles = load_profiles()
        profiles.profiles[name] = msgspec.structs.replace(
            profiles.profiles.get(name) or Profile(),
            project=settings.project,
            zone=settings.zone,
            cluster=settings.cluster,
            namespace=settings.namespace,
            build_service_account=build_service_account or None,
        )
        profiles.active = name
        save_profiles(profiles)

    def emit_json(self, document: Any) -> None:
        from kinetic.cli import render

        render.emit_json(document)

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[str]], *, empty: str) -> None:
        from kinetic.cli import render

        render.table(headers, rows, empty=empty)

    def key_values(self, pairs: Mapping[str, str]) -> None:
        from kinetic.cli import render

        render.key_values(pairs)


pass_cli = click.make_pass_decorator(CliContext, ensure=True)

SHARED_OPTIONS: dict[str, str] = {
    "backend": "Backend: local, gke, pathways, or an installed plugin.",
    "project": "GCP project.",
    "zone": "GCP zone of the cluster.",
    "cluster": "GKE cluster name.",
    "namespace": "Kubernetes namespace.",
}
"""The group's options that every subcommand also takes after its name
(``kinetic jobs list --project P`` means ``kinetic --project P jobs list``)."""


def _store(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None and param.name is not None:
        setattr(ctx.ensure_object(CliContext), param.name, value)


def accept_shared_options(command: click.Command) -> click.Command:
    """Give ``command`` (and, for a group, every command under it) the shared options it does
    not define itself; a value given there overrides the group's. Done once per command."""
    if getattr(command, "_kinetic_shared_options", False):
        return command
    own = {param.name for param in command.params}
    for name, help_text in SHARED_OPTIONS.items():
        if name not in own:
            command.params.append(
                click.Option([f"--{name}"], help=help_text, expose_value=False, callback=_store)
            )
    command._kinetic_shared_options = True  # type: ignore[attr-defined]
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            accept_shared_options(sub)
    return command
