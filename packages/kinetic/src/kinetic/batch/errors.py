"""Errors of a batch as a whole."""

from typing import TYPE_CHECKING, Any

from kinetic_protocol import KineticError

if TYPE_CHECKING:
    from kinetic.handle import JobHandle

__all__ = ["BatchError", "SkippedInputError", "SubmitterAliveError"]


class BatchError(KineticError):
    """Raised by ``BatchHandle.results()`` when children failed.

    ``partial_results`` is aligned with the inputs: results where children succeeded, ``None``
    where they failed, were never submitted, or their submission raised.
    ``submission_failures`` maps the indices whose submission raised to the exception.
    ``cleaned_up`` lists the inputs whose outcome was already collected and cleaned up (by an
    earlier ``results(cleanup=True)``): not failures, but nothing is left to return for them.
    """

    def __init__(
        self,
        group_id: str,
        failures: list["JobHandle"],
        partial_results: list[Any],
        submission_failures: dict[int, Exception] | None = None,
        *,
        cleaned_up: list[int] | None = None,
    ) -> None:
        self.group_id = group_id
        self.failures = failures
        self.partial_results = partial_results
        self.submission_failures = dict(submission_failures or {})
        self.cleaned_up = sorted(cleaned_up or [])
        parts = [f"{len(failures)} of {len(partial_results)} jobs failed"]
        if self.submission_failures:
            parts.append(f"{len(self.submission_failures)} could not be submitted")
        if self.cleaned_up:
            parts.append(
                f"{len(self.cleaned_up)} were already collected and cleaned up (their outcomes "
                "are no longer stored)"
            )
        shown = ", ".join(job.job_id for job in failures[:3])
        more = (
            f" (e.g. {shown}; `kinetic batch failures {group_id}` shows their logs)"
            if shown
            else ""
        )
        super().__init__(f"Batch {group_id}: {'; '.join(parts)}{more}")


class SkippedInputError(KineticError):
    """An input that was never submitted: the batch stopped first (fail-fast, a cancel, an
    error of the store) or its submitter died; the message says which."""


class SubmitterAliveError(KineticError):
    """``resume`` refused: the batch's submitter is alive, or another process resumed it
    first. A batch is never submitted by two processes at once."""
