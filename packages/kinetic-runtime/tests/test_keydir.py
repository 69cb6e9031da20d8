"""A keyring in a private directory (the Kinetic home's): private whatever the umask, rotated
in place, never made by a reader, and read whole while another process changes it."""

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kinetic_protocol import Keyring, SigningKeyError
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


def test_two_rotations_at_once_keep_both_new_keys(tmp_path: Path) -> None:
    """Both read the same keyring and each adds a key: the one that lands second must not
    delete the first's key, which may already have signed a job."""
    keys = tmp_path / "keys"
    before = directory_keyring(keys, create=True)
    first, second = before.rotated(), before.rotated()
    replace_directory_keyring(keys, first)
    signed = first.sign("result", "job-1", b"value")
    replace_directory_keyring(keys, second)
    now = directory_keyring(keys, create=False)
    assert now.current == second.current
    assert set(now.key_ids) == {before.current, first.current, second.current}
    now.check(signed, "result", "job-1", b"value", key="results/job-1")


def test_retiring_a_key_deletes_that_key_only(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    old = directory_keyring(keys, create=True)
    rotated = old.rotated()
    replace_directory_keyring(keys, rotated)
    elsewhere = rotated.rotated()  # a rotation by another process, after this one's read
    replace_directory_keyring(keys, elsewhere)
    replace_directory_keyring(keys, rotated.without(old.current))
    assert set(directory_keyring(keys, create=False).key_ids) == {
        rotated.current,
        elsewhere.current,
    }


class _ChangedWhileListed(type(Path())):  # type: ignore[misc]
    """A key directory that another process changes just after this reader lists it."""

    change: Callable[[], None] = staticmethod(lambda: None)

    def iterdir(self) -> Iterator[Path]:
        listed = list(super().iterdir())
        type(self).change()
        yield from listed


def test_a_reader_sees_a_whole_keyring_while_keys_rotate(tmp_path: Path) -> None:
    """Five rotations during a 40-input batch failed a job: a reader listed the keys, then
    read a ``current`` naming a key it had not listed."""
    keys = tmp_path / "keys"
    old = directory_keyring(keys, create=True)
    rotated = old.rotated()
    replace_directory_keyring(keys, rotated)
    after = rotated.rotated()
    _ChangedWhileListed.change = staticmethod(lambda: replace_directory_keyring(keys, after))
    seen = Keyring.from_directory(_ChangedWhileListed(keys))
    assert seen.current in (rotated.current, after.current)
    assert seen.current in seen.key_ids
