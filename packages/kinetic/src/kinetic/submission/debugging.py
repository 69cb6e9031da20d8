"""Where a ``debug=True`` job's debug server listens, how long it waits for a debugger, and
which local port a blocking debug call offers it on. Read before anything is written: a
malformed setting refuses the job before its code is uploaded."""

from kinetic.settings import DEBUG_PORT, DEBUG_WAIT
from kinetic_protocol import Capabilities, ConfigError, DebugOptions, layout

__all__ = ["debug_options", "debug_port"]


def debug_options(capabilities: Capabilities) -> DebugOptions:
    """A backend that forwards a port (Kubernetes) gets debugpy's usual ``0.0.0.0:5678`` in
    the pod; otherwise the job runs on this machine: loopback only, any free port, since
    several debug jobs may run at once."""
    wait_timeout = DEBUG_WAIT.number()
    if wait_timeout is None:  # never: the setting has a default
        wait_timeout = DebugOptions().wait_timeout
    if capabilities.debug_port_forward:
        return DebugOptions(wait_timeout=wait_timeout)
    return DebugOptions(host="127.0.0.1", port=0, wait_timeout=wait_timeout)


def debug_port() -> int:
    """``KINETIC_DEBUG_PORT``: the local port a blocking debug call attaches the debugger on."""
    raw = DEBUG_PORT.value() or ""
    port = layout.ascii_count(raw.strip()) or 0
    if not 1 <= port <= 65535:
        raise ConfigError(
            f"{DEBUG_PORT.env} must be a TCP port, 1-65535; got {raw!r}. {DEBUG_PORT.help}."
        )
    return port
