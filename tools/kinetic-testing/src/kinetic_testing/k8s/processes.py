"""Running a container as a local process group: environment, `$(VAR)` expansion, signals.

Each container is started in its own session so that killing the pod kills every process the
command spawned, just as tearing down a container does.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .status import now_rfc3339

__all__ = ["ContainerConfigError", "ContainerProcess", "container_env", "expand", "start"]

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_SETPRIV = shutil.which("setpriv")
_FIELD_INDEX = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


class ContainerConfigError(Exception):
    """The container cannot be configured (a missing secret or config map)."""


def expand(text: str, env: dict[str, str]) -> str:
    """Expand `$(VAR)` from the container's env as the kubelet does; `$$` escapes a `$`."""

    def repl(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _REF.sub(repl, text)


def _field_value(path: str, pod: dict[str, Any]) -> str:
    meta = pod["metadata"]
    indexed = _FIELD_INDEX.match(path)
    if indexed:
        return str((meta.get(indexed[1]) or {}).get(indexed[2], ""))
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": pod["spec"].get("nodeName"),
        "spec.serviceAccountName": pod["spec"].get("serviceAccountName", "default"),
        "status.podIP": (pod.get("status") or {}).get("podIP"),
        "status.hostIP": (pod.get("status") or {}).get("hostIP"),
    }
    if path not in simple:
        raise ContainerConfigError(f"unsupported fieldRef fieldPath {path!r}")
    return str(simple[path] or "")


def container_env(container: dict[str, Any], pod: dict[str, Any]) -> dict[str, str]:
    """The variables the container declares, resolved in order (later ones may use earlier)."""
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        ref = source.get("configMapRef") or source.get("secretRef") or {}
        if not ref.get("optional"):
            kind = "configmap" if "configMapRef" in source else "secret"
            raise ContainerConfigError(f'{kind} "{ref.get("name")}" not found')
    for var in container.get("env") or []:
        name = str(var["name"])
        if "valueFrom" not in var:
            env[name] = expand(str(var.get("value", "")), env)
            continue
        value_from = var["valueFrom"]
        if "fieldRef" in value_from:
            env[name] = _field_value(str(value_from["fieldRef"]["fieldPath"]), pod)
        elif "resourceFieldRef" in value_from:
            resource = str(value_from["resourceFieldRef"]["resource"])
            kind, _, key = resource.partition(".")
            amounts = (container.get("resources") or {}).get(kind) or {}
            env[name] = str(amounts.get(key, "0"))
        else:
            ref = value_from.get("secretKeyRef") or value_from.get("configMapKeyRef") or {}
            if not ref.get("optional"):
                kind = "configmap" if "configMapKeyRef" in value_from else "secret"
                raise ContainerConfigError(f'{kind} "{ref.get("name")}" not found')
    return env


@dataclass
class ContainerProcess:
    """A running (or finished) container process and the bookkeeping to stop it."""

    proc: subprocess.Popen[bytes]
    log_path: Path
    started_at: str
    started: float
    term_sent: float | None = None
    kill_at: float | None = None
    #: A termination reason decided by the simulator (OOMKilled), overriding the exit code's.
    forced_reason: str | None = None
    #: Set once the main process is reaped and its group swept, so a recycled pid is never hit.
    group_gone: bool = False

    def poll(self) -> int | None:
        """The exit code the kubelet would report (128 + signal when killed), or None."""
        code = self.proc.poll()
        if code is None:
            return None
        if not self.group_gone:
            # Nothing in a container outlives its main process.
            self.signal(signal.SIGKILL)
            self.group_gone = True
        return 128 - code if code < 0 else code

    def signal(self, sig: signal.Signals) -> None:
        """Send `sig` to the whole process group; a vanished group is not an error."""
        if self.group_gone:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def terminate(self, grace: float) -> None:
        """SIGTERM now, SIGKILL once `grace` seconds pass (see `enforce_deadline`)."""
        if self.term_sent is None:
            self.term_sent = time.monotonic()
            self.kill_at = self.term_sent + grace
            self.signal(signal.SIGTERM)
            if grace <= 0:
                self.signal(signal.SIGKILL)

    def kill(self, reason: str | None = None) -> None:
        """SIGKILL at once (OOM, node loss); `reason` becomes the termination reason."""
        self.forced_reason = reason or self.forced_reason
        self.term_sent = self.term_sent or time.monotonic()
        self.kill_at = time.monotonic()
        self.signal(signal.SIGKILL)

    def enforce_deadline(self) -> None:
        """Escalate to SIGKILL once a terminating process outstays its grace period."""
        if self.kill_at is not None and time.monotonic() >= self.kill_at:
            self.signal(signal.SIGKILL)

    def reap(self, timeout: float = 5.0) -> None:
        """Kill and wait, for shutdown; never leaves a zombie behind."""
        self.signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=timeout)
        self.group_gone = True


def start(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    log_path: Path,
) -> ContainerProcess:
    """Start `argv` in a new session with stdout and stderr both appended to `log_path`.

    Raises OSError (missing executable, bad directory) for the kubelet to report as StartError.
    Where util-linux's `setpriv` exists, the process also gets SIGKILL if the thread that
    started it dies, so even a test run killed outright leaves no container process behind.
    """
    exe = argv[0]
    found = exe if "/" in exe else shutil.which(exe, path=env.get("PATH"))
    if found is None or not os.access(found, os.X_OK):
        raise FileNotFoundError(errno.ENOENT, "executable file not found in $PATH", exe)
    if not cwd.is_dir():
        raise FileNotFoundError(errno.ENOENT, "working directory does not exist", str(cwd))
    log_path.parent.mkdir(parents=True, exist_ok=True)
    prefix = [_SETPRIV, "--pdeathsig", "KILL", "--"] if _SETPRIV else []
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [*prefix, *argv],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return ContainerProcess(proc, log_path, now_rfc3339(), time.monotonic())
