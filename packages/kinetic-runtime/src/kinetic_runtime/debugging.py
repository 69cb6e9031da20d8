"""A ``debug=True`` job's debug server: start debugpy, wait for a debugger, record each step.

``serve`` runs before the user's function (after it was unpickled, so a failure to start the
server is the ``debug`` phase's, not the function's). It

1. imports debugpy, installing it with ``uv pip install debugpy`` when it is missing and ``uv``
   is on ``PATH`` (a custom image without it), else fails saying to add it to the image;
2. ``debugpy.listen((host, port))``; port 0 picks a free one, and the address debugpy
   returns is the one recorded;
3. points ``breakpoint()`` in user code at debugpy (``sys.breakpointhook``); with no debugger
   attached debugpy ignores it, which beats pdb blocking on a pod's closed stdin;
4. writes ``DebugState(phase="waiting")`` to ``layout.debug_key`` and logs the address;
5. waits up to ``wait_timeout`` seconds for a client: ``debugpy.wait_for_client()`` has no
   timeout, so it runs in a daemon thread while this one polls ``is_client_connected()``
   (true once the client sent ``configurationDone``, i.e. its breakpoints are set) against a
   deadline, and cancels the wait at the deadline;
6. writes phase ``attached`` and returns ``debugpy.breakpoint``, or ``no-debugger`` with a
   log line saying so and returns None: the job runs normally.

Where the debugger stops. When one attached, the runtime calls the ``debugpy.breakpoint``
that ``serve`` returned directly in the frame that calls the user's function
(``_Job.call_user_function``), so the debugger stops on that call's line, before the function
runs: "step into" enters it, and breakpoints the user set in their code are already active.
Stopping on the function's *first line* instead would need pydevd internals (a breakpoint
added behind the client's back, which the client's next ``setBreakpoints`` on that file would
silently replace, or a forced step-into state), whose names and semantics differ between
pydevd versions and between its ``sys.settrace`` and ``sys.monitoring`` (3.12+) backends;
``debugpy.breakpoint()`` is public and stops in its caller's frame. Not verified: with
``justMyCode`` on and the runtime installed as a library (an image), pydevd may treat that
frame as library code and not show the first stop; user breakpoints are unaffected.

On a multi-host job only the leader (host 0) serves a debugger: ``debug.json`` and the
backend's port forward are one per job. The other hosts never call ``serve`` and run at once
(``kinetic_runtime.main``); code that joins the hosts in a collective waits there for the
leader, which its debugger holds.
"""

import contextlib
import importlib
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from kinetic_protocol import DebugOptions, DebugState, ObjectStore, layout
from kinetic_protocol.records import DebugPhase, encode_json

__all__ = ["import_debugpy", "serve"]

_POLL_S = 0.1
"""At most this long between two checks for a client (the waiting thread ending wakes it)."""


def import_debugpy() -> ModuleType:
    """debugpy, installed with uv if it is missing and uv is available; else a clear error."""
    try:
        return importlib.import_module("debugpy")
    except ImportError:
        pass
    uv = shutil.which("uv")
    if uv is None:
        raise RuntimeError(
            "debug=True needs debugpy in the job's image, and it has none (nor uv to install "
            "it). Add debugpy to the image, e.g. `pip install debugpy` or kinetic-runtime[debug]."
        )
    command = [uv, "pip", "install", "--python", sys.executable, "debugpy"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise RuntimeError(
            f"debug=True needs debugpy, which the image lacks, and installing it failed "
            f"(exit {done.returncode}); add debugpy to the image.\n{tail}"
        )
    importlib.invalidate_caches()
    return importlib.import_module("debugpy")


def serve(
    options: DebugOptions,
    store: ObjectStore,
    job_id: str,
    workdir: Path,
    say: Callable[[str], None],
    *,
    debugpy: ModuleType | None = None,
) -> Callable[[], object] | None:
    """Start the debug server and wait for a debugger.

    Returns ``debugpy.breakpoint`` when one attached in time (call it where the debugger
    should stop: it stops on the caller's next line), else None.
    """
    # pydevd warns on stderr about frozen modules unless told not to check them.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    module = debugpy if debugpy is not None else import_debugpy()
    host, port = module.listen((options.host, options.port))
    sys.breakpointhook = module.breakpoint

    def record(phase: DebugPhase) -> None:
        state = DebugState(
            job_id=job_id,
            phase=phase,
            host=str(host),
            port=int(port),
            pid=os.getpid(),
            workdir=str(workdir.resolve()),
            updated_at=datetime.now(UTC).isoformat(timespec="milliseconds"),
        )
        store.write(layout.debug_key(job_id), encode_json(state))

    record("waiting")
    say(
        f"job {job_id}: debugger listening on {host}:{port}; waiting up to "
        f"{options.wait_timeout:g}s for a client to attach"
    )
    if _wait_for_client(module, options.wait_timeout):
        record("attached")
        say(f"job {job_id}: debugger attached")
        stop: Callable[[], object] = module.breakpoint
        return stop
    record("no-debugger")
    say(f"job {job_id}: no debugger attached within {options.wait_timeout:g}s; running without one")
    return None


def _wait_for_client(debugpy: ModuleType, timeout: float) -> bool:
    waited = threading.Event()

    def wait() -> None:
        try:
            debugpy.wait_for_client()
        finally:
            waited.set()

    threading.Thread(target=wait, name="kinetic-debug-wait", daemon=True).start()
    deadline = time.monotonic() + timeout
    while not debugpy.is_client_connected():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            # RuntimeError: the thread has not started waiting yet; it is a daemon anyway.
            with contextlib.suppress(RuntimeError):
                debugpy.wait_for_client.cancel()
            return False
        waited.wait(min(remaining, _POLL_S))
    return True
