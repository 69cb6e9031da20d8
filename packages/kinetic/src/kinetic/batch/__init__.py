"""Batches: one job per input, observed and collected as one :class:`BatchHandle`."""

from kinetic.batch.attach import BatchSummary, attach_batch, list_batches
from kinetic.batch.errors import BatchError, SkippedInputError, SubmitterAliveError
from kinetic.batch.fanout import run_map
from kinetic.batch.handle import BatchHandle
from kinetic.batch.lease import SubmitterStatus

__all__ = [
    "BatchError",
    "BatchHandle",
    "BatchSummary",
    "SkippedInputError",
    "SubmitterAliveError",
    "SubmitterStatus",
    "attach_batch",
    "list_batches",
    "run_map",
]
