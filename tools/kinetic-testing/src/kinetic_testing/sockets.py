"""What the kernel says about this process's TCP sockets: a test that something closed its
sockets reads them here instead of trusting the code that closed them (Linux ``/proc``)."""

import os
from pathlib import Path
from typing import NamedTuple

from .ports import claim_ports

__all__ = ["TcpSocket", "free_port", "own_tcp_sockets"]


class TcpSocket(NamedTuple):
    local_port: int
    remote_port: int
    state: str


_STATES = {
    "01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
    "05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK",
    "0A": "LISTEN", "0B": "CLOSING",
}  # fmt: skip


def _own_socket_inodes() -> set[str]:
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed since the listing
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def own_tcp_sockets() -> list[TcpSocket]:
    """This process's open TCP sockets (IPv4 and IPv6), as the kernel lists them."""
    inodes = _own_socket_inodes()
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, state, inode = fields[1], fields[2], fields[3], fields[9]
            if inode in inodes:
                found.append(
                    TcpSocket(
                        int(local.rsplit(":", 1)[1], 16),
                        int(remote.rsplit(":", 1)[1], 16),
                        _STATES.get(state, state),
                    )
                )
    return found


def free_port() -> int:
    """A port nothing on this machine listens on now, claimed by this test process for its
    life so that no other test process is handed it too."""
    (port,) = claim_ports(1)
    return port
