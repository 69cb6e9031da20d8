"""What the test tiers' one-time builds share (the control plane's binaries, the stand-in base
images): one builder at a time per cache, across sessions, and progress lines on the terminal,
since a build takes minutes and a silent terminal looks hung."""

import fcntl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

__all__ = ["Progress", "build_lock"]

_HEARTBEAT_S = 20.0


@contextmanager
def build_lock(root: Path) -> Iterator[None]:
    """Hold the cache at ``root`` while building into it (other sessions wait, then reuse)."""
    with (root / "build.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class Progress:
    """Lines ``[label  12s] text`` on ``out``, timed from when it was made."""

    def __init__(self, label: str, out: TextIO) -> None:
        self._label = label
        self._out = out
        self._start = time.monotonic()

    def say(self, text: str) -> None:
        elapsed = time.monotonic() - self._start
        self._out.write(f"[{self._label} {elapsed:5.0f}s] {text}\n")
        self._out.flush()

    @contextmanager
    def step(self, text: str) -> Iterator[None]:
        """Say ``text...`` and then ``still ...`` every 20 s until the step ends."""
        self.say(f"{text}...")
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.wait(_HEARTBEAT_S):
                self.say(f"still {text[0].lower()}{text[1:]}")

        thread = threading.Thread(target=heartbeat, name="build-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
