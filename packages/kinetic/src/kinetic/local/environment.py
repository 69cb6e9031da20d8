"""What a local job's processes get of this machine's environment.

A local job sees what a pod would: its captured variables and the ones Kinetic sets, plus only
what a process needs to run on this machine (:data:`HOST_NAMES`, :data:`HOST_PREFIXES`).
Nothing else of the submitter's environment reaches it, so a job that works locally because
of a stray variable fails here first, not on the cluster.
"""

import importlib.util
import os
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path

from kinetic_runtime.private_files import open_private
from kinetic_runtime.settings import HOME

__all__ = [
    "HOST_NAMES",
    "HOST_PREFIXES",
    "dispatcher_environment",
    "host_environment",
    "runtime_path",
    "start_dispatcher",
]

_RUNTIME_MODULES = ("kinetic_runtime", "kinetic_protocol", "cloudpickle", "msgspec")
"""What a job's interpreter imports of Kinetic's before the user's code."""

HOST_NAMES = (
    # to run at all: where programs and the user's files are, who runs them
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
    "TZ",
    # to find accelerators and native libraries installed on this machine
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "CUDA_VISIBLE_DEVICES",
    # to reach a gs:// store as this machine does (a pod has its own identity instead)
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
    "STORAGE_EMULATOR_HOST",
    # the network as this machine sees it
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
)
"""Variables a local job inherits from the submitter when set."""

HOST_PREFIXES = ("LANG", "LC_")
"""Prefixes of inherited variables: the locale (``LANG``, ``LANGUAGE``, ``LC_*``)."""


def host_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of ``environ`` a local job inherits, with ``KINETIC_HOME`` made absolute (the
    job runs in another directory) when it is set."""
    from kinetic.config import kinetic_home

    kept = {
        name: value
        for name, value in environ.items()
        if name in HOST_NAMES or name.startswith(HOST_PREFIXES)
    }
    if HOME.from_env(environ):
        kept[HOME.env] = str(kinetic_home())
    return kept


def runtime_path(environ: Mapping[str, str]) -> str | None:
    """The entries of ``PYTHONPATH`` this interpreter finds the runtime through, if any.

    Kinetic installed with ``pip install --target`` or run from a source checkout is found
    only through ``PYTHONPATH``, which a job does not inherit: a job run in this interpreter
    gets exactly the entries that hold the runtime and its dependencies (with whatever else
    they hold), so it starts however it is started, through the launcher or not.
    """
    entries = [entry for entry in environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    needed: set[str] = set()
    for module in _RUNTIME_MODULES:
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None:
            continue
        location = Path(spec.origin).resolve()
        needed.update(e for e in entries if location.is_relative_to(Path(e).resolve()))
    kept = [entry for entry in entries if entry in needed]
    return os.pathsep.join(kept) if kept else None


def dispatcher_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of the processes a client starts to start jobs (the launcher, the line's
    keeper): what a job inherits of this machine, and the ``PYTHONPATH`` entries that find the
    runtime. They serve every client of the machine, so they carry none of one client's
    variables, and a variable too large to pass to a new process (over 128 KiB) cannot keep
    them from starting."""
    kept = host_environment(environ)
    found_through = runtime_path(environ)
    if found_through:
        kept["PYTHONPATH"] = found_through
    return kept


def start_dispatcher(command: list[str], log: Path, pass_fds: tuple[int, ...] = ()) -> None:
    """Start a process that starts jobs (the launcher, the line's keeper) in a session of its
    own, out of reach of the terminal's signals, with :func:`dispatcher_environment` and its
    stderr appended to ``log``; a thread reaps it when it exits (no zombie, and no "still
    running" ResourceWarning when the Popen is dropped). OSError if it cannot be started."""
    with os.fdopen(open_private(log, os.O_WRONLY | os.O_APPEND), "ab") as errors:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env=dispatcher_environment(os.environ),
            cwd="/",
            start_new_session=True,
            pass_fds=pass_fds,
        )
    threading.Thread(target=process.wait, name="kinetic-dispatcher-reap", daemon=True).start()
