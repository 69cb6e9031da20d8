"""``python -m kinetic_testing.enter_mounts PLAN -- ARGV...``: enter a private mount namespace
with a pod's volume binds (see :mod:`kinetic_testing.nodeagent.volumes`), then exec the
container's command.

It runs before every pod's command, so it sits outside ``kinetic_testing.nodeagent``: ``-m``
imports a module's parent packages first, and the node agent's package pulls in the
``kubernetes`` client (about 0.4 s a pod). Imported by nothing, so ``-m`` prints no warning
into the pod's log.
"""

import json
import os
import sys
from pathlib import Path
from typing import Any


def enter_plan(plan: dict[str, Any]) -> None:
    """Enter a private mount namespace with ``plan``'s binds (this process must have one
    thread)."""
    from kinetic_runtime.data.namespace import Bind, enter

    binds = [Bind(Path(b["source"]), b["target"], b["read_only"]) for b in plan["binds"]]
    enter(binds, Path(plan["workspace"]))


def _enter_and_exec(plan: dict[str, Any], argv: list[str]) -> None:
    enter_plan(plan)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    _enter_and_exec(json.loads(sys.argv[1]), sys.argv[3:])
