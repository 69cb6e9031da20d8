"""``--out FILE``: checked before anything is collected or drawn, written with a clear error.

``batch results --out`` cleans children up as it collects them, so a path found unusable only
afterwards cost the user their cleanup; and an ``OSError`` without a file name (writing
``/proc/version`` fails with EIO) used to reach the user as "Unexpected OSError".
"""

import os
import tempfile
from pathlib import Path

from kinetic.cli.errors import Failed
from kinetic_protocol import ConfigError

__all__ = ["check_out", "write_out"]


def check_out(path: Path, what: str) -> None:
    """A ``ConfigError`` (exit 2) unless ``what`` can be written to ``path``: its directory
    exists and takes new files, and the path, if it exists, is a writable regular file."""
    directory = path.parent
    shown = str(path)
    if not directory.is_dir():
        raise ConfigError(
            f"Cannot write {what} to {shown!r}: there is no directory {str(directory)!r}. "
            "Create it first, or choose another path."
        )
    if path.exists() and not (path.is_file() and os.access(path, os.W_OK)):
        raise ConfigError(
            f"Cannot write {what} to {shown!r}: it exists and is not a file you can write. "
            "Choose another path."
        )
    try:  # the only sure test that files can be made there (root passes os.access on /proc)
        fd, probe = tempfile.mkstemp(dir=directory, prefix=".kinetic-out-check-")
    except OSError as exc:
        raise ConfigError(
            f"Cannot write {what} to {shown!r}: no file can be created in "
            f"{str(directory)!r} ({exc.strerror or exc}). Choose a writable directory."
        ) from None
    os.close(fd)
    os.unlink(probe)


def write_out(path: Path, text: str, what: str, *, again: str) -> None:
    """Write ``text`` to ``path``; a failure is a :class:`Failed` naming the path and the
    cause, and saying how to get ``what`` again (``again``)."""
    try:
        path.write_text(text)
    except OSError as exc:
        raise Failed(
            f"Could not write {what} to {str(path)!r}: {exc.strerror or exc}. {again}"
        ) from exc
