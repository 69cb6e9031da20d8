"""Who submits a batch, and whether they are still alive: the submitter's lease in the store.

The submitting process holds a lease object that it rewrites every few seconds (its
heartbeat). Any reader can then tell a batch that is being submitted from one whose submitter
finished (its completion record) or died (no heartbeat for the lease's length), and nobody
waits forever on a dead submitter. ``resume`` takes a dead submitter's place by creating the
next epoch's lease create-only, so two resumers never both submit; a submitter that finds a
newer epoch than its own has been replaced and stops. Leases are signed like the rest of the
batch's bookkeeping: a forged one is ignored, with a warning naming its key.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from kinetic import _log
from kinetic.batch.errors import SubmitterAliveError
from kinetic.settings import BATCH_HEARTBEAT, BATCH_LEASE
from kinetic_protocol import (
    BatchCompletion,
    KineticError,
    PreconditionFailedError,
    SubmitterLease,
)
from kinetic_runtime.local.processes import machine_identity, process_identity, same_process_alive

if TYPE_CHECKING:
    from kinetic.bookkeeping.records import BatchRecords

__all__ = [
    "LeaseHolder",
    "SubmitterStatus",
    "latest_lease",
    "stopped_on_its_own_error",
    "submitter_status",
]

log = _log.get_logger(__name__)


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds")


def _seconds(spec_value: float | None, fallback: float) -> float:
    return fallback if spec_value is None or spec_value <= 0 else spec_value


def latest_lease(records: BatchRecords) -> SubmitterLease | None:
    """The newest epoch's lease of the batch that verifies (one LIST and one read), if any."""
    return records.leases()[0]


@dataclass(frozen=True)
class SubmitterStatus:
    """What a reader can tell about a batch's submission at one moment."""

    state: Literal["submitting", "finished", "gone"]
    lease: SubmitterLease | None = None
    completion: BatchCompletion | None = None

    @property
    def gone(self) -> bool:
        return self.state == "gone"

    def who(self) -> str:
        lease = self.lease
        return (
            "its submitter" if lease is None else f"its submitter ({lease.host}, pid {lease.pid})"
        )

    def describe(self, group_id: str, submitted: int, total: int) -> str:
        """One sentence for messages: what happened to the submission, and what to do."""
        if self.state == "submitting":
            return f"it is still being submitted ({submitted} of {total} inputs so far)"
        if self.state == "finished":
            completion = self.completion
            why = ""
            if completion is not None and completion.cancelled:
                why = " (cancelled)"
            elif completion is not None and completion.fail_fast:
                why = " (fail_fast stopped it after a failure)"
            elif completion is not None and completion.error:
                why = f" (it stopped on an error: {completion.error})"
            elif completion is not None and completion.cost_capped:
                why = (
                    f" (its {completion.cost_capped}; `kinetic batch resume {group_id} "
                    "--max-cost USD` with a higher cap submits the rest)"
                )
            return f"its submission ended{why} after {submitted} of {total} inputs"
        since = self.lease.heartbeat_at if self.lease is not None else "an unknown time"
        return (
            f"{self.who()} stopped at {since} after submitting {submitted} of {total} inputs; "
            f"`kinetic batch resume {group_id}` (or batch.resume()) submits the rest"
        )


def stopped_on_its_own_error(completion: BatchCompletion) -> bool:
    """A submitter that stopped on an error of its own (the store refused a write) leaves its
    remaining inputs to ``resume``; one stopped by a cancel or by fail-fast does not."""
    return bool(completion.error) and not completion.cancelled and not completion.fail_fast


def submitter_status(records: BatchRecords, completion: BatchCompletion | None) -> SubmitterStatus:
    """Finished if it wrote its completion; otherwise submitting or gone by its heartbeat."""
    if completion is not None:
        return SubmitterStatus("finished", completion=completion)
    return _by_heartbeat(latest_lease(records))


def _by_heartbeat(lease: SubmitterLease | None) -> SubmitterStatus:
    """Submitting while the lease's holder keeps beating, else gone.

    A heartbeat from further in the future than one lease length is no clock skew but a
    forged or broken lease, which would otherwise hold every reader off for ever: it counts
    as gone. So does a holder on this very machine whose process has exited, at once rather
    than a lease length later.
    """
    if lease is None:
        return SubmitterStatus("gone")
    age = _now() - datetime.fromisoformat(lease.heartbeat_at)
    length = timedelta(seconds=lease.lease_seconds)
    if age > length or -age > length or _exited_here(lease):
        return SubmitterStatus("gone", lease=lease)
    return SubmitterStatus("submitting", lease=lease)


def _exited_here(lease: SubmitterLease) -> bool:
    """Whether the lease's holder ran on this very machine (its boot id and PID namespace,
    not its hostname, which another machine may share) and that process no longer runs: a
    pid now held by another process (its start time differs) is no longer the holder. A
    lease that names no machine (an older Kinetic's) leaves it to the heartbeat."""
    here = machine_identity()
    if not here or lease.machine != here or not lease.process:
        return False
    return not same_process_alive(lease.process)


class LeaseHolder:
    """This process's lease on submitting one batch: taken, kept alive, released.

    ``lost`` is set once another process holds a newer epoch (it resumed the batch because
    this one looked dead): the submitter must stop submitting.
    """

    def __init__(self, records: BatchRecords, epoch: int) -> None:
        self.records = records
        self.group_id = group_id = records.group_id
        self.epoch = epoch
        self.heartbeat_seconds = _seconds(BATCH_HEARTBEAT.number(), 5.0)
        self.lease_seconds = max(_seconds(BATCH_LEASE.number(), 30.0), 2 * self.heartbeat_seconds)
        started = _stamp(_now())
        self.lease = SubmitterLease(
            group_id=group_id,
            epoch=epoch,
            owner=secrets.token_hex(8),
            host=socket.gethostname(),
            pid=os.getpid(),
            started_at=started,
            heartbeat_at=started,
            lease_seconds=self.lease_seconds,
            machine=machine_identity(),
            process=process_identity(os.getpid()),
        )
        self.lost = threading.Event()
        self.submitted: Callable[[], int] = lambda: 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def first(cls, records: BatchRecords) -> LeaseHolder:
        """Epoch 0, for the process that creates the batch (before its manifest)."""
        holder = cls(records, 0)
        holder._create()
        return holder

    @classmethod
    def take_over(cls, records: BatchRecords, *, holder_finished: bool = False) -> LeaseHolder:
        """The next epoch (above every lease key, forged ones too), if the current submitter
        is gone (or ``holder_finished``: its completion record says it stopped); else
        SubmitterAliveError."""
        group_id = records.group_id
        current, highest = records.leases()
        alive = not holder_finished and _by_heartbeat(current).state == "submitting"
        if current is not None and alive:
            raise SubmitterAliveError(
                f"Batch {group_id} is being submitted by {current.host} (pid {current.pid}, "
                f"last heartbeat {current.heartbeat_at}); resume only a batch whose submitter "
                "is gone. `kinetic batch status` shows its progress."
            )
        holder = cls(records, highest + 1)
        try:
            holder._create()
        except PreconditionFailedError:
            raise SubmitterAliveError(
                f"Another process resumed batch {group_id} at the same moment; it submits the "
                "rest. `kinetic batch status` shows its progress."
            ) from None
        return holder

    def _create(self) -> None:
        self.records.write_lease(self.lease, if_absent=True)

    def start(self, submitted: Callable[[], int]) -> None:
        """Beat in the background until :meth:`stop`; ``submitted`` counts inputs so far."""
        self.submitted = submitted
        self._thread = threading.Thread(
            target=self._beat, name=f"kinetic-lease-{self.group_id}", daemon=True
        )
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_seconds):
            try:
                newest = latest_lease(self.records)
                if newest is not None and newest.epoch > self.epoch:
                    _log.say(
                        f"Batch {self.group_id} was resumed elsewhere ({newest.host}, pid "
                        f"{newest.pid}); this process stops submitting it."
                    )
                    self.lost.set()
                    return
                self.beat()
            except KineticError:
                log.warning("batch heartbeat failed", group_id=self.group_id, exc_info=True)

    def holds(self) -> bool:
        """Whether this process still holds the batch; call it before writing bookkeeping.

        While the heartbeat is recent nobody can have taken over, so this costs nothing. After
        a pause longer than half a lease (a frozen or suspended process, a partition) another
        process may have resumed the batch meanwhile: the store is read again, and a newer
        epoch sets ``lost``, so a thawed submitter writes nothing more.
        """
        if self.lost.is_set():
            return False
        last = datetime.fromisoformat(self.lease.heartbeat_at)
        if _now() - last <= timedelta(seconds=self.lease_seconds / 2):
            return True
        newest = latest_lease(self.records)
        if newest is not None and newest.epoch > self.epoch:
            self.lost.set()
            return False
        return True

    def beat(self) -> None:
        """Write the heartbeat now."""
        self.lease.heartbeat_at = _stamp(_now())
        self.lease.submitted = self.submitted()
        self.records.write_lease(self.lease)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
