"""Job status as every backend reports it."""

import enum

import msgspec

__all__ = ["TERMINAL_STATUSES", "JobState", "JobStatus"]


class JobStatus(enum.Enum):
    """Observable status of a remote job."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    NOT_FOUND = "NOT_FOUND"

    @property
    def is_terminal(self) -> bool:
        """True once the job will not change state on its own."""
        return self in TERMINAL_STATUSES


TERMINAL_STATUSES = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.NOT_FOUND})


class JobState(msgspec.Struct, frozen=True, kw_only=True):
    """A status plus the backend's reason for it (``ImagePullBackOff``, ``exit 137``, ...)."""

    status: JobStatus
    detail: str = ""
    exit_code: int | None = None

    def describe(self) -> str:
        """One line for humans: ``FAILED (OOMKilled, exit 137)``."""
        extras = [self.detail] if self.detail else []
        if self.exit_code is not None and f"exit {self.exit_code}" not in self.detail:
            extras.append(f"exit {self.exit_code}")
        return self.status.value + (f" ({', '.join(extras)})" if extras else "")
