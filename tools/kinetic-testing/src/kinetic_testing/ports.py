"""Ports for test servers that no other test process on this machine will be handed too.

Asking the kernel for a free port (bind to port 0, then close) is not enough when several
pytest workers start servers at once: the port is free again the moment the probe closes, so
a second worker can be handed the same number before the first worker's server binds it. Two
control planes once shared a Kueue webhook port that way; the second plane's API server then
called the first plane's Kueue and refused its certificate. A claim is a file named after the
port, created exclusively and holding the claimant's pid; a claim whose process has died is
taken over, so a crashed session leaks nothing.
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

from kinetic_runtime.local.processes import pid_alive

__all__ = ["claim_ports", "release_ports"]


def _ledger() -> Path:
    path = Path(tempfile.gettempdir()) / f"kinetic-test-ports-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def claim_ports(count: int) -> list[int]:
    """``count`` distinct ports that are free now and claimed by this process until released."""
    ledger = _ledger()
    probes: list[socket.socket] = []
    claimed: list[int] = []
    try:
        while len(claimed) < count:
            probe = socket.socket()
            probe.bind(("127.0.0.1", 0))
            probes.append(probe)  # held open so this call is not handed the same port twice
            port = int(probe.getsockname()[1])
            if _claim(ledger / str(port)):
                claimed.append(port)
    finally:
        for probe in probes:
            probe.close()
    return claimed


def release_ports(ports: list[int]) -> None:
    """Give up this process's claims on ``ports`` (a claim held by another process stays)."""
    ledger = _ledger()
    for port in ports:
        claim = ledger / str(port)
        if _owner(claim) == os.getpid():
            claim.unlink(missing_ok=True)


def _claim(claim: Path) -> bool:
    # The pid is written first and the claim made by a hard link, so nobody ever reads a
    # claim half written and takes it for a dead one.
    draft = claim.with_name(f".{claim.name}.{os.getpid()}")
    draft.write_text(str(os.getpid()))
    try:
        for _ in range(2):
            try:
                os.link(draft, claim)
                return True
            except FileExistsError:
                owner = _owner(claim)
                if owner is not None and pid_alive(owner):
                    return False
                claim.unlink(missing_ok=True)  # its process is gone: take it over
        return False
    finally:
        draft.unlink(missing_ok=True)


def _owner(claim: Path) -> int | None:
    try:
        return int(claim.read_text())
    except (FileNotFoundError, ValueError):
        return None
