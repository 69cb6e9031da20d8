"""A batch submitter's lease: of two resumers that both saw it dead, exactly one takes the
next epoch, whichever order their reads and writes interleave in; and a lease a store writer
broke or forged is skipped, never a hang or an unexpected error."""

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from kinetic.batch import SubmitterAliveError
from kinetic.batch.lease import LeaseHolder, latest_lease, submitter_status
from kinetic.bookkeeping.records import BatchRecords
from kinetic.bookkeeping.sealed import BatchSeal
from kinetic_protocol import BackendError, SubmitterLease, layout
from kinetic_runtime.local.processes import machine_identity, process_identity
from kinetic_runtime.stores.local import LocalStore

GROUP = "grp-0000beef"
LONG_AGO = "2026-01-01T00:00:00+00:00"


class _LateWriter(LocalStore):
    """The same store, but ``before_write`` runs just before this handle's first write: another
    process acting between this one's read of the lease and its write of the next."""

    def __init__(self, root: Path, before_write: Callable[[], None]) -> None:
        super().__init__(root)
        self._before_write: Callable[[], None] | None = before_write

    def write(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        before, self._before_write = self._before_write, None
        if before is not None:
            before()
        super().write(key, data, if_absent=if_absent)


@pytest.fixture
def records(store: LocalStore, seal: BatchSeal) -> BatchRecords:
    return BatchRecords(store, GROUP, seal)


@pytest.fixture
def dead_submitter(records: BatchRecords) -> None:
    """Epoch 0 of ``GROUP``, whose holder stopped beating long ago."""
    lease = SubmitterLease(
        group_id=GROUP,
        epoch=0,
        owner="dead",
        host="laptop",
        pid=1,
        started_at=LONG_AGO,
        heartbeat_at=LONG_AGO,
        lease_seconds=30.0,
    )
    records.write_lease(lease)


def test_a_resumer_beaten_between_its_read_and_its_write_is_refused(
    store: LocalStore, records: BatchRecords, dead_submitter: None
) -> None:
    winners: list[LeaseHolder] = []
    late = _LateWriter(store.root, lambda: winners.append(LeaseHolder.take_over(records)))
    with pytest.raises(SubmitterAliveError, match=r"resumed batch .* at the same moment"):
        LeaseHolder.take_over(BatchRecords(late, GROUP, records.seal))

    [winner] = winners
    assert winner.epoch == 1
    held = latest_lease(records)
    assert held is not None and (held.epoch, held.owner) == (1, winner.lease.owner), (
        "the refused resumer overwrote the winner's lease"
    )


def test_a_resumer_alone_takes_the_next_epoch(records: BatchRecords, dead_submitter: None) -> None:
    holder = LeaseHolder.take_over(records)
    held = latest_lease(records)
    assert held is not None and (held.epoch, held.owner) == (1, holder.lease.owner)
    with pytest.raises(SubmitterAliveError, match="is being submitted by"):
        LeaseHolder.take_over(records)


def _lease(records: BatchRecords, **fields: object) -> bytes:
    """A lease object with any field values at all, signed: what a submitter with a bug, or
    with the keys, could leave. Bounds hold even for a record that verifies."""
    now = datetime.now(UTC).isoformat()
    values: dict[str, object] = {
        "group_id": GROUP,
        "epoch": 0,
        "owner": "o",
        "host": "elsewhere",
        "pid": 1,
        "started_at": now,
        "heartbeat_at": now,
        "lease_seconds": 30.0,
    }
    values.update(fields)
    return signed(records.seal, layout.lease_key(GROUP, 0), json.dumps(values).encode())


def signed(seal: BatchSeal, key: str, body: bytes) -> bytes:
    """``body``, whatever it holds, signed as the bookkeeping record at ``key``."""
    signature = seal._keyring_now().sign("batch-record", key, body)
    return b'{"kinetic_signature":' + msgspec.json.encode(signature) + b',"record":' + body + b"}"


def test_a_heartbeat_from_the_far_future_does_not_hold_readers_off(
    store: LocalStore, records: BatchRecords
) -> None:
    """A heartbeat more than a lease length ahead is no clock skew: without this rule it would
    make ``results()`` wait and ``resume`` refuse until that date."""
    ahead = (datetime.now(UTC) + timedelta(days=365)).isoformat()
    store.write(layout.lease_key(GROUP, 0), _lease(records, heartbeat_at=ahead))
    assert submitter_status(records, None).gone
    assert LeaseHolder.take_over(records).epoch == 1


@pytest.mark.parametrize(
    "fields",
    [
        {"lease_seconds": 1e300},
        {"lease_seconds": -5},
        {"heartbeat_at": "yesterday"},
        {"heartbeat_at": "2026-01-01T00:00:00"},  # no time zone
        {"pid": 10**30},
        {"epoch": "one"},
    ],
    ids=lambda fields: next(iter(fields)),
)
def test_a_lease_with_bad_fields_is_skipped_naming_its_key(
    store: LocalStore,
    records: BatchRecords,
    fields: dict[str, object],
    caplog: pytest.LogCaptureFixture,
) -> None:
    store.write(layout.lease_key(GROUP, 0), _lease(records, **fields))
    assert latest_lease(records) is None
    assert submitter_status(records, None).gone
    assert layout.lease_key(GROUP, 0) in caplog.text


def _exited_process() -> str:
    """The identity (pid and start time) of a process of this machine that has exited."""
    process = subprocess.Popen([sys.executable, "-c", "input()"], stdin=subprocess.PIPE)
    identity = process_identity(process.pid)
    process.communicate(b"\n")
    return identity


def test_a_submitter_known_gone_on_this_machine_is_gone_at_once(
    store: LocalStore, records: BatchRecords
) -> None:
    """After a kill -9 on this machine, ``resume`` need not wait out the lease: the process
    that held it is known to be gone."""
    exited = _exited_process()
    lease = _lease(
        records, machine=machine_identity(), process=exited, pid=int(exited.split(":")[0])
    )
    store.write(layout.lease_key(GROUP, 0), lease)
    assert submitter_status(records, None).gone
    assert LeaseHolder.take_over(records).epoch == 1


def test_a_live_submitter_on_this_machine_keeps_its_lease(
    store: LocalStore, records: BatchRecords
) -> None:
    alive = os.getppid()
    lease = _lease(records, machine=machine_identity(), process=process_identity(alive), pid=alive)
    store.write(layout.lease_key(GROUP, 0), lease)
    assert submitter_status(records, None).state == "submitting"
    with pytest.raises(SubmitterAliveError):
        LeaseHolder.take_over(records)


def test_a_pid_now_held_by_another_process_is_not_the_submitter(
    store: LocalStore, records: BatchRecords
) -> None:
    """A live process with the holder's pid but another start time: the holder is gone."""
    alive = os.getppid()
    lease = _lease(records, machine=machine_identity(), process=f"{alive}:1", pid=alive)
    store.write(layout.lease_key(GROUP, 0), lease)
    assert submitter_status(records, None).gone


@pytest.mark.parametrize("machine", ["another", "older"], ids=["same hostname", "older lease"])
def test_a_submitter_elsewhere_with_this_hostname_is_judged_by_its_heartbeat(
    store: LocalStore, records: BatchRecords, machine: str
) -> None:
    """Two machines with one hostname sharing a store (containers, cloned VMs): each took the
    other's live submitter for dead, its pid being no process of its own. So does a lease of
    a Kinetic from before machine identities (it names no machine)."""
    exited = _exited_process()
    fields: dict[str, object] = {"host": socket.gethostname(), "pid": int(exited.split(":")[0])}
    if machine == "another":
        fields |= {
            "machine": "0b5e55ed-0000-4000-8000-000000000000/pid:4026531836",
            "process": exited,
        }
    store.write(layout.lease_key(GROUP, 0), _lease(records, **fields))
    assert submitter_status(records, None).state == "submitting"
    with pytest.raises(SubmitterAliveError):
        LeaseHolder.take_over(records)


def test_a_holder_paused_past_its_lease_finds_it_was_taken_over(records: BatchRecords) -> None:
    holder = LeaseHolder.first(records)
    assert holder.holds()
    holder.lease.heartbeat_at = LONG_AGO  # frozen since then: its last beat is that old
    records.write_lease(holder.lease)
    assert holder.holds(), "nobody has taken over yet"
    LeaseHolder.take_over(records)
    assert not holder.holds()
    assert holder.lost.is_set()


def test_a_thawed_submitter_records_no_error_for_an_input_a_resumer_now_owns(
    remote: Any, fake_backend: Any, store: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGSTOP past the lease, resumed elsewhere, thawed: the old submitter's pending
    submission then fails, and it used to record that failure, reporting an input the resumer
    ran as failed for ever."""
    holders: list[LeaseHolder] = []
    first = LeaseHolder.first.__func__  # type: ignore[attr-defined]

    def keep_first(cls: type[LeaseHolder], records: BatchRecords) -> LeaseHolder:
        holders.append(first(cls, records))
        return holders[-1]

    monkeypatch.setattr(LeaseHolder, "first", classmethod(keep_first))
    entered, thaw = threading.Event(), threading.Event()
    submit = fake_backend.submit

    def frozen_then_refused(record: Any, **kwargs: Any) -> None:
        if record.group_index == 0:
            entered.set()
            thaw.wait()
            raise BackendError("the backend refused a late submission")
        submit(record, **kwargs)

    monkeypatch.setattr(fake_backend, "submit", frozen_then_refused)
    batch = remote.run_async_map([1, 2], max_concurrent=1)
    assert entered.wait(30)
    [holder] = holders
    holder.stop()  # frozen: no more heartbeats ...
    holder.lease.heartbeat_at = LONG_AGO  # ... since long ago
    holder.records.write_lease(holder.lease)
    LeaseHolder.take_over(holder.records)  # a resumer, elsewhere
    thaw.set()
    batch._state.submission_done.wait(30)
    assert not store.exists(layout.submission_error_key(batch.group_id, 0))
    assert not store.exists(layout.completion_key(batch.group_id)), "the resumer finishes it"
