"""NodeAgent: kube-scheduler + kubelet for fake nodes, in threads of the test process.

Threads: a pod watch (events into a queue), one reconcile loop (scheduler, kubelet and node
loss, so their state needs no locks), a Lease heartbeat, and the HTTPS log server. Errors
never vanish: they are appended to :attr:`NodeAgent.errors` for the fixture to fail on.
"""

from __future__ import annotations

import queue
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal, Self

from kubernetes import client

from . import statuses as st
from .api import Kube, Obj, describe, is_gone, now_rfc3339
from .env import base_host_env
from .faultapi import FaultMethods
from .faults import FaultRegistry, PodFault
from .heartbeat import Heartbeat
from .informer import Event, PodInformer
from .kubelet import Kubelet
from .logserver import LogServer
from .nodes import NodeSpec, default_nodes, ready_condition
from .scheduler import Scheduler

if TYPE_CHECKING:
    from kinetic_testing.images.pods import LocalImages

__all__ = ["NodeAgent"]

ApiClientFactory = Callable[[], client.ApiClient]
PodGc = Literal["agent", "controller"]
_TICK = 0.1
_RESCHEDULE_EVERY = 1.0


class NodeAgent(FaultMethods):
    """Fake nodes that schedule and run pods; use as a context manager (or start/stop)."""

    def __init__(
        self,
        api_client_factory: ApiClientFactory | client.ApiClient,
        nodes: Sequence[NodeSpec] | None = None,
        workdir: Path | None = None,
        host_env: Mapping[str, str] | None = None,
        *,
        pod_gc: PodGc = "agent",
        images: LocalImages | None = None,
        pythons: Mapping[str, str] | None = None,
    ) -> None:
        # A factory gives each thread its own client (a watch holds a connection); a shared
        # client is the caller's to close.
        self._owns_clients = not isinstance(api_client_factory, client.ApiClient)
        if isinstance(api_client_factory, client.ApiClient):
            shared = api_client_factory
            self._factory: ApiClientFactory = lambda: shared
        else:
            self._factory = api_client_factory
        self.nodes: dict[str, NodeSpec] = {n.name: n for n in (nodes or default_nodes())}
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="kinetic-nodeagent-"))
        self.host_env = dict(host_env) if host_env is not None else base_host_env()
        self.pod_gc: PodGc = pod_gc
        self.images = images
        """Locally built images: a pod naming one runs inside it (``kinetic_testing.images``)."""
        self.pythons: dict[str, str] = dict(pythons or {})
        """Image reference -> the interpreter ``python`` is in pods naming that image, for a
        test whose job needs what this machine's Python lacks (PyTorch); others run with the
        test's own. A test may add to it while the agent runs, before its pods start."""
        self.errors: list[str] = []
        self.faults = FaultRegistry()
        self._lost: set[str] = set()
        self._unreachable: set[str] = set()
        self._pods: dict[str, Obj] = {}
        self._events: queue.Queue[Event] = queue.Queue()
        self._stop = threading.Event()
        self._kubes: list[Kube] = []
        self._started = False

    # Lifecycle
    def __enter__(self) -> Self:
        self.start()
        return self

    def _start_failed(self) -> None:
        """Undo a partial start: stop whatever did start."""
        self._stop.set()
        for part in ("informer", "heartbeat", "logs"):
            component = getattr(self, part, None)
            if component is not None:
                component.stop()
        for kube in self._kubes if self._owns_clients else []:
            kube.close()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _kube(self) -> Kube:
        kube = Kube(self._factory)
        self._kubes.append(kube)
        return kube

    def start(self) -> None:
        """Register the nodes, start serving logs, and begin scheduling and running pods."""
        try:
            self._start()
        except BaseException:
            self._start_failed()
            raise

    def _start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._main = self._kube()
        self.kubelet = Kubelet(
            self._main,
            self.workdir,
            self.host_env,
            self.faults,
            self._lose_node,
            self._error,
            self.images,
            self.pythons,
        )
        self.scheduler = Scheduler(self._main, self.nodes, self.is_alive, self._error)
        self.logs = LogServer(
            self.workdir, self.kubelet.log_source, self._unreachable.__contains__, self._error
        )
        self.logs.start()
        self.heartbeat = Heartbeat(
            self._kube(), self.nodes.values(), self.logs.port, self.is_alive, self._error
        )
        self.heartbeat.start()
        self.informer = PodInformer(self._kube(), self._events, self._error)
        self.informer.start()
        self._loop = threading.Thread(target=self._run, daemon=True, name="nodeagent-reconcile")
        self._loop.start()
        self._started = True

    def stop(self) -> None:
        """Kill every process the agent started and join its threads (well under 2 s)."""
        if not self._started:
            return
        self._started = False
        self._stop.set()
        self._events.put(("wake", None))
        self._loop.join(timeout=1.0)
        self.kubelet.stop()
        self.informer.stop()
        self.heartbeat.stop()
        self.logs.stop()
        for kube in self._kubes if self._owns_clients else []:
            kube.close()

    @property
    def log_port(self) -> int:
        return self.logs.port

    def is_alive(self, node: str) -> bool:
        return node in self.nodes and node not in self._lost

    def _error(self, message: str) -> None:
        """Record an error once: a repeat of the last one is not appended again."""
        if not self.errors or self.errors[-1] != message:
            self.errors.append(message)

    # Reconcile loop
    def _run(self) -> None:
        last_schedule = 0.0
        while not self._stop.is_set():
            touched: dict[str, Obj | None] = {}
            try:
                event = self._events.get(timeout=_TICK)
                while True:
                    self._apply(event, touched)
                    event = self._events.get_nowait()
            except queue.Empty:
                pass
            except Exception as exc:
                self._error(f"event: {describe(exc)}")
            if self._stop.is_set():
                return
            try:
                for uid, pod in touched.items():
                    self._sync(uid, pod)
                self.kubelet.tick()
                if touched or time.monotonic() - last_schedule > _RESCHEDULE_EVERY:
                    last_schedule = time.monotonic()
                    self.scheduler.schedule(self._pods.values())
            except Exception as exc:
                self._error(f"reconcile: {describe(exc)}")

    def _apply(self, event: Event, touched: dict[str, Obj | None]) -> None:
        kind, payload = event
        if kind == "resync":
            fresh = {p["metadata"]["uid"]: p for p in payload}
            for uid in set(self._pods) - set(fresh):
                touched[uid] = None
            self._pods = fresh
            touched.update(fresh)
        elif kind == "upsert":
            self._pods[payload["metadata"]["uid"]] = payload
            touched[payload["metadata"]["uid"]] = payload
        elif kind == "delete":
            self._pods.pop(payload["metadata"]["uid"], None)
            touched[payload["metadata"]["uid"]] = None
        elif kind == "lose":
            self._lose_node(payload)
        elif kind == "restore" and payload in self._lost:
            self.heartbeat.register(self.nodes[payload])
            self._lost.discard(payload)

    def _sync(self, uid: str, pod: Obj | None) -> None:
        if pod is None:
            self.kubelet.forget(uid)
            return
        node = pod["spec"].get("nodeName")
        if node and self.is_alive(node):
            try:
                self.kubelet.sync(pod, node)
            except Exception as exc:
                meta = pod["metadata"]
                self._error(f"kubelet {meta['namespace']}/{meta['name']}: {describe(exc)}")

    # Node loss and unreachability
    def _lose_node(self, node: str) -> None:
        """The VM is gone: its pods die unreported, the Node goes NotReady and is deleted.

        GKE deletes the Node of a vanished VM. KCM's pod GC then force-deletes its pods only
        after a quarantine (measured: 63 s), so with ``pod_gc="agent"`` (default) the agent
        writes at once what pod GC writes (phase Failed + DisruptionTarget DeletionByPodGC,
        nothing else) and force-deletes them; ``pod_gc="controller"`` leaves it to KCM.
        """
        if node in self._lost:
            return
        self._lost.add(node)
        pods = self.kubelet.drop_node(node)
        pods += [
            p for p in self._pods.values() if p["spec"].get("nodeName") == node and p not in pods
        ]
        now = now_rfc3339()
        try:
            self._main.patch_node_status(node, {"conditions": [ready_condition(now, ready=False)]})
            self._main.delete_node(node)
        except Exception as exc:
            if not is_gone(exc):
                raise
        if self.pod_gc != "agent":
            return
        for pod in pods:
            meta = pod["metadata"]
            try:
                self._main.patch_pod_status(
                    meta["namespace"], meta["name"], st.pod_gc_failed(pod, now), meta["uid"]
                )
                self._main.delete_pod(meta["namespace"], meta["name"], meta["uid"])
            except Exception as exc:
                if not is_gone(exc):
                    raise

    def set_unreachable(self, node: str, unreachable: bool = True) -> None:
        """Make ``node``'s kubelet answer nothing: ``pods/log`` then fails with HTTP 500."""
        if unreachable:
            self._unreachable.add(node)
        else:
            self._unreachable.discard(node)

    # Faults: the arming methods live in FaultMethods
    def _armed(self, fault: PodFault) -> PodFault:
        self.faults.add(fault)
        self._events.put(("wake", None))
        return fault

    def lose_node_now(self, node: str) -> None:
        """Lose ``node`` directly (from the reconcile thread's point of view, next tick)."""
        self._events.put(("lose", node))

    def restore_node(self, node: str) -> None:
        """Bring a lost node back, registered and Ready (as when GKE recreates the VM)."""
        self._events.put(("restore", node))

    def clear_faults(self) -> None:
        """Disarm every fault; a pod held back (image pull) starts on the next tick."""
        self.faults.clear()
        self._unreachable.clear()
        self._events.put(("wake", None))
