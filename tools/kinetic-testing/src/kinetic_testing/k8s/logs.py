"""`GET .../pods/NAME/log`: a container's output, whole, tailed, or followed as it grows.

Error cases answer like the real API server (400 for a container that has not started or a
missing/unknown container name), because clients branch on them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .kubelet import Kubelet
from .resources import PODS
from .status import ApiError
from .store import ObjectStore

__all__ = ["PodLog", "open_log"]

_POLL_SECONDS = 0.02
_UNSUPPORTED = ("sinceSeconds", "sinceTime", "timestamps")


@dataclass
class PodLog:
    """One container's log file plus how to tell whether it can still grow."""

    store: ObjectStore
    kubelet: Kubelet
    namespace: str
    name: str
    uid: str
    path: Path | None
    tail_lines: int | None
    limit_bytes: int | None
    #: A previous container's log never grows.
    frozen: bool = False

    def _still_running(self) -> bool:
        if self.frozen:
            return False
        with self.store.lock:
            pod = self.store.peek(PODS, self.namespace, self.name)
            if pod is None or pod["metadata"]["uid"] != self.uid:
                return False
            rt = self.kubelet.peek_runtime(self.uid)
            if rt is not None and rt.process is not None:
                return rt.process.proc.poll() is None
            return (pod.get("status") or {}).get("phase") == "Running"

    def _start(self) -> tuple[bytes, int]:
        data = self.path.read_bytes() if self.path is not None else b""
        offset = len(data)
        if self.tail_lines is not None:
            lines = data.splitlines(keepends=True)
            data = b"".join(lines[-self.tail_lines :]) if self.tail_lines > 0 else b""
        return data, offset

    def read_all(self) -> bytes:
        """The log as it is now (after `tailLines` and `limitBytes`)."""
        data, _ = self._start()
        return data if self.limit_bytes is None else data[: self.limit_bytes]

    def follow(self, stopping: threading.Event) -> Iterator[bytes]:
        """Chunks as the container writes them, until it exits (or the server stops)."""
        data, offset = self._start()
        budget = self.limit_bytes
        while True:
            if data:
                if budget is not None:
                    data = data[:budget]
                    budget -= len(data)
                yield data
                if budget == 0:
                    return
            running = self._still_running()
            data = self._read_from(offset)
            offset += len(data)
            if not data and (not running or stopping.is_set()):
                return
            if not data:
                stopping.wait(_POLL_SECONDS)

    def _read_from(self, offset: int) -> bytes:
        if self.path is None:
            return b""
        try:
            with open(self.path, "rb") as handle:
                handle.seek(offset)
                return handle.read()
        except FileNotFoundError:
            return b""


def _int_option(query: dict[str, str], key: str) -> int | None:
    if key not in query:
        return None
    try:
        value = int(query[key])
    except ValueError:
        raise ApiError.bad_request(f"{key} must be an integer, got {query[key]!r}") from None
    if value < 0:
        raise ApiError.bad_request(f"{key} must be >= 0, got {value}")
    return value


def open_log(
    store: ObjectStore, kubelet: Kubelet, namespace: str, name: str, query: dict[str, str]
) -> PodLog:
    """Resolve a log request to a file, or raise the API error a real server would."""
    for option in _UNSUPPORTED:
        if query.get(option) not in (None, "false"):
            raise ApiError.bad_request(
                f"the simulator does not implement the pod log option {option}; drop it"
            )
    tail = _int_option(query, "tailLines")
    limit = _int_option(query, "limitBytes")
    with store.lock:
        pod: dict[str, Any] | None = store.peek(PODS, namespace, name)
        if pod is None:
            raise ApiError.not_found("pods", "", name)
        names = [c["name"] for c in pod["spec"]["containers"]]
        container = query.get("container")
        if not container:
            if len(names) > 1:
                raise ApiError.bad_request(
                    f"a container name must be specified for pod {name}, "
                    f"choose one of: [{' '.join(names)}]"
                )
            container = names[0]
        if container not in names:
            raise ApiError.bad_request(f"container {container} is not valid for pod {name}")
        uid = pod["metadata"]["uid"]
        rt = kubelet.peek_runtime(uid)
        previous = query.get("previous") == "true"
        if rt is None or not rt.logs:
            statuses = (pod.get("status") or {}).get("containerStatuses") or []
            waiting = (
                next(
                    (
                        s["state"].get("waiting", {}).get("reason")
                        for s in statuses
                        if s["name"] == container
                    ),
                    None,
                )
                or "ContainerCreating"
            )
            raise ApiError.bad_request(
                f'container "{container}" in pod "{name}" is waiting to start: {waiting}'
            )
        if previous and len(rt.logs) < 2:
            raise ApiError.bad_request(
                f'previous terminated container "{container}" in pod "{name}" not found'
            )
        path: Path | None = rt.logs[-2] if previous else rt.logs[-1]
        if container != names[0]:
            path = None  # only the first container runs a process; the others print nothing
    return PodLog(store, kubelet, namespace, name, uid, path, tail, limit, previous)
