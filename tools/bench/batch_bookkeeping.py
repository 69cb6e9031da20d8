"""What signing a batch's bookkeeping costs per child, in a ``file://`` store on this machine.

Writes ``--children`` child records (plus a submission error, a completion and a lease) twice:
once as the batch engine writes them now (signed, ``BatchRecords``), once as they were written
before (the same records as plain JSON), counting store writes and bytes. Then lists the
batch as a fresh reader does: the signed batch read and verified through ``BatchRecords``
(one read and one HMAC per child record, once per process), the plain one by the names of its
child records alone (what a reader did before). A second listing of the signed batch shows
what a poll costs once every child is verified.

Prints one JSON object::

    {"children": 10000, "cpus": 2, "python": "3.11.9",
     "writes": {"signed": 10003, "plain": 10003, "added_per_child": 0},
     "bytes_per_child_record": {"signed": ..., "plain": ...},
     "in_memory_us": {"seal": ..., "verify": ...},
     "listing_s": {"signed_first": ..., "signed_again": ..., "plain_names_only": ...},
     "verify_us_per_child": ...}

``in_memory_us`` is the CPU cost of signing and of verifying one child record (no store).
``verify_us_per_child`` is the first signed listing less the plain one, per child: the time a
reader adds (store reads included) to verify each child record once.

    python -m uv run tools/bench/batch_bookkeeping.py --children 10000
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

GROUP = "grp-0bookkee"


def _counting(store: Any) -> Any:
    """``store`` with its writes counted (``store.writes``, ``store.written`` bytes)."""
    real = store.write
    store.writes, store.written = 0, 0

    def write(key: str, data: bytes, *, if_absent: bool = False) -> None:
        store.writes += 1
        store.written += len(data)
        real(key, data, if_absent=if_absent)

    store.write = write
    return store


def _write_batch(records: Any, children: int, *, signed: bool) -> None:
    """The bookkeeping of a finished batch of ``children`` inputs, signed or as plain JSON."""
    from kinetic_protocol import BatchChild, BatchCompletion, SubmitterLease, layout
    from kinetic_protocol.records import encode_json

    now = "2026-01-01T00:00:00.000+00:00"
    lease = SubmitterLease(
        group_id=GROUP,
        epoch=0,
        owner="me",
        host="here",
        pid=1,
        started_at=now,
        heartbeat_at=now,
        lease_seconds=30.0,
    )
    if signed:
        records.write_lease(lease, if_absent=True)
        for index in range(children):
            records.add_child(index, 0, f"f-0bookkee-{index}")
        records.mark_complete(children, cancelled=False)
        return
    store = records.store
    store.write(layout.lease_key(GROUP, 0), encode_json(lease), if_absent=True)
    for index in range(children):
        child = BatchChild(
            group_id=GROUP,
            index=index,
            attempt=0,
            job_id=f"f-0bookkee-{index}",
            submitted_at=now,
        )
        store.write(layout.child_key(GROUP, index, 0), encode_json(child), if_absent=True)
    done = BatchCompletion(group_id=GROUP, submitted=children, finished_at=now)
    store.write(layout.completion_key(GROUP), encode_json(done))


def _in_memory(seal: Any, children: int) -> tuple[float, float]:
    """Microseconds to seal, and to verify, one child record, with no store involved."""
    from kinetic_protocol import BatchChild, layout

    keys = [layout.child_key(GROUP, index, 0) for index in range(children)]
    records = [
        BatchChild(group_id=GROUP, index=index, attempt=0, job_id=f"f-{index}", submitted_at="")
        for index in range(children)
    ]
    began = time.perf_counter()
    sealed = [seal.seal(key, record) for key, record in zip(keys, records, strict=True)]
    sealing = time.perf_counter() - began
    began = time.perf_counter()
    for key, data in zip(keys, sealed, strict=True):
        seal.open(data, BatchChild, key=key, where=key)
    verifying = time.perf_counter() - began
    return round(1e6 * sealing / children, 1), round(1e6 * verifying / children, 1)


def bench(children: int, root: Path) -> dict[str, Any]:
    from kinetic.bookkeeping.records import BatchRecords
    from kinetic.bookkeeping.sealed import BatchSeal
    from kinetic_protocol import layout
    from kinetic_runtime.keydir import directory_keyring
    from kinetic_runtime.stores import LocalStore

    keyring = directory_keyring(root / "keys", create=True)
    seal = BatchSeal(lambda refresh: keyring)
    signed_store = _counting(LocalStore(root / "signed"))
    plain_store = _counting(LocalStore(root / "plain"))

    _write_batch(BatchRecords(signed_store, GROUP, seal), children, signed=True)
    _write_batch(BatchRecords(plain_store, GROUP, seal), children, signed=False)
    seal_us, verify_us = _in_memory(seal, children)

    reader = BatchRecords(signed_store, GROUP, BatchSeal(lambda refresh: keyring))
    began = time.perf_counter()
    first = reader.listing(children, retries=0)
    signed_first = time.perf_counter() - began
    began = time.perf_counter()
    again = reader.listing(children, retries=0)
    signed_again = time.perf_counter() - began
    assert len(first.latest_attempts) == len(again.latest_attempts) == children

    began = time.perf_counter()
    names = plain_store.list(layout.children_prefix(GROUP))
    plain_store.read(layout.completion_key(GROUP))
    plain_names = time.perf_counter() - began
    assert len(names) == children

    one_child = layout.child_key(GROUP, 0, 0)
    return {
        "children": children,
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "writes": {
            "signed": signed_store.writes,
            "plain": plain_store.writes,
            "added_per_child": (signed_store.writes - plain_store.writes) / children,
        },
        "bytes_per_child_record": {
            "signed": len(signed_store.read(one_child)),
            "plain": len(plain_store.read(one_child)),
        },
        "in_memory_us": {"seal": seal_us, "verify": verify_us},
        "listing_s": {
            "signed_first": round(signed_first, 3),
            "signed_again": round(signed_again, 3),
            "plain_names_only": round(plain_names, 3),
        },
        "verify_us_per_child": round(1e6 * max(0.0, signed_first - plain_names) / children, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--children", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kinetic-bench-") as tmp:
        print(json.dumps(bench(args.children, Path(tmp))))


if __name__ == "__main__":
    main()
