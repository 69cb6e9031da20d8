"""Batch submission on the gke backend: what one child costs the client, against the real
kube-apiserver of the test tier and fake-gcs-server, beside the local backend. On gke both
paths are measured: the array path (one Indexed Job per batch, ``"gke"``) and the per-child
path (one Job per input, ``"gke_per_child"``, as a backend without array batches takes it).

No node agent runs, so every pod stays Pending and only submission is measured: Job creates,
store writes and the client's own CPU. By default the benchmark starts its own control plane
and fake-gcs-server; ``--kubeconfig``/``--context``/``--namespace`` and ``--store`` use ones
already running instead (the test suite's smoke check passes its session's).

Prints one JSON object (a section left out with ``--skip`` is absent)::

    {"cpus": 2, "python": "3.11.9",
     "local": {"n": 1000, "submit_wall_s": ..., "submissions_per_s": ...,
               "client_cpu_ms_per_child": ..., "store_writes": {"<kind of key>": count},
               "store_writes_per_child": ..., "attach_batch_s": ...},
     "gke":   {the same keys, and "k8s_writes": ..., "status_poll_s": ...,
               "api_calls_per_poll": ...},
     "gke_per_child": {the same keys as "gke"},
     "gke_kueue": {the same keys as "gke", and "workloads": ..., "admitted_s": ...,
                   "queued_poll_s": ..., "queued_api_calls_per_poll": ...,
                   "queued_place": {...}},
     "gke_large": {the submission keys of "gke", and "settled": ..., "running": ...,
                   "first_poll": {...}, "next_poll": {...}, "statuses": {...}}}

``k8s_writes`` counts the Kubernetes API requests that change something (not GET) during
``run_async_map``; ``api_calls_per_poll`` the requests the client sends for one
``statuses()`` of the whole batch. ``pods_created_per_s``: pods the cluster created for the
batch (its Job controller; Pending, since no node agent runs), over the seconds from the start
of ``run_async_map`` until all ``n`` existed, or ``--pods-timeout`` passed
(``pods_created`` says how many did).

``gke_kueue`` is the array path through Kueue (``--skip gke_kueue`` leaves it out): the batch
goes to a LocalQueue of a roomy ClusterQueue made for the benchmark; ``workloads`` counts the
Kueue Workloads made for it (one is the goal, however many inputs), ``admitted_s`` is the time
from the start of ``run_async_map`` until Kueue lifted the Job's suspension. A second batch of
the same size then waits in a queue with no quota: ``queued_poll_s`` and
``queued_api_calls_per_poll`` are one status poll of it, which reads its place in line from
Kueue's visibility API (``queued_place``, the first input's). Started here, the ``gke`` and
``gke_per_child`` sections run on a control plane without Kueue and ``gke_kueue`` on one with
it; on a cluster given with ``--kubeconfig`` all three run there (through Kueue where it
serves it).

``gke_large`` (``--skip gke_large`` leaves it out) is one batch of ``--large`` inputs
(100,000) on the array path, all but ``--large-running`` (500) of them settled: its
submission (``submit_wall_s``, ``k8s_writes``), ``attach_batch_s``, and two status polls of
the attached handle, ``first_poll`` (its process has not polled the batch before) and
``next_poll``, each ``{"s", "api_calls", "bytes_on_the_wire", "bytes_decoded"}`` (wire: as
the API server sent them, gzipped where the client asked). 100,000 pods are more than the test
plane of a laptop holds, and no node agent runs here, so the inputs are settled by hand: the
batch runs ``--large-running`` inputs at a time (``max_concurrent``), so the job controller
makes that many pods; the benchmark writes every other index completed into the Job's status
(its status subresource, which the job controller keeps as its record of settled indexes) and
ends a tenth of the pods failed (their pod status; the job controller records those indexes
failed itself). ``statuses`` counts what the last poll read.

``--per-child-submit-only`` measures only the per-child path's submission, pods and one
status poll (no ``attach_batch``, which reads every child record): its section then says
``"measured": "submission and one status poll"``.

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


def submit(
    remote: Any, n: int, store_class: Any, max_concurrent: int | None = None
) -> tuple[Any, dict[str, Any]]:
    """``run_async_map`` over ``n`` inputs, every one submitted before it returns."""
    with counted_writes(store_class) as writes:
        cpu, start = time.process_time(), time.perf_counter()
        batch = remote.run_async_map(range(n), max_concurrent=max_concurrent)
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


class Calls(list[str]):
    """``METHOD path`` of each request, and its answer, whose size is read once it was."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[Any] = []

    def received(self) -> dict[str, int]:
        """Bytes of the answers read: as sent (gzipped where the client asked) and decoded."""
        read = [answer for answer in self.answers if answer is not None]
        return {
            "bytes_on_the_wire": sum(answer.tell() for answer in read),
            "bytes_decoded": sum(len(answer.data or b"") for answer in read),
        }


@contextmanager
def counted_api_calls() -> Iterator[Calls]:
    """Record ``METHOD path`` of every request the Kubernetes client sends (all threads)."""
    from kubernetes.client import rest

    client_class: Any = rest.RESTClientObject  # untyped
    calls = Calls()
    real = client_class.request

    def request(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(f"{method} {url}")  # list.append is atomic
        answer = real(self, method, url, *args, **kwargs)
        calls.answers.append(getattr(answer, "response", None))
        return answer

    client_class.request = request
    try:
        yield calls
    finally:
        client_class.request = real


@contextmanager
def per_child_path() -> Iterator[None]:
    """The gke backend as one without array batches: one Job per input."""
    import msgspec

    from kinetic_gke import GKEBackend

    arrays = GKEBackend.capabilities
    GKEBackend.capabilities = msgspec.structs.replace(arrays, array_batches=0)
    try:
        yield
    finally:
        GKEBackend.capabilities = arrays


_METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
"""Ask for the pods' metadata alone: a count of 10,000 pods needs no pod specs. (The server
counts a list for a label selector itself only when it is not one: ``remainingItemCount``.)"""


def _kube_api() -> Any:
    """A Kubernetes client for the benchmark's cluster, read from ``KUBECONFIG`` now (the
    client's own default path is read once, when it is imported: before a second control
    plane started here)."""
    from kubernetes import config

    return config.new_client_from_config(
        config_file=os.environ["KUBECONFIG"], context=os.environ["KINETIC_KUBE_CONTEXT"]
    )


def count_pods(selector: str) -> int:
    """Pods matching ``selector`` in the benchmark's namespace: one LIST of their metadata."""
    from kubernetes import client

    api = _kube_api()
    try:
        response = client.CoreV1Api(api).list_namespaced_pod(
            os.environ["KINETIC_NAMESPACE"],
            label_selector=selector,
            _headers={"Accept": _METADATA_ONLY},
            _preload_content=False,
        )
        return len(json.loads(response.data).get("items") or [])
    finally:
        api.close()


def pods_created(group_id: str, n: int, started: float, timeout: float) -> dict[str, Any]:
    """How fast the cluster created the batch's pods, counted from ``started``."""
    from kinetic_gke.labels import group_selector

    selector = group_selector(group_id)
    deadline = time.perf_counter() + timeout
    count = count_pods(selector)
    while count < n and time.perf_counter() < deadline:
        time.sleep(0.5)  # a benchmark's poll, not a test's synchronisation
        count = count_pods(selector)
    elapsed = time.perf_counter() - started
    return {
        "pods_created": count,
        "pods_created_s": round(elapsed, 3),
        "pods_created_per_s": round(count / elapsed, 1),
    }


def bench_gke(
    n: int, square: Any, *, pods_timeout: float, submit_only: bool = False
) -> dict[str, Any]:
    """Submit, attach and poll one batch with the cluster and store in the environment
    (``submit_only``: no attach; the poll is the submitting handle's)."""
    import kinetic
    from kinetic_runtime.stores.gcs import GCSStore

    remote = kinetic.run(accelerator="cpu", backend="gke", container_image="python:3.11")(square)
    started = time.perf_counter()
    with counted_api_calls() as calls:
        batch, report = submit(remote, n, GCSStore)
    report["k8s_writes"] = sum(1 for call in calls if not call.startswith("GET "))
    report |= pods_created(batch.group_id, n, started, pods_timeout)
    polled = batch
    if submit_only:
        report["measured"] = "submission and one status poll"
    else:
        polled, report["attach_batch_s"] = timed(
            lambda: kinetic.attach_batch(batch.group_id, backend="gke")
        )
        assert sum(job is not None for job in polled.jobs) == n
    with counted_api_calls() as calls:
        _, report["status_poll_s"] = timed(polled.statuses)
    report["api_calls_per_poll"] = len(calls)
    return report


def _fail_pod(core: Any, namespace: str, pod: Any) -> None:
    """End a pod (Pending: no node agent runs) as a run of the function that raised."""
    status = {
        "phase": "Failed",
        "containerStatuses": [
            {
                "name": "kinetic",
                "image": pod.spec.containers[0].image,
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 1, "reason": "Error"}},
            }
        ],
    }
    core.patch_namespaced_pod_status(pod.metadata.name, namespace, {"status": status})


def settle_most(job_name: str, n: int, running: int, failed: int, timeout: float) -> None:
    """Settle all but ``running`` of the Job's ``n`` indexes without running 100,000 pods:
    the indexes past ``running`` are written completed into the Job's status (its status
    subresource, which the job controller keeps as the record of what it settled), and
    ``failed`` of the ``running`` pods it made end failed, which it records itself."""
    from kubernetes import client

    from kinetic_gke.array_states import parse_indexes

    api = _kube_api()
    namespace = os.environ["KINETIC_NAMESPACE"]
    batch_api, core = client.BatchV1Api(api), client.CoreV1Api(api)
    selector = f"batch.kubernetes.io/job-name={job_name}"
    deadline = time.perf_counter() + timeout
    try:
        pods = core.list_namespaced_pod(namespace, label_selector=selector).items
        while len(pods) < running and time.perf_counter() < deadline:
            time.sleep(0.5)  # a benchmark's poll, not a test's synchronisation
            pods = core.list_namespaced_pod(namespace, label_selector=selector).items
        done = {"completedIndexes": f"{running}-{n - 1}", "succeeded": n - running}
        batch_api.patch_namespaced_job_status(job_name, namespace, {"status": done})
        for pod in pods[:failed]:
            _fail_pod(core, namespace, pod)
        while time.perf_counter() < deadline:
            job = batch_api.read_namespaced_job(job_name, namespace)
            recorded = parse_indexes(job.status.failed_indexes)
            if len(recorded) >= failed and job.status.completed_indexes == done["completedIndexes"]:
                return
            time.sleep(0.5)  # a benchmark's poll, not a test's synchronisation
        raise TimeoutError(f"Job {job_name} did not record {failed} failed indexes in time")
    finally:
        api.close()


def timed_poll(handle: Any) -> dict[str, Any]:
    """One ``statuses()`` of a batch: seconds, API calls and the bytes answered."""
    with counted_api_calls() as calls:
        _, seconds = timed(handle.statuses)
    return {"s": seconds, "api_calls": len(calls), **calls.received()}


def bench_gke_large(
    n: int, square: Any, *, running: int, failed: int, timeout: float
) -> dict[str, Any]:
    """A batch of ``n`` inputs with all but ``running`` settled: its submission, its attach,
    and polls of it (see the module)."""
    import kinetic
    from kinetic_runtime.stores.gcs import GCSStore

    remote = kinetic.run(accelerator="cpu", backend="gke", container_image="python:3.11")(square)
    remote.run_async_map([0], max_concurrent=None)  # warm up: bundle, clients, discovery
    with counted_api_calls() as calls:
        batch, report = submit(remote, n, GCSStore, max_concurrent=running)
    report["k8s_writes"] = sum(1 for call in calls if not call.startswith("GET "))
    [job_name] = {job.record.k8s_name for job in batch.jobs if job is not None}
    settle_most(job_name, n, running, failed, timeout)
    report |= {"settled": n - running + failed, "running": running - failed}
    attached, report["attach_batch_s"] = timed(
        lambda: kinetic.attach_batch(batch.group_id, backend="gke")
    )
    report["first_poll"] = timed_poll(attached)
    report["next_poll"] = timed_poll(attached)
    counts = Counter(status.value for _, status in attached.statuses())
    report["statuses"] = dict(counts)
    attached.cancel()
    return report


_KUEUE = ("kueue.x-k8s.io", "v1beta2")


def make_bench_queues(namespace: str) -> Callable[[], None]:
    """A roomy cluster queue (LocalQueue ``bench``) and one with no quota (``bench-held``);
    returns what deletes both."""
    import uuid

    from kubernetes import client

    from kinetic_testing.controlplane.queues import (
        FLAVOR,
        ROOMY,
        cluster_queue,
        local_queue,
        resource_flavor,
    )

    api = _kube_api()
    custom = client.CustomObjectsApi(api)
    group, version = _KUEUE
    suffix = uuid.uuid4().hex[:6]
    roomy, held = f"bench-{suffix}", f"bench-held-{suffix}"
    try:
        custom.create_cluster_custom_object(group, version, "resourceflavors", resource_flavor())
    except client.ApiException as error:
        if error.status != 409:
            raise
    for name, quota in ((roomy, ROOMY), (held, dict.fromkeys(ROOMY, "0"))):
        body = cluster_queue(name, quota, flavor=FLAVOR)
        custom.create_cluster_custom_object(group, version, "clusterqueues", body)
    for name, target in (("bench", roomy), ("bench-held", held)):
        custom.create_namespaced_custom_object(
            group, version, namespace, "localqueues", local_queue(namespace, name, target)
        )

    def delete() -> None:
        for name in (roomy, held):
            custom.delete_cluster_custom_object(group, version, "clusterqueues", name)
        api.close()

    return delete


def count_workloads(job_names: list[str]) -> int:
    """Kueue Workloads owned by the Jobs ``job_names`` in the benchmark's namespace."""
    from kubernetes import client

    api = _kube_api()
    try:
        group, version = _KUEUE
        listing = client.CustomObjectsApi(api).list_namespaced_custom_object(
            group, version, os.environ["KINETIC_NAMESPACE"], "workloads"
        )
        return sum(
            1
            for workload in listing.get("items") or []
            if any(
                owner.get("name") in job_names
                for owner in workload["metadata"].get("ownerReferences") or []
            )
        )
    finally:
        api.close()


def admitted_after(job_name: str, started: float, timeout: float) -> float | None:
    """Seconds from ``started`` until the Job ``job_name`` was no longer suspended."""
    from kubernetes import client

    api = _kube_api()
    batch_api = client.BatchV1Api(api)
    deadline = time.perf_counter() + timeout
    try:
        while time.perf_counter() < deadline:
            job = batch_api.read_namespaced_job(job_name, os.environ["KINETIC_NAMESPACE"])
            if not job.spec.suspend:
                return round(time.perf_counter() - started, 3)
            time.sleep(0.02)  # a benchmark's poll, not a test's synchronisation
        return None
    finally:
        api.close()


def bench_gke_kueue(n: int, square: Any, *, pods_timeout: float) -> dict[str, Any]:
    """The array path through Kueue: submission, one Workload, admission, pods, polls."""
    import kinetic
    from kinetic_runtime.stores.gcs import GCSStore

    delete_queues = make_bench_queues(os.environ["KINETIC_NAMESPACE"])
    try:
        remote = kinetic.run(
            accelerator="cpu", backend="gke", container_image="python:3.11", queue="bench"
        )(square)
        remote.run_async_map([0], max_concurrent=None)  # warm up: bundle, clients, discovery
        started = time.perf_counter()
        with counted_api_calls() as calls:
            batch, report = submit(remote, n, GCSStore)
        report["k8s_writes"] = sum(1 for call in calls if not call.startswith("GET "))
        job_names = sorted({job.record.k8s_name for job in batch.jobs if job is not None})
        report["admitted_s"] = admitted_after(job_names[0], started, pods_timeout)
        report |= pods_created(batch.group_id, n, started, pods_timeout)
        report["workloads"] = count_workloads(job_names)
        with counted_api_calls() as calls:
            _, report["status_poll_s"] = timed(batch.statuses)
        report["api_calls_per_poll"] = len(calls)

        held = remote.with_options(queue="bench-held").run_async_map(range(n), max_concurrent=None)
        _until_queued(held)
        with counted_api_calls() as calls:
            states, report["queued_poll_s"] = timed(held.states)
        report["queued_api_calls_per_poll"] = len(calls)
        place = states[0][1].queue if states else None
        report["queued_place"] = (
            None
            if place is None
            else {
                "queue": place.queue,
                "position": place.position,
                "waiting": place.waiting,
                "requested": place.requested,
            }
        )
        held.cancel()  # it holds no pod; the admitted batch is left running, as elsewhere here
        return report
    finally:
        delete_queues()


def _until_queued(batch: Any, timeout: float = 60.0) -> None:
    """Until Kueue has made the batch's Workload and counts it in line: a poll before that
    reads it pending with no place, which is not the poll this section times."""
    deadline = time.monotonic() + timeout
    while True:
        states = batch.states()
        if states and states[0][1].queue is not None:
            return
        if time.monotonic() >= deadline:
            raise RuntimeError(f"the held batch had no place in line after {timeout:.0f} s")
        time.sleep(0.1)


def bench_both_gke_paths(
    n: int, square: Any, *, pods_timeout: float, per_child_submit_only: bool, per_child: bool = True
) -> dict[str, Any]:
    import kinetic

    remote = kinetic.run(accelerator="cpu", backend="gke", container_image="python:3.11")(square)
    remote.run_async_map([0], max_concurrent=None)  # warm up: bundle, clients, discovery
    report = {"gke": bench_gke(n, square, pods_timeout=pods_timeout)}
    if not per_child:
        return report
    with per_child_path():
        report["gke_per_child"] = bench_gke(
            n, square, pods_timeout=pods_timeout, submit_only=per_child_submit_only
        )
    return report


@contextmanager
def a_cluster(options: argparse.Namespace, tmp: Path, *, kueue: bool = False) -> Iterator[None]:
    """Point the gke backend at a cluster: the one named in ``options``, else a control plane
    started here (with Kueue and its queue, or without; stopped on leaving)."""
    with ExitStack() as stack:
        if options.kubeconfig:
            kube = (str(options.kubeconfig), options.context, options.namespace)
        else:
            from kinetic_testing.controlplane.build import ensure_built
            from kinetic_testing.controlplane.cluster import ControlPlane
            from kinetic_testing.controlplane.queues import (
                make_namespace_queue,
                make_session_queues,
            )

            directory = tmp / ("k8s-kueue" if kueue else "k8s")
            plane = stack.enter_context(ControlPlane(ensure_built(), directory, kueue=kueue))
            kube = (str(plane.kubeconfig), plane.context, plane.create_namespace("bench"))
            if kueue:
                make_session_queues(plane)
                make_namespace_queue(plane, kube[2])
        os.environ.update(
            KUBECONFIG=kube[0], KINETIC_KUBE_CONTEXT=kube[1], KINETIC_NAMESPACE=kube[2]
        )
        yield


@contextmanager
def a_store(options: argparse.Namespace) -> Iterator[None]:
    """Point the gke backend at a gs:// store: the one named in ``options``, else a
    fake-gcs-server started here, one for every section (the client keeps its store)."""
    with ExitStack() as stack:
        store = options.store
        if not store:
            from kinetic_testing.fake_gcs import FakeGcsServer

            gcs = stack.enter_context(FakeGcsServer())
            gcs.create_bucket("kinetic-bench")
            os.environ["STORAGE_EMULATOR_HOST"] = gcs.endpoint
            store = "gs://kinetic-bench"
        os.environ.update(KINETIC_STORE=store, KINETIC_PROJECT="kinetic-bench")
        yield


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
    parser.add_argument(
        "--skip",
        nargs="*",
        default=[],
        choices=["gke", "gke_per_child", "gke_kueue", "gke_large", "local"],
    )
    parser.add_argument(
        "--large", type=int, default=100_000, help="inputs of the gke_large section's batch"
    )
    parser.add_argument(
        "--large-running",
        type=int,
        default=500,
        help="inputs of the gke_large batch left unsettled (its max_concurrent)",
    )
    parser.add_argument(
        "--pods-timeout",
        type=float,
        default=120.0,
        help="seconds to wait for the cluster to create every pod of a gke batch",
    )
    parser.add_argument(
        "--per-child-submit-only",
        action="store_true",
        help="measure the per-child gke path's submission and one status poll only",
    )
    cluster = parser.add_argument_group("an existing cluster and store, instead of starting them")
    cluster.add_argument("--kubeconfig", type=Path, help="needs --context and --namespace")
    cluster.add_argument("--context")
    cluster.add_argument("--namespace", help="an existing namespace to submit into")
    cluster.add_argument(
        "--store", help="an existing gs:// bucket (STORAGE_EMULATOR_HOST from the environment)"
    )
    options = parser.parse_args()
    if options.kubeconfig and not (options.context and options.namespace):
        parser.error("--kubeconfig needs --context and --namespace")
    square = small_project().square
    report: dict[str, Any] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    with tempfile.TemporaryDirectory(prefix="kinetic-bench-") as tmp:
        os.environ["KINETIC_HOME"] = str(Path(tmp, "home"))
        if "local" not in options.skip:
            os.environ["KINETIC_STORE"] = f"file://{tmp}/store"
            report["local"] = bench_local(options.n, square)
        gke_sections = {"gke", "gke_kueue", "gke_large"} - set(options.skip)
        with ExitStack() as stack:
            if gke_sections:
                stack.enter_context(a_store(options))
            if gke_sections & {"gke", "gke_large"}:
                with a_cluster(options, Path(tmp)):
                    if "gke" in gke_sections:
                        report |= bench_both_gke_paths(
                            options.n,
                            square,
                            pods_timeout=options.pods_timeout,
                            per_child_submit_only=options.per_child_submit_only,
                            per_child="gke_per_child" not in options.skip,
                        )
                    if "gke_large" in gke_sections:
                        report["gke_large"] = bench_gke_large(
                            options.large,
                            square,
                            running=options.large_running,
                            failed=options.large_running // 10,
                            timeout=options.pods_timeout,
                        )
            if "gke_kueue" in gke_sections:
                with a_cluster(options, Path(tmp), kueue=True):
                    report["gke_kueue"] = bench_gke_kueue(
                        options.n, square, pods_timeout=options.pods_timeout
                    )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
