"""Batch submission on the gke backend: what one child costs the client, against the real
kube-apiserver of the test tier and fake-gcs-server, beside the local backend.

No node agent runs, so every pod stays Pending and only submission is measured: Job creates,
store writes and the client's own CPU. Prints one JSON object: submissions per second, client
CPU per child, store writes per child, API calls per status poll and ``attach_batch`` time.

    python -m uv run tools/bench/batch_gke.py --n 1000
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from workload import small_project


@contextmanager
def counted_writes(store_class: Any) -> Iterator[Counter[str]]:
    """Count every ``write`` through ``store_class`` (all its instances), by kind of key."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    real = store_class.write

    def write(self: Any, key: str, data: bytes, **options: Any) -> None:
        kind = "child records" if "/children/" in key else key.split("/", maxsplit=1)[0]
        with lock:
            counts[kind] += 1
        real(self, key, data, **options)

    store_class.write = write
    try:
        yield counts
    finally:
        store_class.write = real


def submit(remote: Any, n: int, store_class: Any) -> tuple[Any, dict[str, Any]]:
    """``run_async_map`` over ``n`` inputs, every one submitted before it returns."""
    with counted_writes(store_class) as writes:
        cpu, start = time.process_time(), time.perf_counter()
        batch = remote.run_async_map(range(n), max_concurrent=None)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert all(job is not None for job in batch.jobs), batch.submission_failures
    total_writes = sum(writes.values())
    return batch, {
        "n": n,
        "submit_wall_s": round(wall, 3),
        "submissions_per_s": round(n / wall, 1),
        "client_cpu_ms_per_child": round(1000 * cpu / n, 3),
        "store_writes": dict(writes),
        "store_writes_per_child": round(total_writes / n, 3),
    }


def timed(action: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = action()
    return value, round(time.perf_counter() - start, 3)


def bench_gke(n: int, square: Any, tmp: Path) -> dict[str, Any]:
    import kinetic
    from kinetic_runtime.stores.gcs import GCSStore
    from kinetic_testing.controlplane.build import ensure_built
    from kinetic_testing.controlplane.cluster import ControlPlane
    from kinetic_testing.controlplane.proxy import ApiProxy
    from kinetic_testing.fake_gcs import FakeGcsServer

    with ExitStack() as stack:
        plane = stack.enter_context(ControlPlane(ensure_built(), tmp / "k8s"))
        gcs = stack.enter_context(FakeGcsServer())
        gcs.create_bucket("kinetic-bench")
        namespace = plane.create_namespace("bench")
        os.environ.update(
            STORAGE_EMULATOR_HOST=gcs.endpoint, KUBECONFIG=str(plane.kubeconfig),
            KINETIC_KUBE_CONTEXT=plane.context, KINETIC_NAMESPACE=namespace,
            KINETIC_STORE="gs://kinetic-bench", KINETIC_PROJECT="kinetic-bench",
        )  # fmt: skip
        remote = kinetic.run(accelerator="cpu", backend="gke", container_image="python:3.11")(
            square
        )
        remote.run_async_map([0], max_concurrent=None)  # warm up: bundle, clients, discovery
        batch, report = submit(remote, n, GCSStore)
        attached, report["attach_batch_s"] = timed(
            lambda: kinetic.attach_batch(batch.group_id, backend="gke")
        )
        assert sum(job is not None for job in attached.jobs) == n
        proxy = stack.enter_context(ApiProxy(plane))
        os.environ["KUBECONFIG"] = str(proxy.kubeconfig(tmp / "proxy", context="proxy"))
        os.environ["KINETIC_KUBE_CONTEXT"] = "proxy"
        import kinetic.session

        kinetic.session.fresh()  # a new backend, through the proxy
        polled = kinetic.attach_batch(batch.group_id, backend="gke")
        proxy.clear()
        _, report["status_poll_s"] = timed(polled.statuses)
        report["api_calls_per_poll"] = len(proxy.requests)
        return report


def bench_local(n: int, square: Any) -> dict[str, Any]:
    import kinetic
    from kinetic_runtime.stores.local import LocalStore

    remote = kinetic.run(accelerator="cpu", backend="local")(square)
    remote.run_async(0).result()  # warm up: bundle, backend and the launcher
    batch, report = submit(remote, n, LocalStore)
    _, report["attach_batch_s"] = timed(
        lambda: kinetic.attach_batch(batch.group_id, backend="local")
    )
    assert batch.results(timeout=600) == [x * x for x in range(n)]
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--skip", nargs="*", default=[], choices=["gke", "local"])
    options = parser.parse_args()
    square = small_project().square
    report: dict[str, Any] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    with tempfile.TemporaryDirectory(prefix="kinetic-bench-") as tmp:
        os.environ["KINETIC_HOME"] = str(Path(tmp, "home"))
        if "local" not in options.skip:
            os.environ["KINETIC_STORE"] = f"file://{tmp}/store"
            report["local"] = bench_local(options.n, square)
        if "gke" not in options.skip:
            report["gke"] = bench_gke(options.n, square, Path(tmp))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
