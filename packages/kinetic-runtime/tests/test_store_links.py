"""A local store never follows a symbolic link under its root, whatever the operation.

In a shared ``file://`` store another writer can swap a directory (a batch child's
``jobs/<id>/``, a batch's ``groups/<g>/``) or an object for a link to somewhere else, such as
the victim's home. No read, write, listing or deletion may reach through it: the victim's
files stay as they were, and what was refused names the key and says a link was refused.
"""

import os
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from kinetic_protocol.errors import StorageError, StoreError
from kinetic_runtime.stores import LocalStore


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {
        path.relative_to(directory).as_posix(): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A stand-in home outside the store, with files nobody may delete."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_bytes(b"PRIVATE KEY")
    (home / "notes.txt").write_bytes(b"mine")
    (home / "deep" / "er").mkdir(parents=True)
    (home / "deep" / "er" / "x").write_bytes(b"x")
    return home


def _store_with_link(tmp_path: Path, victim: Path, at: str) -> LocalStore:
    """A store with some objects, where directory ``at`` is a link to ``victim``."""
    store = LocalStore(tmp_path / "store")
    for key in ("jobs/j0/result", "jobs/j1/deep/handle.json", "groups/g/children/1", "top"):
        store.write(key, b"ok")
    linked = store.root / at
    if linked.exists():
        for path in sorted(linked.rglob("*"), reverse=True):
            path.rmdir() if path.is_dir() else path.unlink()
        linked.rmdir()
    linked.parent.mkdir(parents=True, exist_ok=True)
    linked.symlink_to(victim, target_is_directory=True)
    return store


def _refused(at: str, key: str) -> AbstractContextManager[pytest.ExceptionInfo[StoreError]]:
    return pytest.raises(StoreError, match=rf"symbolic link '{at}'.*\(for '{key}'\)")


@pytest.mark.parametrize("at", ["jobs/j1", "groups/g", "jobs/j1/deep", "jobs/j2/a/b"])
def test_a_linked_directory_is_never_followed(tmp_path: Path, victim: Path, at: str) -> None:
    before = _snapshot(victim)
    store = _store_with_link(tmp_path, victim, at)
    inside = f"{at}/.ssh/id_rsa"

    with _refused(at, inside):
        store.read(inside)
    with _refused(at, inside):
        store.exists(inside)
    with _refused(at, f"{at}/planted"):
        store.write(f"{at}/planted", b"x")
    with _refused(at, f"{at}/planted"):
        store.write(f"{at}/planted", b"x", if_absent=True)
    with _refused(at, f"{at}/new/dir/obj"):
        store.write(f"{at}/new/dir/obj", b"x")
    with _refused(at, f"{at}/notes.txt"):
        store.delete(f"{at}/notes.txt")
    with _refused(at, inside):
        store.url(inside)
    assert store.list(f"{at}/") == []
    assert not any(key.startswith(f"{at}/") for key in store.list(""))
    assert store.delete_prefix(f"{at}/.ssh/") == 0
    assert store.delete_prefix(f"{at}/") == 0
    assert _snapshot(victim) == before
    assert not os.path.lexists(store.root / at)  # the link itself is cleaned up

    # Again, with the link cleared by deleting everything from the top.
    store = _store_with_link(tmp_path, victim, at)
    store.delete_prefix("")
    assert store.list("") == []
    assert not os.path.lexists(store.root / at)
    assert _snapshot(victim) == before


def test_a_link_in_place_of_an_object_is_never_followed(tmp_path: Path, victim: Path) -> None:
    before = _snapshot(victim)
    store = LocalStore(tmp_path / "store")
    store.write("jobs/j/keep", b"ok")
    link = store.root / "jobs" / "j" / "result"
    link.symlink_to(victim / ".ssh" / "id_rsa")

    with _refused("jobs/j/result", "jobs/j/result"):
        store.read("jobs/j/result")
    with _refused("jobs/j/result", "jobs/j/result"):
        store.exists("jobs/j/result")
    with _refused("jobs/j/result", "jobs/j/result"):
        store.write("jobs/j/result", b"x", if_absent=True)
    with _refused("jobs/j/result", "jobs/j/result"):
        store.url("jobs/j/result")
    assert store.list("jobs/") == ["jobs/j/keep"]
    assert _snapshot(victim) == before

    # An overwrite replaces the link itself; a delete removes only the link.
    store.write("jobs/j/result", b"new")
    assert not link.is_symlink() and store.read("jobs/j/result") == b"new"
    link.unlink()
    link.symlink_to(victim / "notes.txt")
    store.delete("jobs/j/result")
    assert not os.path.lexists(link)
    link.symlink_to(victim / "notes.txt")
    assert store.delete_prefix("jobs/") == 1  # the object; the link goes too, uncounted
    assert not (store.root / "jobs").exists()
    assert _snapshot(victim) == before


def test_a_fifo_at_a_key_is_refused_without_waiting(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    store.write("jobs/j/keep", b"ok")
    os.mkfifo(store.root / "jobs" / "j" / "result")
    with pytest.raises(StorageError, match="not a regular file"):
        store.read("jobs/j/result")


def test_links_above_the_root_are_followed(tmp_path: Path) -> None:
    """A store (KINETIC_HOME) may live on a linked directory: only links under it count."""
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    store = LocalStore(tmp_path / "linked" / "store")
    store.write("jobs/j/result", b"ok")
    assert store.read("jobs/j/result") == b"ok"
    assert store.exists("jobs/j/result")
    assert store.list("") == ["jobs/j/result"]
    assert Path(store.url("jobs/j/result")).read_bytes() == b"ok"
    assert store.delete_prefix("jobs/") == 1
    assert list((tmp_path / "real" / "store").iterdir()) == []
