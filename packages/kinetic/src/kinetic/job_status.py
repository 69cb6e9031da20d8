"""``kinetic.job_status.JobStatus``, where the API reference puts it."""

from kinetic_protocol.status import JobState, JobStatus

__all__ = ["JobState", "JobStatus"]
