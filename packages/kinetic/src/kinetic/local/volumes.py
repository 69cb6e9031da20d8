"""Whether local jobs can have ``volumes=``: checked once, before anything is written.

A local job sees its volumes through a private mount namespace that its runtime makes
(:mod:`kinetic_runtime.data.namespace`). Some machines forbid that (macOS, a kernel or
AppArmor policy against unprivileged user namespaces), and a volume must never hide what the
job itself runs from (Kinetic's home and store, the Python installation).
"""

import functools
import sys
from collections.abc import Sequence
from pathlib import Path

from kinetic.config import kinetic_home
from kinetic_protocol import ConfigError
from kinetic_runtime.data.namespace import probe

__all__ = ["check_volumes"]


@functools.cache
def _namespace_problem(python: str) -> str | None:
    """Why jobs run by ``python`` cannot have private mounts here (probed once a process)."""
    return probe(python)


def _own_directories(store_uri: str, python: str) -> list[Path]:
    found = [kinetic_home(), Path(sys.prefix), Path(sys.base_prefix), Path(python).parent.parent]
    if store_uri.startswith("file://"):
        found.append(Path(store_uri.removeprefix("file://")))
    return [path.resolve() for path in found]


def check_volumes(paths: Sequence[str], python: str, store_uri: str) -> None:
    """ConfigError if local jobs cannot have volumes at ``paths``, naming what to do instead."""
    for path in paths:
        volume = Path(path)
        for own in _own_directories(store_uri, python):
            if own == volume or volume in own.parents:
                raise ConfigError(
                    f"volumes[{path!r}] would hide {own}, which local jobs need (Kinetic's "
                    "home or store, or the Python installation); choose another path."
                )
    problem = _namespace_problem(python)
    if problem is not None:
        raise ConfigError(
            f"volumes on the local backend need a private mount namespace per job, which this "
            f"machine does not allow ({problem}). Pass the kinetic.Data as a function argument "
            "instead (the function receives its path), or run on a Kubernetes backend."
        )
