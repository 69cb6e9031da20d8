"""Hashing and uploading local data to a gs:// jobs store, cold and cached.

Makes a directory of ``--files`` files holding ``--mib`` MiB in all (default: 10,000 files,
1 GiB), starts fake-gcs-server, and measures the data part of a submission to a backend whose
jobs cannot see this machine (gke, pathways), as ``kinetic.data.plan`` runs it:

* ``cold``: a new ``Data``, no digest cache, nothing in the store: hash every byte, upload
  every file (the transfer manager's threads), write the completion marker;
* ``resubmit_same_object``: the same ``Data`` object again in the same process (its snapshot
  and the session's upload record are kept): the usual case of a loop or a batch;
* ``resubmit_new_process``: a new ``Data`` and a new session, as a later run of the script
  would have: ``stat`` every file against the digest cache, check the marker, upload nothing
  (the goal: under 1 s for 1 GiB in 10,000 files);
* ``resubmit_without_digest_cache``: the same, with the digest cache removed: every byte is
  hashed again, nothing is uploaded.

The files are made an hour old first, as a dataset at rest is (the digest cache does not
trust a file changed within the last second). Prints one JSON object (times in seconds)::

    {"dataset": {"files": 10000, "mib": 1024.0}, "cpus": 2, "store": "<what served gs://>",
     "load_average_1m": ...,
     "cold": {"hash_s": ..., "hash_mib_per_s": ..., "upload_s": ..., "upload_mib_per_s": ...,
              "total_s": ..., "total_mib_per_s": ...},
     "resubmit_same_object_s": ..., "resubmit_new_process_s": ...,
     "resubmit_without_digest_cache_s": ..., "goal_resubmit_under_1s": true}

    python -m uv run tools/bench/data_upload.py                  # 1 GiB, 10,000 files
    python -m uv run tools/bench/data_upload.py --mib 64 --files 1000
    python -m uv run tools/bench/data_upload.py --mib 1 --files 20   # a smoke run
"""

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

_MIB = 1024 * 1024


def make_dataset(root: Path, files: int, total_mib: int) -> int:
    """``files`` files of random bytes in 100 directories; returns the bytes written."""
    size = total_mib * _MIB // files
    chunk = os.urandom(size + 4096)
    written = 0
    for index in range(files):
        directory = root / f"shard-{index % 100:03d}"
        directory.mkdir(parents=True, exist_ok=True)
        # Distinct content per file without generating 1 GiB of randomness.
        offset = index % 4096
        data = index.to_bytes(8, "little") + chunk[offset : offset + size - 8]
        (directory / f"part-{index:05d}.bin").write_bytes(data)
        written += len(data)
    an_hour_ago = time.time_ns() - 3600 * 10**9
    for path in root.rglob("*.bin"):
        os.utime(path, ns=(an_hour_ago, an_hour_ago))
    return written


def _timed(step: Any) -> tuple[float, Any]:
    began = time.perf_counter()
    value = step()
    return time.perf_counter() - began, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--mib", type=int, default=1024)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kinetic-bench-data-") as tmp:
        os.environ["KINETIC_HOME"] = str(Path(tmp, "home"))
        dataset = Path(tmp, "dataset")
        total = make_dataset(dataset, options.files, options.mib)
        from kinetic_testing.fake_gcs import FakeGcsServer

        with FakeGcsServer(filesystem=True) as server:
            os.environ["STORAGE_EMULATOR_HOST"] = server.endpoint
            server.create_bucket("bench-jobs")
            report = measure(dataset, total, options.files)
    print(json.dumps(report, indent=2))


def measure(dataset: Path, total: int, files: int) -> dict[str, Any]:
    from kinetic import Data, session
    from kinetic.config import kinetic_home
    from kinetic.data.plan import plan_call_data
    from kinetic_protocol import Capabilities
    from kinetic_runtime.stores import open_store

    capabilities = Capabilities(container_image=True)  # jobs cannot see this machine

    def submit(data: Data) -> None:
        store = session.current().store("gs://bench-jobs", lambda: open_store("gs://bench-jobs"))
        plan_call_data([data], (), capabilities=capabilities, store=store, backend="bench")

    with session.fresh():
        data = Data(str(dataset))
        hash_s, _ = _timed(data.content_hash)
        upload_s, _ = _timed(lambda: submit(data))
        same_s, _ = _timed(lambda: submit(data))
    with session.fresh():
        new_s, _ = _timed(lambda: submit(Data(str(dataset))))
    shutil.rmtree(kinetic_home() / "cache", ignore_errors=True)
    with session.fresh():
        uncached_s, _ = _timed(lambda: submit(Data(str(dataset))))
    mib = total / _MIB
    return {
        "dataset": {"files": files, "mib": round(mib, 1)},
        "cpus": os.cpu_count(),
        "store": "fake-gcs-server (filesystem backend), google-cloud-storage transfer manager",
        "load_average_1m": round(os.getloadavg()[0], 2),
        "cold": {
            "hash_s": round(hash_s, 3),
            "hash_mib_per_s": round(mib / hash_s, 1),
            "upload_s": round(upload_s, 3),
            "upload_mib_per_s": round(mib / upload_s, 1),
            "total_s": round(hash_s + upload_s, 3),
            "total_mib_per_s": round(mib / (hash_s + upload_s), 1),
        },
        "resubmit_same_object_s": round(same_s, 4),
        "resubmit_new_process_s": round(new_s, 3),
        "resubmit_without_digest_cache_s": round(uncached_s, 3),
        "goal_resubmit_under_1s": new_s < 1.0,
    }


if __name__ == "__main__":
    main()
