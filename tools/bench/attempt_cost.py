"""What one attempt of a gke job costs in Kubernetes API and store requests, with its output
kept in the store (``logs()`` after the pod is gone) and without.

Against the test tier's real control plane and fake-gcs-server, with the test kubelet running
pods as local processes. The kubelet runs in a child process, so the Kubernetes requests
counted here are the client's alone. fake-gcs-server logs every request of every process (the
client and the job's pod), so the pod's store requests are all of them less the client's.

Each case runs one job of ``chatty(seconds)`` (a line every half second) to its end and reads
its result, which cleans it up. ``failed`` runs one that raises after the same time, and also
reads ``failure()`` (a failed job is kept). ``not_kept`` passes ``KINETIC_KEEP_OUTPUT_BYTES=0``
to the job, so ``added_by_kept_output`` is what keeping the output costs one attempt. By
default the benchmark starts its own control plane; ``--kubeconfig``/``--context``/
``--namespace`` use one already running (the test suite's smoke check passes its session's).

Prints one JSON object::

    {"cpus": 2, "python": "3.11.9", "seconds": 12,
     "kept":     {"client_api": {"GET": n, "POST": n, ...}, "client_store": {"upload": n, ...},
                  "pod_store": {"upload": n, ...}, "wall_s": ...},
     "not_kept": {...}, "failed": {...},
     "added_by_kept_output": {"pod_store": {"upload": n, ...}, "client_api": {...}}}

    python -m uv run tools/bench/attempt_cost.py --seconds 12
"""

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from workload import small_project

_KINDS = ("upload", "download", "list", "delete", "metadata", "other")


def _run_kubelet(kubeconfig: str, context: str, workdir: str, ready: Any, stop: Any) -> None:
    """The test kubelet, in its own process: its requests are not the client's."""
    from kubernetes import config

    from kinetic_testing.nodeagent import NodeAgent, base_host_env

    api = config.new_client_from_config(config_file=kubeconfig, context=context)  # type: ignore[no-untyped-call]
    with NodeAgent(api, workdir=Path(workdir), host_env=base_host_env(os.environ)):
        ready.set()
        stop.wait()


@contextmanager
def _counted_client_requests() -> Iterator[tuple[Counter[str], Counter[str]]]:
    """Count this process's Kubernetes requests by verb, and its store requests by kind."""
    import requests
    from kubernetes.client import rest

    from kinetic_testing.fake_gcs import request_kind

    api: Counter[str] = Counter()
    store: Counter[str] = Counter()
    lock = threading.Lock()
    kube_class: Any = rest.RESTClientObject
    real_kube, real_http = kube_class.request, requests.Session.request
    emulator = os.environ["STORAGE_EMULATOR_HOST"]

    def kube_request(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        with lock:
            api[method] += 1
        return real_kube(self, method, url, *args, **kwargs)

    def http_request(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        if str(url).startswith(emulator):
            with lock:
                store[request_kind(method, str(url)[len(emulator) :])] += 1
        return real_http(self, method, url, *args, **kwargs)

    session: Any = requests.Session  # patched for this process's requests, then restored
    kube_class.request, session.request = kube_request, http_request
    try:
        yield api, store
    finally:
        kube_class.request, session.request = real_kube, real_http


def _difference(after: Counter[str], before: Counter[str]) -> dict[str, int]:
    """``after - before`` for every key, negative ones too (``Counter``'s drops them)."""
    keys = sorted(set(after) | set(before), key=lambda k: (k not in _KINDS, _order(k)))
    return {key: after[key] - before[key] for key in keys if after[key] != before[key]}


def _order(key: str) -> int | str:
    return _KINDS.index(key) if key in _KINDS else key


def one_attempt(remote: Any, seconds: float, gcs: Any, *, fails: bool) -> dict[str, Any]:
    """Run one job to its end and read its result; what each side asked of the API and store."""
    before = gcs.request_counts()
    start = time.perf_counter()
    with _counted_client_requests() as (api, store):
        job = remote.run_async(seconds, fails)
        if fails:
            job.wait(timeout=300)
            assert job.failure() is not None
            try:
                job.result(timeout=300)
            except Exception:  # the function's own error, re-raised by result()
                pass
            else:
                raise AssertionError("the job was meant to fail")
        else:
            assert job.result(timeout=300) == int(seconds * 2)
    wall = time.perf_counter() - start
    total = gcs.request_counts()
    client_store = Counter(store)
    pod_store = Counter(_difference(total, before)) - client_store
    return {
        "client_api": dict(sorted(api.items())),
        "client_store": _difference(client_store, Counter()),
        "pod_store": _difference(pod_store, Counter()),
        "wall_s": round(wall, 2),
    }


def _cluster(options: argparse.Namespace, stack: ExitStack, tmp: str) -> tuple[str, str, str]:
    """``(kubeconfig, context, namespace)``: the ones in ``options``, else a control plane's
    started here (stopped on leaving)."""
    if options.kubeconfig:
        return str(options.kubeconfig), options.context, options.namespace
    from kinetic_testing.controlplane.build import ensure_built
    from kinetic_testing.controlplane.cluster import ControlPlane

    plane = stack.enter_context(ControlPlane(ensure_built(), Path(tmp, "k8s")))
    return str(plane.kubeconfig), plane.context, plane.create_namespace("bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=12, help="how long each job runs")
    cluster = parser.add_argument_group("an existing cluster, instead of starting one")
    cluster.add_argument("--kubeconfig", type=Path, help="needs --context and --namespace")
    cluster.add_argument("--context")
    cluster.add_argument("--namespace", help="an existing namespace to run the jobs in")
    options = parser.parse_args()
    if options.kubeconfig and not (options.context and options.namespace):
        parser.error("--kubeconfig needs --context and --namespace")
    from kinetic_testing.fake_gcs import FakeGcsServer

    chatty = small_project().chatty
    report: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "seconds": options.seconds,
    }
    with tempfile.TemporaryDirectory(prefix="kinetic-bench-") as tmp, ExitStack() as stack:
        kubeconfig, context, namespace = _cluster(options, stack, tmp)
        gcs = stack.enter_context(FakeGcsServer(count_requests=True))
        gcs.create_bucket("kinetic-bench")
        os.environ.update(
            STORAGE_EMULATOR_HOST=gcs.endpoint,
            KUBECONFIG=kubeconfig,
            KINETIC_KUBE_CONTEXT=context,
            KINETIC_NAMESPACE=namespace,
            KINETIC_STORE="gs://kinetic-bench",
            KINETIC_PROJECT="kinetic-bench",
            KINETIC_HOME=str(Path(tmp, "home")),
        )
        spawn = multiprocessing.get_context("spawn")
        ready, stop = spawn.Event(), spawn.Event()
        kubelet = spawn.Process(
            target=_run_kubelet, args=(kubeconfig, context, str(Path(tmp, "nodes")), ready, stop)
        )
        kubelet.start()
        stack.callback(kubelet.join, 30)
        stack.callback(stop.set)
        if not ready.wait(120):
            raise RuntimeError("the test kubelet did not start")
        import kinetic

        on_gke: Any = {"accelerator": "cpu", "backend": "gke", "container_image": "python:3.11"}
        # Both cases pass the setting (a captured variable costs its own Secret), with the
        # default value or with 0: what differs is only whether the output is kept.
        remote = kinetic.run(**on_gke, capture_env_vars=["KINETIC_KEEP_OUTPUT_BYTES"])(chatty)
        os.environ["KINETIC_KEEP_OUTPUT_BYTES"] = str(1 << 20)
        remote.run_async(0.0, False).result(timeout=300)  # warm up: bundle, clients, discovery
        report["kept"] = one_attempt(remote, options.seconds, gcs, fails=False)
        report["failed"] = one_attempt(remote, options.seconds, gcs, fails=True)
        os.environ["KINETIC_KEEP_OUTPUT_BYTES"] = "0"
        report["not_kept"] = one_attempt(remote, options.seconds, gcs, fails=False)
        report["added_by_kept_output"] = {
            side: _difference(Counter(report["kept"][side]), Counter(report["not_kept"][side]))
            for side in ("client_api", "client_store", "pod_store")
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
