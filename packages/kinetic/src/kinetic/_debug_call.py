"""A blocking call with ``debug=True``: ``run_async`` + ``debug_attach`` + ``result`` in one.

The call waits for the job's debug server, makes it reachable here (forwarding where the
backend needs it), prints where to attach and the VS Code ``launch.json`` entry, then waits for
the job while copying its output, and ends the forwarding when it returns. A multi-host job's
debugger is its leader's (host 0), and the call says so.
"""

import sys
from typing import Any

from kinetic._interrupted import say_job_left_running
from kinetic.handle import JobHandle
from kinetic_protocol import JobFailedError
from kinetic_protocol.host_groups import record_hosts

__all__ = ["result_with_debugger"]


def result_with_debugger(job: JobHandle, local_port: int) -> Any:
    """Attach point for a debugger on ``local_port`` (``KINETIC_DEBUG_PORT``; where the job's
    server is reachable directly and that port is taken, the server's own), then the job's
    value (or its exception)."""
    from kinetic.debug import cleanup_port_forward, debug_attach

    hosts = record_hosts(job.record)
    if hosts > 1:
        _say(
            f"Job {job.job_id} runs on {hosts} hosts; the debugger attaches to host 0 (the "
            "leader). The other hosts run without one."
        )
    _say(f"Job {job.job_id}: waiting for its debug server (kinetic jobs status {job.job_id}).")
    try:
        proc = debug_attach(job, local_port, port_taken="direct")
    except KeyboardInterrupt:
        say_job_left_running(job.job_id, job.backend)
        raise
    except JobFailedError as exc:
        # Nothing to attach to any more: the job stopped waiting (KINETIC_DEBUG_WAIT) and runs
        # alone, or it ended first. Its outcome is still the call's.
        _say(f"{exc} This call returns the job's outcome.")
        return job.result(stream_logs=True)
    try:
        _say(
            f"Job {job.job_id} waits for a debugger to attach; this call returns when the job ends."
        )
        return job.result(stream_logs=True)
    finally:
        cleanup_port_forward(proc)


def _say(message: str) -> None:
    sys.stdout.write(message + "\n")
    sys.stdout.flush()
