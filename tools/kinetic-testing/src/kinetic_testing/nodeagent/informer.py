"""A list+watch of every pod, fed into the agent's event queue.

It re-lists after 410 Gone or any error (sending the full list as a ``resync``, so deletions
missed while disconnected are noticed), and keeps the open response so :meth:`stop` can cut
a blocked read at once.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
from collections.abc import Callable
from typing import Any

from .api import Kube, describe, iter_lines

__all__ = ["Event", "PodInformer"]

Event = tuple[str, Any]
"""("resync", [pods]) | ("upsert", pod) | ("delete", pod) | ("wake", None)."""
_WATCH_SECONDS = 60


class PodInformer:
    """Runs in its own thread; every change becomes an :data:`Event` on ``events``."""

    def __init__(
        self, kube: Kube, events: queue.Queue[Event], report: Callable[[str], None]
    ) -> None:
        self._kube = kube
        self._events = events
        self._report = report
        self._stop = threading.Event()
        self._response: Any = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True, name="nodeagent-watch")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            response = self._response
        if response is not None:
            with contextlib.suppress(Exception):  # the read may already have ended
                response.shutdown()
        self._thread.join(timeout=1.5)

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                pods, version = self._kube.list_pods()
                self._events.put(("resync", pods))
                failures = 0
                while not self._stop.is_set():
                    version = self._watch(version)
            except _Expired:
                continue
            except Exception as exc:
                if self._stop.is_set():
                    return
                failures += 1
                if failures > 1:  # one dropped connection is routine; repeats are not
                    self._report(f"pod watch: {describe(exc)}")
                self._stop.wait(min(0.2 * failures, 2.0))

    def _watch(self, version: str) -> str:
        """One watch request; returns the resourceVersion to resume from."""
        response = self._kube.watch_pods(version, _WATCH_SECONDS)
        with self._lock:
            self._response = response
        try:
            for line in iter_lines(response):
                event = json.loads(line)
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        raise _Expired
                    raise RuntimeError(f"watch error: {obj.get('message')}")
                version = obj["metadata"].get("resourceVersion") or version
                if kind == "BOOKMARK":
                    continue
                self._events.put(("delete" if kind == "DELETED" else "upsert", obj))
        finally:
            with self._lock:
                self._response = None
            response.release_conn()
        return version


class _Expired(Exception):
    """410 Gone: the resourceVersion is too old; list again."""
