"""A small pool of submission threads that keeps working while the interpreter shuts down.

``concurrent.futures.ThreadPoolExecutor`` refuses new work once the main thread has ended,
but a batch's submitter must go on submitting after a script returns from
``run_async_map`` (that is what its non-daemon thread is for).
"""

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["WorkerPool"]

T = TypeVar("T")
_STOP = None


class WorkerPool:
    """Up to ``size`` threads, started on demand, that run submitted calls in order."""

    def __init__(self, size: int, name: str) -> None:
        self._size = size
        self._name = name
        self._tasks: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue()
        )
        self._threads: list[threading.Thread] = []

    def submit(self, fn: Callable[[], T]) -> "Future[T]":
        future: Future[T] = Future()
        self._tasks.put((future, fn))
        if len(self._threads) < self._size:
            thread = threading.Thread(target=self._work, name=f"{self._name}-{len(self._threads)}")
            self._threads.append(thread)
            thread.start()
        return future

    def _work(self) -> None:
        while (task := self._tasks.get()) is not _STOP:
            future, fn = task
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

    def shutdown(self) -> None:
        """Let queued calls finish, then stop every thread."""
        for _ in self._threads:
            self._tasks.put(_STOP)
        for thread in self._threads:
            thread.join()
