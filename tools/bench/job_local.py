"""Per-job overhead of the local backend, and import times of ``kinetic``/``kinetic_runtime``.

Submits a no-op job N times (one at a time) and reports the median and p90 of submit to
SUCCEEDED, plus submit alone. ``import_ms`` is the cumulative ``-X importtime`` of each
module in a fresh interpreter, best of ``--import-runs``: ``kinetic_runtime.main`` is what
every job imports before the user's code (the goal: under 50 ms).

Prints one JSON object (times in milliseconds)::

    {"n": 20, "project": "one module",
     "submit_to_succeeded_ms": {"median": ..., "p90": ..., "min": ...},
     "submit_only_ms": {"median": ...},
     "import_ms": {"kinetic": ..., "kinetic_runtime.main": ...}}

    python -m uv run tools/bench/job_local.py --n 20
    python -m uv run tools/bench/job_local.py --n 3 --import-runs 1     # a smoke run
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from workload import small_project


def _import_ms(module: str, runs: int) -> float:
    """Cumulative ``-X importtime`` of ``module`` in a fresh interpreter, best of ``runs``."""
    times = []
    for _ in range(runs):
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"import {module}"],
            capture_output=True,
            text=True,
            check=True,
        ).stderr
        match = re.search(rf"\|\s*(\d+) \| {re.escape(module)}\n", err)
        if match is None:
            raise RuntimeError(f"-X importtime printed no line for {module}:\n{err[-2000:]}")
        times.append(int(match[1]) / 1000)
    return round(min(times), 1)


def _wait_for_launcher(remote: Any) -> None:
    """Give the local launcher (started by the first job) time to come up, as in steady use."""
    from kinetic.local.launcher_client import _socket_path

    deadline = time.monotonic() + 10
    while not _socket_path().exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--import-runs", type=int, default=5, help="import timings, best of")
    parser.add_argument(
        "--in-repo", action="store_true", help="ship this repository as the job's project"
    )
    options = parser.parse_args()
    work = small_project(in_repo=options.in_repo)
    with tempfile.TemporaryDirectory(prefix="kinetic-bench-") as tmp:
        os.environ["KINETIC_HOME"] = tmp
        import kinetic
        from kinetic_protocol import JobStatus

        remote = kinetic.run(accelerator="cpu", backend="local")(work.noop)
        remote.run_async().result()  # warm up: bundle upload, backend, the launcher's start
        _wait_for_launcher(remote)
        to_done, to_submit = [], []
        for _ in range(options.n):
            start = time.perf_counter()
            job = remote.run_async()
            to_submit.append(time.perf_counter() - start)
            state = job.wait()
            to_done.append(time.perf_counter() - start)
            assert state.status is JobStatus.SUCCEEDED, state
            job.cleanup()
    report: dict[str, Any] = {
        "n": options.n,
        "project": "this repository" if options.in_repo else "one module",
        "submit_to_succeeded_ms": {
            "median": round(1000 * statistics.median(to_done), 1),
            "p90": round(1000 * _percentile(to_done, 0.9), 1),
            "min": round(1000 * min(to_done), 1),
        },
        "submit_only_ms": {"median": round(1000 * statistics.median(to_submit), 1)},
        "import_ms": {
            m: _import_ms(m, options.import_runs) for m in ("kinetic", "kinetic_runtime.main")
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
