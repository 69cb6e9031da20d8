"""The state every command shares: the group's global options and the calls they shape.

Commands receive it with :data:`pass_cli`. It is the only place that turns the global options
into library calls, so every command attaches, lists and resolves the same way.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from kinetic.batch import BatchHandle, BatchSummary
    from kinetic.config import ResolvedSettings
    from kinetic.jobs import JobHandle
    from kinetic.outputs import JobOutputs

__all__ = ["CliContext", "pass_cli"]

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


pass_cli = click.make_pass_decorator(CliContext, ensure=True)
