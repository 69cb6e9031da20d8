"""A keyring kept in a private directory: the Kinetic home's (local jobs), or any backend's
whose jobs read keys from this machine's disk.

The directory (0700) holds one 0600 file per key and ``current`` (see
:mod:`kinetic_protocol.signing`). It is made whole under a temporary name and renamed into
place, so two processes creating it at once agree on one keyring; a rotation writes the new
key's file before ``current`` names it.
"""

import errno
import os
import shutil
import tempfile
from pathlib import Path

from kinetic_protocol.errors import SigningKeyError
from kinetic_protocol.signing import CURRENT_ENTRY, Keyring
from kinetic_runtime.private_files import make_private_dirs, write_private_atomically

__all__ = ["directory_keyring", "replace_directory_keyring"]


def _create(directory: Path) -> None:
    make_private_dirs(directory.parent)
    staging = Path(tempfile.mkdtemp(prefix=".keys-", dir=directory.parent))  # 0700
    try:
        keyring = Keyring.generate(source=str(directory))
        for name, text in keyring.entries().items():
            write_private_atomically(staging / name, text.encode())
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
    """Make ``directory`` hold ``keyring``: new keys first, then ``current``, then the keys it
    retired. Only those are deleted: a key another process added meanwhile (a rotation at the
    same moment, which may already sign with it) stays."""
    entries = keyring.entries()
    for name, text in entries.items():
        if name != CURRENT_ENTRY and not (directory / name).exists():
            write_private_atomically(directory / name, text.encode())
    write_private_atomically(directory / CURRENT_ENTRY, entries[CURRENT_ENTRY].encode())
    for retired in keyring.retired:
        (directory / retired).unlink(missing_ok=True)
