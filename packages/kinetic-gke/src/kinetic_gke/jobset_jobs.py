"""The gke backend's jobs on several hosts (``nodes=``, ``slices=``), each one JobSet (see
:mod:`kinetic_gke.jobsets`): creating, polling, deleting and listing them, and which pod is
which host's. Polling and deletion are the backend's own, with the JobSet workload.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kinetic_gke.deletion import delete_confirmed
from kinetic_gke.job_polls import poll_jobs
from kinetic_gke.jobset_status import host_of, newest_by_host
from kinetic_gke.jobsets import HostGroup, group_record, jobset_manifest
from kinetic_gke.k8s import ClusterConnection, Obj
from kinetic_gke.k8s.env_secrets import create_with_env
from kinetic_gke.k8s.jobset_workload import JobSetWorkload
from kinetic_gke.labels import APP, JOB_ID, job_labels, job_selector
from kinetic_gke.manifests import PodOptions
from kinetic_gke.queueing.states import Completion, Seen
from kinetic_protocol import (
    Accelerator,
    JobRecord,
    parse_accelerator,
)

__all__ = ["JOBSETS", "JobSets", "host_group"]

JOBSETS = JobSetWorkload()


def host_group(record: JobRecord, accelerator: Accelerator | None = None) -> HostGroup | None:
    """The hosts ``record`` runs on as a JobSet; None for a job of one node and one slice
    (a Job)."""
    if record.nodes == 1 and record.slices == 1:
        return None
    return HostGroup.of(
        accelerator or parse_accelerator(record.accelerator),
        nodes=record.nodes,
        slices=record.slices,
    )


class JobSets:
    """The JobSets of one backend's cluster connection."""

    def __init__(self, connection: ClusterConnection, app: str) -> None:
        self.connection = connection
        self.app = app

    def create(
        self,
        record: JobRecord,
        group: HostGroup,
        *,
        accelerator: Accelerator,
        options: PodOptions,
        command: tuple[str, ...],
        env: Mapping[str, str],
    ) -> None:
        """Create the job's JobSet; with captured ``env``, first the Secret every host reads
        the values from (owned by the set)."""
        record = group_record(record, group)
        create_with_env(
            self.connection,
            JOBSETS,
            record.k8s_name,
            lambda secret: jobset_manifest(
                record,
                group,
                accelerator=accelerator,
                options=options,
                command=command,
                env_secret=secret,
            ),
            labels=job_labels(record, self.app),
            env=env,
        )

    def poll(
        self, records: Sequence[JobRecord], unschedulable_timeout: float, queued: Completion
    ) -> list[Seen]:
        """Each job's record (as given), JobSet and state: one LIST of the sets, one of
        their pods, and Kueue's word (``queued``) for those under a queue."""
        if not records:
            return []
        named = [_named(record) for record in records]
        poll = poll_jobs(
            self.connection,
            JOBSETS,
            named,
            app=self.app,
            unschedulable_timeout=unschedulable_timeout,
        )
        seen = [
            (record, obj, state) for record, (_, obj, state) in zip(records, poll.seen, strict=True)
        ]
        completed = queued(seen)
        return [(record, obj, completed.get(record.job_id, state)) for record, obj, state in seen]

    def delete(
        self, record: JobRecord, *, timeout: float, poll_interval: float, shortest: float
    ) -> None:
        """Delete the job's JobSet, its Jobs, pods and service, and confirm they are gone."""
        delete_confirmed(
            self.connection,
            [_named(record).k8s_name],
            job_selector(record.job_id, self.app),
            workload=JOBSETS,
            timeout=timeout,
            poll_interval=poll_interval,
            shortest=shortest,
        )

    def job_ids(self) -> set[str]:
        """The job ids of every live JobSet of this backend."""
        sets = JOBSETS.list_matching(self.connection, f"{APP}={self.app}")
        return {
            obj["metadata"].get("labels", {}).get(JOB_ID, "")
            for obj in sets
            if not obj["metadata"].get("deletionTimestamp")
        }

    def pods_by_host(self, record: JobRecord) -> dict[int, Obj]:
        """The newest pod of each host of the group's current run: one read of the set and
        one LIST of its pods."""
        pods = self.connection.list_pods(job_selector(record.job_id, self.app))
        jobset = JOBSETS.get(self.connection, _named(record).k8s_name)
        if jobset is not None:
            return newest_by_host(jobset, pods)
        group = host_group(record)
        per_slice = 1 if group is None else group.hosts_per_slice
        newest: dict[int, Obj] = {}
        for pod in sorted(pods, key=lambda p: p["metadata"].get("creationTimestamp") or ""):
            newest[host_of(pod, per_slice)] = pod
        return newest


def _named(record: JobRecord) -> JobRecord:
    group = host_group(record)
    return record if group is None else group_record(record, group)
