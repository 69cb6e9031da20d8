"""A pickle that leaves evidence when it is unpickled: the attacker's bytes in trust tests."""

import os
import pickle
from pathlib import Path
from typing import Any

__all__ = ["tell_tale_pickle"]


class _MakesDir:
    """Unpickling this runs ``os.mkdir(path)``."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.mkdir, (self.path,)


def tell_tale_pickle(marker: Path) -> bytes:
    """Bytes whose unpickling creates the directory ``marker`` (and does nothing else)."""
    return pickle.dumps(_MakesDir(marker))
