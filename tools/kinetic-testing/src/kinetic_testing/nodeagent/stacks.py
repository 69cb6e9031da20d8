"""Where each running pod's Python processes are stuck: their stacks, for a failure report.

A job that hangs under load leaves a pod that runs and prints nothing; the test only sees a
timeout. ``py-spy dump`` reads a live interpreter's stack from outside (as root, as the tests
run in CI) without stopping or changing it, so the report shows the line each process of
the pod (the runtime, its output keeper, the user's code) is waiting on.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from kinetic_runtime.local.processes import group_members

__all__ = ["process_stacks"]

_DUMP_SECONDS = 15


def _py_spy() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


def process_stacks(pods: Mapping[str, int]) -> str:
    """The stacks of every process of each pod (``pod name -> its process group``)."""
    tool = _py_spy()
    if tool is None:
        return "py-spy is not installed: no stacks"
    parts = []
    for pod, leader in sorted(pods.items()):
        for pid in sorted(group_members(leader) or []):  # zombies have no stack
            try:
                done = subprocess.run(
                    [tool, "dump", "--pid", str(pid)],
                    capture_output=True,
                    text=True,
                    timeout=_DUMP_SECONDS,
                    check=False,
                )
                text = (done.stdout or done.stderr).strip()
            except subprocess.TimeoutExpired:
                text = f"(py-spy did not answer in {_DUMP_SECONDS} s)"
            parts.append(f"--- pod {pod}, pid {pid} ---\n{text}")
    return "\n".join(parts) or "no pod process is running"
