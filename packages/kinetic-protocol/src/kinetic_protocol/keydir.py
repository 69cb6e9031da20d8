"""A keyring kept in a private directory: the Kinetic home's (local jobs), or any backend's
whose jobs read keys from this machine's disk.

The directory (0700) holds one 0600 file per key and ``current`` (see
:mod:`kinetic_protocol.signing`). It is made whole under a temporary name and renamed into
place, so two processes creating it at once agree on one keyring; a rotation writes the new
key's file before ``current`` names it.
"""

import contextlib
import errno
import os
import shutil
import tempfile
from pathlib import Path

from kinetic_protocol.errors import SigningKeyError
from kinetic_protocol.signing import CURRENT_ENTRY, Keyring

__all__ = ["directory_keyring", "replace_directory_keyring"]


def _write_private(path: Path, text: str) -> None:
    """Write ``path`` atomically with mode 0600 whatever the umask."""
    fd, temp = tempfile.mkstemp(prefix=".", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as file:
            file.write(text)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _create(directory: Path) -> None:
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".keys-", dir=directory.parent))  # 0700
    try:
        keyring = Keyring.generate(source=str(directory))
        for name, text in keyring.entries().items():
            _write_private(staging / name, text)
        os.rename(staging, directory)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
            raise  # else another process created it first: theirs is the keyring


def directory_keyring(directory: Path, *, create: bool) -> Keyring:
    """The keyring in ``directory``; with ``create``, made first if there is none."""
    if not directory.exists():
        if not create:
            raise SigningKeyError(
                f"There are no signing keys in {directory}, so no job signed with them can be "
                "verified: they were deleted (jobs signed with them are unreadable now), or no "
                "job was ever submitted from this machine's Kinetic home."
            )
        try:
            _create(directory)
        except OSError as exc:
            raise SigningKeyError(f"Cannot create the signing keys in {directory}: {exc}") from exc
    return Keyring.from_directory(directory)


def replace_directory_keyring(directory: Path, keyring: Keyring) -> None:
    """Make ``directory`` hold ``keyring``: new keys first, then ``current``, then removals."""
    entries = keyring.entries()
    for name, text in entries.items():
        if name != CURRENT_ENTRY and not (directory / name).exists():
            _write_private(directory / name, text)
    _write_private(directory / CURRENT_ENTRY, entries[CURRENT_ENTRY])
    for stale in directory.iterdir():
        if stale.name not in entries and not stale.name.startswith("."):
            stale.unlink()
