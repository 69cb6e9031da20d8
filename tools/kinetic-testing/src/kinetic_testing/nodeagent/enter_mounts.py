"""``python -m kinetic_testing.nodeagent.enter_mounts PLAN -- ARGV...``: enter a private mount
namespace with a pod's volume binds (see :mod:`.volumes`), then exec the container's command.

A module of its own, imported by nothing in the package, so running it with ``-m`` prints no
warning into the pod's log.
"""

import json
import os
import sys
from pathlib import Path
from typing import Any


def _enter_and_exec(plan: dict[str, Any], argv: list[str]) -> None:
    from kinetic_runtime.data.namespace import Bind, enter

    binds = [Bind(Path(b["source"]), b["target"], b["read_only"]) for b in plan["binds"]]
    enter(binds, Path(plan["workspace"]))
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    _enter_and_exec(json.loads(sys.argv[1]), sys.argv[3:])
