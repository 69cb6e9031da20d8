"""A local job's private mount namespace, on this kernel: volumes appear at their absolute
paths for the job alone, the user's own files read-only, for root and for an ordinary user."""

import errno
import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from runtime_jobs import in_child

from kinetic_runtime.data import namespace
from kinetic_runtime.data.namespace import Bind, NamespaceError, enter, probe

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/ns/mnt"), reason="Linux only")


@pytest.mark.parametrize("as_nobody", [False, True], ids=["as-root-or-self", "as-nobody"])
def test_volumes_appear_at_absolute_paths_that_do_not_exist_on_the_machine(
    shared_dir: Path, as_nobody: bool
) -> None:
    source = shared_dir / "dataset"
    source.mkdir()
    (source / "train.csv").write_text("x,y\n")
    single = shared_dir / "config.json"
    single.write_text("{}")
    scratch = shared_dir / "scratch"
    scratch.mkdir()
    for path in (source, source / "train.csv", single, scratch):
        path.chmod(0o777 if path.is_dir() else 0o666)
    staging = shared_dir / "staging"
    staging.mkdir()
    staging.chmod(0o777)
    top = f"/kinetic-ns-test-{uuid.uuid4().hex[:8]}"
    binds = [
        Bind(source, f"{top}/data", read_only=True),
        Bind(single, f"{top}/etc/config.json", read_only=True),
        Bind(scratch, "/tmp/kinetic-ns-scratch/out"),
    ]

    def body() -> dict[str, Any]:
        cwd = os.getcwd()
        enter(binds, staging)
        try:
            Path(f"{top}/data/new.txt").write_text("x")
            read_only = "writable"
        except OSError as exc:
            read_only = exc.strerror or ""
        Path("/tmp/kinetic-ns-scratch/out/result.txt").write_text("written")
        return {
            "data": os.listdir(f"{top}/data"),
            "config": Path(f"{top}/etc/config.json").read_text(),
            "read_only": read_only,
            "cwd_kept": os.getcwd() == cwd,
            "proc": os.path.exists("/proc/self/status"),
            "uid": os.getuid(),
        }

    seen = in_child(body, as_nobody=as_nobody)
    assert "error" not in seen, seen.get("error", "")
    assert seen["data"] == ["train.csv"]
    assert seen["config"] == "{}"
    assert seen["read_only"] == "Read-only file system"
    assert seen["cwd_kept"] and seen["proc"]
    if as_nobody and os.geteuid() == 0:
        assert seen["uid"] == 65534, "an ordinary user keeps being themselves"
    assert (scratch / "result.txt").read_text() == "written", "writes reach the bound source"
    assert not os.path.exists(top) and not os.path.exists("/tmp/kinetic-ns-scratch")
    assert sorted(p.name for p in source.iterdir()) == ["train.csv"]


def test_this_machine_can_give_jobs_private_mounts() -> None:
    assert probe() is None


def test_a_process_running_threads_cannot_enter_one(shared_dir: Path) -> None:
    def body() -> dict[str, Any]:
        stop = threading.Event()
        worker = threading.Thread(target=stop.wait)
        worker.start()
        try:
            enter([Bind(shared_dir, "/kinetic-never")], shared_dir)
        except NamespaceError as exc:
            return {"said": str(exc)}
        finally:
            stop.set()
            worker.join()
        return {"said": "entered"}

    assert "threads" in in_child(body, as_nobody=False)["said"]


def test_a_target_that_exists_as_the_other_kind_is_refused(shared_dir: Path) -> None:
    (shared_dir / "file.txt").write_text("f")

    def body() -> dict[str, Any]:
        try:
            enter([Bind(shared_dir, str(shared_dir / "file.txt"))], shared_dir)
        except NamespaceError as exc:
            return {"said": str(exc)}
        return {"said": "entered"}

    assert "is not a directory" in in_child(body, as_nobody=False)["said"]


def _shadowed_parent(shared_dir: Path, *, victim_is_dir: bool = True) -> tuple[Path, list[Bind]]:
    """A directory holding ``keep`` and ``victim``, and a bind below it at a path that does
    not exist yet: entering shadows that directory, binding each of its entries in turn."""
    parent = shared_dir / "parent"
    parent.mkdir()
    (parent / "keep").write_text("kept")
    if victim_is_dir:
        (parent / "victim").mkdir()
    else:
        (parent / "victim").write_text("soon gone")
    source = shared_dir / "source"
    source.mkdir()
    (source / "out.txt").write_text("out")
    return parent, [Bind(source, str(parent / "new" / "out"))]


def _when_mounting(path: Path, act: Callable[[], None]) -> None:
    """In this (child) process, run ``act`` just before ``path`` is bind-mounted: between the
    shadow's listing of its directory and its mount of that entry."""
    real = namespace._mount

    def mount(source: str | None, target: str, flags: int, fstype: str | None = None) -> None:
        if source == str(path):
            act()
        real(source, target, flags, fstype)

    namespace._mount = mount


@pytest.mark.parametrize("victim_is_dir", [True, False], ids=["directory", "file"])
def test_an_entry_deleted_between_listing_and_mounting_is_left_out(
    shared_dir: Path, victim_is_dir: bool
) -> None:
    """Under load another process's temporary entry went between the two: the job failed.
    What is gone is gone; the job starts without it."""
    parent, binds = _shadowed_parent(shared_dir, victim_is_dir=victim_is_dir)
    victim = parent / "victim"

    def body() -> dict[str, Any]:
        _when_mounting(victim, victim.rmdir if victim_is_dir else victim.unlink)
        enter(binds, shared_dir / "staging")
        return {
            "listed": sorted(os.listdir(parent)),
            "keep": (parent / "keep").read_text(),
            "out": (parent / "new" / "out" / "out.txt").read_text(),
        }

    (shared_dir / "staging").mkdir()
    seen = in_child(body, as_nobody=False)
    assert "error" not in seen, seen.get("error", "")
    assert seen == {"listed": ["keep", "new"], "keep": "kept", "out": "out"}
    assert not victim.exists() and not (parent / "new").exists()


def test_an_entry_that_is_there_but_cannot_be_mounted_still_fails(shared_dir: Path) -> None:
    parent, binds = _shadowed_parent(shared_dir)
    victim = parent / "victim"

    def refuse() -> None:
        raise OSError(errno.ENOENT, f"mount({victim}): No such file or directory")

    def body() -> dict[str, Any]:
        _when_mounting(victim, refuse)
        try:
            enter(binds, shared_dir / "staging")
        except NamespaceError as exc:
            return {"said": str(exc)}
        return {"said": "entered"}

    (shared_dir / "staging").mkdir()
    said = in_child(body, as_nobody=False)["said"]
    assert said.startswith("could not mount a volume") and str(victim) in said, said
    assert victim.is_dir()


def test_a_second_start_with_the_same_workspace_enters_as_the_first(shared_dir: Path) -> None:
    """A pod's container restarted by its kubelet enters again with the workspace of its
    first start, which still holds that start's shadow directories."""
    parent, binds = _shadowed_parent(shared_dir)
    workspace = shared_dir / "workspace"
    workspace.mkdir()

    def body() -> dict[str, Any]:
        enter(binds, workspace)
        return {"seen": (parent / "new" / "out" / "out.txt").read_text()}

    for start in ("first", "restarted"):
        assert in_child(body, as_nobody=False) == {"seen": "out"}, start
