"""Batch overhead on this machine: Kinetic's local backend against submitit and a process pool.

Runs the same trivial function over N inputs with ``run_async_map`` (a detached process per
item), submitit's ``LocalExecutor.map_array`` (also a process per item) and
``concurrent.futures.ProcessPoolExecutor`` (reused workers, the floor), then measures
``attach_batch`` over the records of a finished batch of ``--attach-children`` children
(10,000 by default), written by the batch engine's own writer and signed as it signs them.

Prints one JSON object::

    {"n": 200, "cpus": 2, "python": "3.11.9", "project": "one module",
     "kinetic_local":  {"wall_s": ..., "submissions_per_s": ..., "per_item_overhead_ms": ...,
                        "slots": 2},
     "submitit_local": {"wall_s": ..., "submissions_per_s": ..., "per_item_overhead_ms": ...},
     "process_pool":   {"wall_s": ..., "submissions_per_s": ..., "per_item_overhead_ms": ...,
                        "workers": 2},
     "attach_batch":   {"children": 10000, "index": true, "attach_s": ...,
                        "handle_memory_mib": ..., "attach_peak_mib": ...,
                        "jobs_read_s": ..., "after_jobs_read_mib": ...},
     "pending":        {"n": 10000, "submission_s": ..., "all_started_s": ...,
                        "still_waiting": ..., "peak_processes": ..., "peak_rss_sum_mib": ...,
                        "peak_rss_mib": {"client": ..., "launcher": ..., "keeper": ...},
                        "samples": ...}}

Memory is Python's own allocations as ``tracemalloc`` counts them, during a second attach in
the same process (the first, timed without tracemalloc, paid for imports and caches):
``handle_memory_mib`` is what the attach left allocated (the handle and whatever it keeps),
``attach_peak_mib`` the most allocated at once during it, and ``after_jobs_read_mib`` what
stays once ``handle.jobs`` has been read once (its handles are made when first read) and the
list read is dropped; ``jobs_read_s`` is how long that first read takes (timed, as the
attach is, without tracemalloc).

A section left out with ``--skip`` is absent; ``pending`` is there with ``--pending N``: N
inputs submitted at once (``max_concurrent=None``), with the processes and memory they hold
at their peak (``local_pending``). ``all_started_s`` (from the start of the submission) is null
when inputs still waited (``still_waiting``) ``--pending-window`` seconds after the submission
ended: sampling stopped then, and what was left was killed.

    python -m uv run tools/bench/batch_local.py --n 200
    python -m uv run tools/bench/batch_local.py --n 4 --attach-children 20   # a smoke run
    python -m uv run tools/bench/batch_local.py --skip kinetic submitit pool attach \
        --pending 100000
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from local_pending import bench_pending
from workload import small_project


def _summary(n: int, wall: float, submitted_after: float) -> dict[str, float | None]:
    return {
        "wall_s": round(wall, 3),
        "submissions_per_s": round(n / submitted_after, 1) if submitted_after else None,
        "per_item_overhead_ms": round(1000 * wall / n, 2),
    }


def bench_kinetic(n: int, slots: int, square: Any) -> dict[str, Any]:
    import kinetic

    remote = kinetic.run(accelerator="cpu", backend="local")(square)
    remote.run_async(0).result()  # warm up: bundle, backend and the launcher, as in steady use
    from kinetic.local.launcher_client import _socket_path

    deadline = time.monotonic() + 10
    while not _socket_path().exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    start = time.perf_counter()
    batch = remote.run_async_map(range(n))  # the defaults: background submission, 64 at a time
    collected: list[Any] = []
    collector = threading.Thread(target=lambda: collected.extend(batch.results()))
    collector.start()
    while any(job is None for job in batch.jobs):  # when did the last submission land?
        time.sleep(0.005)
    submitted = time.perf_counter() - start
    collector.join()
    results = collected
    wall = time.perf_counter() - start
    assert results == [x * x for x in range(n)]
    return {**_summary(n, wall, submitted), "slots": slots}


@contextmanager
def importable_by_children(function: Any) -> Iterator[None]:
    """``PYTHONPATH`` names ``function``'s module directory while submitit starts its
    processes (they unpickle it by reference); Kinetic's jobs get it from their bundle."""
    directory = str(Path(sys.modules[function.__module__].__file__ or "").parent)
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [directory, before]))
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


def bench_submitit(n: int, folder: Path, square: Any) -> dict[str, Any]:
    import submitit

    executor = submitit.LocalExecutor(folder=folder)
    executor.update_parameters(timeout_min=10)
    with importable_by_children(square):
        start = time.perf_counter()
        jobs = executor.map_array(square, range(n))
        submitted = time.perf_counter() - start
        results = [job.result() for job in jobs]
        wall = time.perf_counter() - start
    assert results == [x * x for x in range(n)]
    return _summary(n, wall, submitted)


def bench_pool(n: int, workers: int, square: Any) -> dict[str, Any]:
    start = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        futures = [pool.submit(square, x) for x in range(n)]
        submitted = time.perf_counter() - start
        results = [f.result() for f in futures]
    wall = time.perf_counter() - start
    assert results == [x * x for x in range(n)]
    return {**_summary(n, wall, submitted), "workers": workers}


def bench_attach(children: int, *, with_index: bool = True) -> dict[str, Any]:
    """Write a finished batch's records (no jobs behind them) and time attach_batch over them.

    The records go through ``BatchRecords``, the batch engine's writer: the manifest sealed
    with the local backend's keyring (made here if missing), the children as the submitter
    adds them, then the completion record, so attach reads one manifest, one listing and
    the index the submitter writes after its completion, and starts no polling thread. With
    ``with_index=False`` (``--attach-without-index``) there is no index, as in a batch written
    before it: attach then lists and verifies each child record.
    """
    import kinetic
    from kinetic.bookkeeping.index import write_index
    from kinetic.bookkeeping.records import BatchRecords
    from kinetic.bookkeeping.sealed import BatchSeal
    from kinetic_protocol import BatchManifest, JobRecord
    from kinetic_runtime.stores import open_store
    from kinetic_testing.signed import keyring_of

    store = open_store(os.environ["KINETIC_STORE"])
    group_id = "grp-0badcafe"
    template = JobRecord(
        job_id="",
        backend="local",
        project="",
        cluster_name="",
        zone="",
        namespace="default",
        bucket_name=store.uri,
        k8s_name="",
        image_uri="",
        accelerator="cpu",
        func_name="square",
        display_name="square on cpu",
        created_at=datetime.now(UTC).isoformat(),
    )
    manifest = BatchManifest(
        group_id=group_id,
        func_name="square",
        total_expected=children,
        job_id_prefix="square-0badcafe",
        job_template=template,
        created_at=template.created_at,
        signed_records=True,
    )
    records = BatchRecords(store, group_id, BatchSeal.of_record(template))
    records.write_manifest(manifest, keyring_of(template))
    for index in range(children):
        records.add_child(index, 0, manifest.child_job_id(index, 0))
    done = records.mark_complete(children, cancelled=False)
    if with_index:  # as the submitter does once it has recorded its completion
        write_index(records, done, dict.fromkeys(range(children), 0), children)
    # Timed without tracemalloc, which slows every allocation; measured again with it.
    start = time.perf_counter()
    handle = kinetic.attach_batch(group_id, backend="local")
    elapsed = time.perf_counter() - start
    # The children's handles are made when first read: what that read costs.
    start = time.perf_counter()
    handle.jobs  # noqa: B018
    read = time.perf_counter() - start
    del handle
    tracemalloc.start()
    handle = kinetic.attach_batch(group_id, backend="local")
    current, peak = tracemalloc.get_traced_memory()
    job_ids = [job.job_id if job else None for job in handle.jobs]
    after_read, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert job_ids == [manifest.child_job_id(index, 0) for index in range(children)]
    return {
        "children": children,
        "index": with_index,
        "attach_s": round(elapsed, 3),
        "handle_memory_mib": round(current / 2**20, 2),
        "attach_peak_mib": round(peak / 2**20, 2),
        "jobs_read_s": round(read, 3),
        "after_jobs_read_mib": round(after_read / 2**20, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--attach-children", type=int, default=10_000)
    parser.add_argument(
        "--attach-without-index", action="store_true", help="attach as to a layout-1 batch"
    )
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=["kinetic", "submitit", "pool", "attach"]
    )
    parser.add_argument(
        "--in-repo", action="store_true", help="ship this repository as the job's project"
    )
    parser.add_argument("--pending", type=int, help="submit this many inputs at once")
    parser.add_argument("--pending-window", type=float, default=30.0)
    options = parser.parse_args()
    square = small_project(in_repo=options.in_repo).square
    slots = os.cpu_count() or 1
    report: dict[str, Any] = {
        "n": options.n,
        "cpus": slots,
        "python": sys.version.split()[0],
        "project": "this repository" if options.in_repo else "one module",
    }
    with tempfile.TemporaryDirectory(prefix="kinetic-bench-", ignore_cleanup_errors=True) as tmp:
        os.environ["KINETIC_HOME"] = str(Path(tmp, "home"))
        os.environ["KINETIC_STORE"] = f"file://{tmp}/store"
        if "kinetic" not in options.skip:
            report["kinetic_local"] = bench_kinetic(options.n, slots, square)
        if "submitit" not in options.skip:
            report["submitit_local"] = bench_submitit(options.n, Path(tmp, "submitit"), square)
        if "pool" not in options.skip:
            report["process_pool"] = bench_pool(options.n, slots, square)
        if "attach" not in options.skip:
            os.environ["KINETIC_STORE"] = f"file://{tmp}/attach-store"
            report["attach_batch"] = bench_attach(
                options.attach_children, with_index=not options.attach_without_index
            )
        if options.pending:
            os.environ["KINETIC_STORE"] = f"file://{tmp}/pending-store"
            report["pending"] = bench_pending(options.pending, square, options.pending_window)
        # Before the temporary directory goes: deleting 100,000 jobs' files takes minutes.
        print(json.dumps(report, indent=2), flush=True)


if __name__ == "__main__":
    main()
