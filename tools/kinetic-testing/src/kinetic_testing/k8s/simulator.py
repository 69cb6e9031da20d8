"""`KubernetesSimulator`: a small, faithful Kubernetes API server for tests.

It serves Jobs, Pods (with logs) and LeaderWorkerSets over HTTP to the official `kubernetes`
client, runs every pod's command as a local process, validates every body against a real
Kubernetes version's schema, and injects the failures a GKE cluster produces.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from .api import Api
from .faults import Fault, FaultRegistry
from .gc import sync_garbage
from .jobs import JobController
from .kubelet import Kubelet
from .lws import LwsController
from .resources import JOBS, LWS, PODS, ResourceType
from .selectors import LabelSelector
from .server import RecordedRequest, ServerContext, SimulatorServer
from .store import ObjectStore
from .validation import ValidationFailure, Validator

__all__ = ["KubernetesSimulator"]

T = TypeVar("T")
F = TypeVar("F", bound=Fault)


class KubernetesSimulator:
    """A Kubernetes API server plus job/LWS controllers and a kubelet, in this process.

    Use it as a context manager (or call `start`/`stop`). Nothing it starts outlives `stop`.
    """

    def __init__(
        self,
        *,
        kubernetes_version: str = "1.31",
        strict_validation: bool = True,
        namespaces: tuple[str, ...] = ("default",),
        pod_start_delay: float = 0.0,
        job_backoff_seconds: float = 0.0,
        restart_backoff_seconds: float = 0.1,
        grace_period_cap: float = 2.0,
        tick_seconds: float = 0.02,
        workdir: Path | None = None,
    ) -> None:
        self.kubernetes_version = kubernetes_version
        self._validator = Validator(kubernetes_version, strict=strict_validation)
        self._own_workdir = workdir is None
        # Created only when the first pod runs, so an idle or never-stopped simulator
        # leaves nothing behind in the temp directory.
        unique = f"kinetic-k8s-sim-{uuid.uuid4().hex[:12]}"
        self.workdir = Path(workdir) if workdir else Path(tempfile.gettempdir()) / unique
        self._tick = tick_seconds
        self._store = ObjectStore(namespaces)
        self._faults = FaultRegistry()
        self._kubelet = Kubelet(
            self._store,
            self._faults,
            self.workdir,
            start_delay=pod_start_delay,
            grace_cap=grace_period_cap,
            restart_backoff=restart_backoff_seconds,
        )
        self._jobs = JobController(self._store, backoff_seconds=job_backoff_seconds)
        self._lws = LwsController(self._store, self._kubelet)
        self._log_lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._validation_errors: list[ValidationFailure] = []
        self._errors: list[str] = []
        self._clients: list[Any] = []
        self._stopping = threading.Event()
        self._api = Api(self._store, self._validator, self._kubelet, self._record_invalid)
        self._server: SimulatorServer | None = None
        self._controller = threading.Thread(
            target=self._control_loop, name="k8s-sim-controllers", daemon=True
        )
        self._started = False
        self._stopped = False

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> KubernetesSimulator:
        """Start serving and reconciling; returns self."""
        if self._started or self._stopped:
            raise RuntimeError("this KubernetesSimulator was already used; make a new one")
        self._started = True
        context = ServerContext(
            self._api,
            self._store,
            self._kubelet,
            self._faults,
            self.kubernetes_version,
            self._record_request,
            self._report_error,
            self._stopping,
        )
        self._server = SimulatorServer(context)  # binds a free port on 127.0.0.1
        atexit.register(self.stop)
        self._server.start()
        self._controller.start()
        return self

    def stop(self) -> None:
        """Stop the server and controllers and kill every pod process (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        atexit.unregister(self.stop)
        self._stopping.set()
        self._store.changed.set()
        for client in self._clients:
            client.close()
        if self._server is not None:
            self._server.stop()
        if self._controller.is_alive():
            self._controller.join(timeout=10)
        with self._store.lock:
            self._kubelet.shutdown()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> KubernetesSimulator:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _control_loop(self) -> None:
        while not self._stopping.is_set():
            self._store.changed.wait(self._tick)
            self._store.changed.clear()
            if self._stopping.is_set():
                return
            with self._store.lock:
                try:
                    self._jobs.sync()
                    self._lws.sync()
                    sync_garbage(self._store)
                    self._kubelet.sync()
                except Exception:
                    self._report_error(f"controller pass failed:\n{traceback.format_exc()}")
                    self._stopping.wait(self._tick)
            # Let request threads in between passes even when every pass changes something.
            time.sleep(0.002)

    # -- connecting --------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The TCP port on 127.0.0.1 (chosen by `start`)."""
        if self._server is None:
            raise RuntimeError("the simulator has no port until it is started; call start()")
        return self._server.port

    @property
    def host(self) -> str:
        """The base URL, e.g. `http://127.0.0.1:PORT`."""
        return f"http://127.0.0.1:{self.port}"

    def api_client(self) -> Any:
        """A `kubernetes.client.ApiClient` pointed here (no auth); closed by `stop`."""
        from kubernetes import client

        config = client.Configuration(host=self.host)
        api = client.ApiClient(config)
        self._clients.append(api)
        return api

    def kubeconfig(
        self, path: Path | str, *, namespace: str = "default", context: str = "sim"
    ) -> Path:
        """Write a kubeconfig whose `context` (current) points here; returns the path.

        Load it with `kubernetes.config.new_client_from_config(config_file=path,
        context=context, persist_config=False)`.
        """
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": {"server": self.host}}],
            "users": [{"name": context, "user": {"token": "kinetic-simulator"}}],
            "contexts": [
                {
                    "name": context,
                    "context": {"cluster": context, "user": context, "namespace": namespace},
                }
            ],
            "current-context": context,
            "preferences": {},
        }
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(doc, indent=2))
        return target

    # -- faults ------------------------------------------------------------------------------

    def inject(self, fault: F) -> F:
        """Put a fault in force (see `kinetic_testing.k8s.faults`); returns it for `.hits`."""
        self._faults.add(fault)
        self._store.changed.set()
        return fault

    def remove_fault(self, fault: Fault) -> None:
        """Lift one fault; stalled pods proceed on the next controller pass."""
        self._faults.remove(fault)
        self._store.changed.set()

    def clear_faults(self) -> None:
        """Lift every fault."""
        self._faults.clear()
        self._store.changed.set()

    @property
    def faults(self) -> list[Fault]:
        """The faults in force."""
        return self._faults.active()

    # -- inspection --------------------------------------------------------------------------

    def _objects(
        self, res: ResourceType, namespace: str | None, selector: str | None
    ) -> list[dict[str, Any]]:
        return self._store.list(res, namespace, LabelSelector.parse(selector))

    def jobs(
        self, namespace: str | None = "default", selector: str | None = None
    ) -> list[dict[str, Any]]:
        """Snapshots of the Jobs (all namespaces if `namespace` is None)."""
        return self._objects(JOBS, namespace, selector)

    def pods(
        self, namespace: str | None = "default", selector: str | None = None
    ) -> list[dict[str, Any]]:
        """Snapshots of the Pods matching the label selector string."""
        return self._objects(PODS, namespace, selector)

    def leaderworkersets(
        self, namespace: str | None = "default", selector: str | None = None
    ) -> list[dict[str, Any]]:
        """Snapshots of the LeaderWorkerSets."""
        return self._objects(LWS, namespace, selector)

    def job(self, name: str, namespace: str = "default") -> dict[str, Any] | None:
        """One Job snapshot, or None."""
        return next((j for j in self.jobs(namespace) if j["metadata"]["name"] == name), None)

    def pod(self, name: str, namespace: str = "default") -> dict[str, Any] | None:
        """One Pod snapshot, or None."""
        return next((p for p in self.pods(namespace) if p["metadata"]["name"] == name), None)

    def pod_log(self, name: str, namespace: str = "default") -> str:
        """A pod's current log text, read directly (no API request recorded)."""
        with self._store.lock:
            pod = self._store.peek(PODS, namespace, name)
            rt = self._kubelet.peek_runtime(pod["metadata"]["uid"]) if pod else None
            path = rt.logs[-1] if rt and rt.logs else None
        return path.read_text(errors="replace") if path else ""

    def running_pids(self) -> list[int]:
        """Pids of pod processes still running."""
        with self._store.lock:
            return self._kubelet.running_pids()

    def add_namespace(self, name: str) -> None:
        """Make a namespace exist (only `namespaces` given to the constructor exist at first)."""
        with self._store.lock:
            self._store.namespaces.add(name)

    # -- request log, validation failures, internal errors -----------------------------------

    def _record_request(self, request: RecordedRequest) -> None:
        with self._log_lock:
            self._requests.append(request)

    def _record_invalid(self, failure: ValidationFailure) -> None:
        with self._log_lock:
            self._validation_errors.append(failure)

    def _report_error(self, text: str) -> None:
        with self._log_lock:
            if text not in self._errors:
                self._errors.append(text)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        with self._log_lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        """Forget the requests so far (to count the calls of one step)."""
        with self._log_lock:
            self._requests.clear()

    def count_requests(self, method: str | None = None, path_contains: str | None = None) -> int:
        """How many recorded requests match the method and path substring."""
        return sum(
            1
            for r in self.requests
            if (method is None or r.method == method.upper())
            and (path_contains is None or path_contains in r.path)
        )

    @property
    def validation_errors(self) -> list[ValidationFailure]:
        """Every body refused with 422 so far; tests of correct code expect `[]`."""
        with self._log_lock:
            return list(self._validation_errors)

    @property
    def errors(self) -> list[str]:
        """Simulator bugs (controller exceptions, 500s), with tracebacks; should stay empty."""
        with self._log_lock:
            return list(self._errors)

    def wait_for(
        self,
        predicate: Callable[[], T],
        timeout: float = 10.0,
        interval: float = 0.02,
        message: str | None = None,
    ) -> T:
        """Poll `predicate` until it returns something truthy and return that value.

        Raises TimeoutError naming `message` and the last value seen, or RuntimeError at once
        if the simulator itself failed (see `errors`).
        """
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if self.errors:
                raise RuntimeError("the simulator failed:\n" + "\n".join(self.errors))
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"timed out after {timeout}s waiting for {message or predicate!r}; "
                    f"last value: {value!r}"
                )
            time.sleep(interval)
