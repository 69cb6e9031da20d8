"""The labels Kinetic puts on every Kubernetes object, so jobs can be found without a database."""

from kinetic_protocol import JobRecord

__all__ = [
    "APP",
    "ATTEMPT",
    "GROUP_ID",
    "GROUP_INDEX",
    "JOB_ID",
    "group_selector",
    "job_labels",
    "job_selector",
    "pod_selector",
]

APP = "app"
JOB_ID = "kinetic.dev/job-id"
GROUP_ID = "kinetic.dev/group-id"
GROUP_INDEX = "kinetic.dev/group-index"
ATTEMPT = "kinetic.dev/attempt"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
"""The label the job controller puts on each pod of an Indexed Job: its index."""
JOB_NAME = "batch.kubernetes.io/job-name"
"""The label the job controller puts on each pod of a Job: the Job's name."""


def job_labels(record: JobRecord, app: str = "kinetic") -> dict[str, str]:
    labels = {APP: app, JOB_ID: record.job_id, ATTEMPT: str(record.attempt)}
    if record.group_id:
        labels[GROUP_ID] = record.group_id
        labels[GROUP_INDEX] = str(record.group_index)
    return labels


def job_selector(job_id: str, app: str = "kinetic") -> str:
    return f"{APP}={app},{JOB_ID}={job_id}"


def group_selector(group_id: str, app: str = "kinetic") -> str:
    return f"{APP}={app},{GROUP_ID}={group_id}"


def pod_selector(record: JobRecord, app: str = "kinetic") -> str:
    """The pods of one job: its own, or, for an index of its batch's array Job
    (``record.in_array``), that index's (counted in its own Job: a batch may be several)."""
    if record.in_array:
        index = int(record.group_index or 0) - record.array_offset
        return (
            f"{group_selector(str(record.group_id), app)},{JOB_NAME}={record.k8s_name},"
            f"{COMPLETION_INDEX}={index}"
        )
    return job_selector(record.job_id, app)
