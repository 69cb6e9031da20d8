"""One poll of many single jobs, whatever their workload: one LIST of their objects, one of
their pods (only when an object's state needs them), and one of the ``FailedCreate`` events
(only when an object lacks pods it should have)."""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from kinetic_gke.k8s import ClusterConnection, Obj, Workload
from kinetic_gke.k8s.pod_states import list_pod_states
from kinetic_gke.labels import APP, JOB_ID, group_selector, job_selector
from kinetic_protocol import JobRecord, JobState

__all__ = ["JobPoll", "poll_jobs", "selector_for"]


@dataclass
class JobPoll:
    """What one poll saw: each record with its object (None when it has none) and the state
    they map to, and the pods of each job (by job id) where they were read."""

    seen: list[tuple[JobRecord, Obj | None, JobState]]
    pods: dict[str, list[Obj]] = field(default_factory=dict)


def selector_for(records: Sequence[JobRecord], app: str) -> str:
    """One LIST covers them all: by job id, by the batch's group, or every Kinetic job."""
    if len(records) == 1:
        return job_selector(records[0].job_id, app)
    groups = {record.group_id for record in records}
    if len(groups) == 1 and None not in groups:
        return group_selector(str(groups.pop()), app)
    return f"{APP}={app}"


def poll_jobs(
    connection: ClusterConnection,
    workload: Workload,
    records: Sequence[JobRecord],
    *,
    app: str,
    unschedulable_timeout: float,
) -> JobPoll:
    """The state of each job of ``records`` as its object and pods say."""
    selector = selector_for(records, app)
    found = {obj["metadata"]["name"]: obj for obj in workload.list_matching(connection, selector)}
    wanted = [found.get(record.k8s_name) for record in records]
    explained_by_pods = [
        (record, obj)
        for record, obj in zip(records, wanted, strict=True)
        if obj is not None and workload.needs_pods(obj)
    ]
    pods_by_job: dict[str, list[Obj]] = defaultdict(list)
    if explained_by_pods:
        for pod in list_pod_states(connection, selector):
            pods_by_job[pod["metadata"].get("labels", {}).get(JOB_ID, "")].append(pod)
    owners = {
        owner: record.k8s_name
        for record, obj in explained_by_pods
        for owner in workload.refusing_owners(obj, pods_by_job.get(record.job_id, []))
    }
    events = _failed_create_events(connection, workload, owners) if owners else {}
    seen = [
        (
            record,
            obj,
            workload.state(
                obj,
                pods_by_job.get(record.job_id, []),
                events=events.get(record.k8s_name, []),
                unschedulable_timeout=unschedulable_timeout,
            ),
        )
        for record, obj in zip(records, wanted, strict=True)
    ]
    return JobPoll(seen, dict(pods_by_job))


def _failed_create_events(
    connection: ClusterConnection, workload: Workload, owners: dict[str, str]
) -> dict[str, list[Obj]]:
    """Why the cluster refuses to create pods (admission, quota), by the name of the object
    each refusing owner (``owners``: its name, the object's) makes pods for: one LIST."""
    by_name: dict[str, list[Obj]] = defaultdict(list)
    for event in connection.failed_create_events(workload.pod_owner_kind):
        owner = event.get("involvedObject", {}).get("name", "")
        if owner in owners:
            by_name[owners[owner]].append(event)
    return by_name
