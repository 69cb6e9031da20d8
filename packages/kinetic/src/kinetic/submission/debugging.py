"""Where a ``debug=True`` job's debug server listens, and how long it waits for a debugger."""

from kinetic.settings import DEBUG_WAIT
from kinetic.submission.target import Target
from kinetic_protocol import DebugOptions

__all__ = ["debug_options"]


def debug_options(target: Target) -> DebugOptions:
    """A backend that forwards a port (Kubernetes) gets debugpy's usual ``0.0.0.0:5678`` in
    the pod; otherwise the job runs on this machine: loopback only, any free port, since
    several debug jobs may run at once."""
    wait_timeout = DEBUG_WAIT.number()
    if wait_timeout is None:  # never: the setting has a default
        wait_timeout = DebugOptions().wait_timeout
    if target.backend.capabilities.debug_port_forward:
        return DebugOptions(wait_timeout=wait_timeout)
    return DebugOptions(host="127.0.0.1", port=0, wait_timeout=wait_timeout)
