"""A keyring in a private directory (the Kinetic home's): private whatever the umask, rotated
in place, and never made by a reader."""

import os
import stat
from pathlib import Path

import pytest

from kinetic_protocol import SigningKeyError
from kinetic_runtime.keydir import directory_keyring, replace_directory_keyring


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_a_key_directory_is_private_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    previous = os.umask(umask)
    try:
        made = directory_keyring(tmp_path / "keys", create=True)
        replace_directory_keyring(tmp_path / "keys", made.rotated())
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "keys").stat().st_mode) == 0o700
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "keys").iterdir()}
    assert len(modes) == 3 and set(modes.values()) == {0o600}
    assert directory_keyring(tmp_path / "keys", create=False).current != made.current


def test_a_reader_never_creates_keys(tmp_path: Path) -> None:
    with pytest.raises(SigningKeyError, match="no signing keys"):
        directory_keyring(tmp_path / "keys", create=False)
    assert not (tmp_path / "keys").exists()
