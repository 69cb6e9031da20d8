"""A local job's code from this machine's one unpacked tree of its bundle
(``kinetic_runtime.bundle_trees``): overlaid at the job's workdir, the job's writes its own,
the tree made once and deleted only when unused, and the bundle unpacked as before where no
overlay can be made (issue 53)."""

import encodings.cp437  # noqa: F401 (zip names: a child as nobody may not import it)
import errno
import fcntl
import hashlib
import io
import os
import random
import shutil
import stat
import tempfile  # noqa: F401 (as above)
import time
import uuid
import zipfile
from pathlib import Path
from typing import Any

import cloudpickle
import pytest
from runtime_jobs import JobStage, in_child, pickled_call

from kinetic_protocol import (
    ArtifactRef,
    CallDescriptor,
    DebugOptions,
    Failed,
    Succeeded,
    Volume,
    layout,
)
from kinetic_runtime import bundle_trees, job
from kinetic_runtime.bundle_trees import (
    KEEP_TREES,
    SHARED_FROM_BYTES,
    UNUSED_DAYS,
    overlay_dir,
    place_bundle,
    prune,
    tree_of,
    use_tree,
)
from kinetic_runtime.data.namespace import Bind, enter
from kinetic_runtime.main import EXIT_INFRA_ERROR, EXIT_OK

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/ns/mnt"), reason="Linux only")

_BUNDLE = {
    "pkg/__init__.py": b"",
    "pkg/mod.py": b"VALUE = 1\n",
    "data/keep.txt": b"as shipped\n",
    "data/gone.txt": b"deleted by a job\n",
    "data/weights.bin": random.Random(53).randbytes(SHARED_FROM_BYTES),  # worth sharing
}
_CODE_FILES = ["pkg/mod.py", "data/keep.txt", "data/gone.txt"]
_DAY = 86400.0


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _change_the_code() -> Any:
    """A job that reads its code, then changes it: rewrites a file, deletes one, adds one."""

    def change() -> dict[str, Any]:  # nested: pickled by value
        seen = {
            "inodes": {name: os.stat(name).st_ino for name in _CODE_FILES},
            "keep": Path("data/keep.txt").read_text(),
            "gone_there": Path("data/gone.txt").exists(),
            "new_there": Path("new.txt").exists(),
            "tree_refused": None,
        }
        cache = Path(os.environ["KINETIC_BUNDLE_CACHE"])
        for tree in (p for p in cache.glob("*") if p.is_dir()):
            try:  # even through the tree's own path
                (tree / "data" / "keep.txt").write_text("changed through the tree\n")
            except OSError as exc:
                seen["tree_refused"] = errno.errorcode[exc.errno or 0]
        Path("data/keep.txt").write_text("changed by a job\n")
        Path("data/gone.txt").unlink()
        Path("new.txt").write_text("written by a job\n")
        return seen

    return change


def _run(
    jobs: JobStage, job_id: str, bundle: bytes, env: dict[str, str], stored: bytes | None = None
) -> Any:
    """Run a job of ``bundle``, with ``stored`` (else the bundle) where the store keeps it."""
    jobs.workdir = jobs.tmp_path / "jobs" / job_id / "work"
    staged = jobs.stage(job_id, pickled_call(_change_the_code()), bundle=bundle)
    if stored is not None:
        jobs.store.write(layout.bundle_key(hashlib.sha256(bundle).hexdigest()), stored)
    run = jobs.run(staged, env=env)
    assert run.exit_code == EXIT_OK, run.output
    assert isinstance(run.envelope, Succeeded)
    return cloudpickle.loads(run.envelope.value)


def test_jobs_of_one_bundle_share_its_tree_and_keep_their_writes_to_themselves(
    jobs: JobStage, tmp_path: Path
) -> None:
    """The second job sees the tree's own files (their inode numbers), as shipped: neither the
    first job's writes nor its deletion reached the tree or the second job. It never reads the
    bundle: the tree was made from bytes verified against the digest its call pins."""
    bundle, cache = _zip(_BUNDLE), tmp_path / "bundles"
    env = {"KINETIC_BUNDLE_CACHE": str(cache)}
    first = _run(jobs, "job-1", bundle, env)
    second = _run(jobs, "job-2", bundle, env, stored=b"not read again")

    tree = tree_of(cache, hashlib.sha256(bundle).hexdigest())
    assert sorted(p.name for p in cache.iterdir()) == sorted([tree.name, f"{tree.name}.lock"])
    assert _files(tree) == _BUNDLE
    tree_inodes = {name: (tree / name).stat().st_ino for name in _CODE_FILES}
    assert first["inodes"] == tree_inodes
    assert second["inodes"] == tree_inodes
    for seen in (first, second):
        assert seen["keep"] == "as shipped\n"
        assert seen["tree_refused"] == "EROFS"
        assert seen["gone_there"] and not seen["new_there"]
    for job_id in ("job-1", "job-2"):
        job_dir = tmp_path / "jobs" / job_id
        assert list((job_dir / "work").iterdir()) == []  # outside the job: a mount point
        upper = overlay_dir(job_dir / "work") / "upper"
        assert (upper / "new.txt").read_text() == "written by a job\n"
        assert (upper / "data" / "keep.txt").read_text() == "changed by a job\n"
        assert stat.S_ISCHR((upper / "data" / "gone.txt").lstat().st_mode)  # a whiteout
        assert not (upper / "pkg").exists()  # the code it only read was never copied


def test_where_no_overlay_can_be_made_the_job_unpacks_its_bundle(
    jobs: JobStage, tmp_path: Path
) -> None:
    """A job with an attempt timeout runs a timer thread before its bundle is placed, and the
    kernel makes no mount namespace for a process of more than one thread: it unpacks as
    before, into its workdir, and the cache is left alone."""
    bundle, cache = _zip(_BUNDLE), tmp_path / "bundles"
    env = {"KINETIC_BUNDLE_CACHE": str(cache), "KINETIC_ATTEMPT_TIMEOUT": "600"}
    seen = _run(jobs, "job-threads", bundle, env)

    workdir = tmp_path / "jobs" / "job-threads" / "work"
    assert seen["keep"] == "as shipped\n" and seen["gone_there"]
    assert _files(workdir) == {
        "pkg/__init__.py": b"",
        "pkg/mod.py": b"VALUE = 1\n",
        "data/keep.txt": b"changed by a job\n",
        "data/weights.bin": _BUNDLE["data/weights.bin"],
        "new.txt": b"written by a job\n",
    }
    assert not cache.exists() or list(cache.iterdir()) == []


def test_a_bundle_of_a_few_small_files_is_unpacked_not_shared(
    jobs: JobStage, tmp_path: Path
) -> None:
    """Writing a few files costs less than a mount namespace, made and torn down."""
    small = {name: data for name, data in _BUNDLE.items() if name != "data/weights.bin"}
    cache = tmp_path / "bundles"
    seen = _run(jobs, "job-small", _zip(small), {"KINETIC_BUNDLE_CACHE": str(cache)})

    assert seen["keep"] == "as shipped\n"
    assert _files(tmp_path / "jobs" / "job-small" / "work")["new.txt"] == b"written by a job\n"
    assert not cache.exists()


def test_a_bundle_reaching_out_of_its_tree_is_refused_before_anything_is_written(
    jobs: JobStage, tmp_path: Path
) -> None:
    cache = tmp_path / "bundles"
    bundle = _zip({**_BUNDLE, "../../escaped.py": b"evil\n"})
    jobs.workdir = tmp_path / "jobs" / "job-escape" / "work"
    staged = jobs.stage("job-escape", pickled_call(divmod, 7, 2), bundle=bundle)
    run = jobs.run(staged, env={"KINETIC_BUNDLE_CACHE": str(cache)})

    assert run.exit_code == EXIT_INFRA_ERROR, run.output
    assert isinstance(run.envelope, Failed) and run.envelope.phase == "unpack"
    assert "escapes the job directory" in run.envelope.message
    written = [p for root in (tmp_path / "jobs", cache) for p in root.rglob("*") if p.is_file()]
    assert written == [] and list(cache.iterdir()) == []
    assert not (tmp_path / "escaped.py").exists()


def test_a_bundle_changed_in_the_store_is_refused_before_its_tree_is_made(
    jobs: JobStage, tmp_path: Path
) -> None:
    cache = tmp_path / "bundles"
    bundle = _zip(_BUNDLE)
    jobs.workdir = tmp_path / "jobs" / "job-changed" / "work"
    staged = jobs.stage("job-changed", pickled_call(divmod, 7, 2), bundle=bundle)
    jobs.store.write(layout.bundle_key(hashlib.sha256(bundle).hexdigest()), _zip({"x.py": b""}))
    run = jobs.run(staged, env={"KINETIC_BUNDLE_CACHE": str(cache)})

    assert run.exit_code == EXIT_INFRA_ERROR, run.output
    assert isinstance(run.envelope, Failed) and run.envelope.phase == "verify"
    assert list(cache.iterdir()) == []


def test_an_ordinary_user_gets_the_overlay_in_a_user_namespace(shared_dir: Path) -> None:
    """Not root: the overlay is made in a user namespace of the job's own, volumes mount in
    the same one afterwards, and the owner can remove the job's directory afterwards (the
    kernel makes the overlay's scratch directories mode 000)."""
    bundle, cache = _zip(_BUNDLE), shared_dir / "bundles"
    workdir = shared_dir / "job" / "work"
    dataset = shared_dir / "dataset"
    dataset.mkdir()
    (dataset / "train.csv").write_text("x,y\n")
    volume = f"/kinetic-test-{uuid.uuid4().hex[:8]}/data"

    def body() -> dict[str, Any]:
        os.environ["KINETIC_BUNDLE_CACHE"] = str(cache)
        place_bundle(lambda: bundle, hashlib.sha256(bundle).hexdigest(), len(bundle), workdir)
        (shared_dir / "job" / "shadows").mkdir()
        enter([Bind(dataset, volume, read_only=True)], shared_dir / "job" / "shadows")
        code = (workdir / "pkg/mod.py").read_text()
        (workdir / "new.txt").write_text("mine")
        shutil.rmtree(workdir / "pkg")  # a directory of the tree made again: opaque above it
        (workdir / "pkg").mkdir()
        (workdir / "pkg" / "own.py").write_text("")
        listed = sorted(p.name for p in (workdir / "pkg").iterdir())
        data = Path(volume, "train.csv").read_text()
        mounts = Path("/proc/self/mounts").read_text().splitlines()
        [mount] = [line for line in mounts if f" {workdir} " in line]
        # An unmount that synced the upper file system would wait for all its dirty data.
        volatile = "volatile" in mount.split()[3]
        return {"code": code, "pkg": listed, "data": data, "volatile": volatile}

    seen = in_child(body, as_nobody=True)
    expected = {"code": "VALUE = 1\n", "pkg": ["own.py"], "data": "x,y\n", "volatile": True}
    assert seen == expected
    assert not Path(volume).parent.exists()
    assert (overlay_dir(workdir) / "upper" / "new.txt").read_text() == "mine"
    assert not (tree_of(cache, hashlib.sha256(bundle).hexdigest()) / "new.txt").exists()

    def remove_the_job() -> dict[str, Any]:
        shutil.rmtree(shared_dir / "job")
        return {"left": os.path.exists(shared_dir / "job")}

    assert in_child(remove_the_job, as_nobody=True) == {"left": False}


def _tree_used(cache: Path, members: dict[str, bytes], days_ago: float) -> Path:
    """A tree of ``members`` made by a process now gone, last used ``days_ago``."""
    data = _zip(members)
    digest = hashlib.sha256(data).hexdigest()
    assert in_child(
        lambda: {"tree": str(use_tree(cache, digest, lambda: data))}, as_nobody=False
    ) == {"tree": str(tree_of(cache, digest))}
    used = time.time() - days_ago * _DAY
    tree = tree_of(cache, digest)
    os.utime(tree.with_name(f"{tree.name}.lock"), (used, used))
    return tree


def test_only_a_tree_unused_for_days_that_no_job_holds_is_deleted(tmp_path: Path) -> None:
    cache = tmp_path / "bundles"
    old = _tree_used(cache, {"a.py": b"a"}, UNUSED_DAYS + 1)
    recent = _tree_used(cache, {"b.py": b"b"}, UNUSED_DAYS - 1)
    held = _tree_used(cache, {"c.py": b"c"}, UNUSED_DAYS + 1)
    holder = os.open(held.with_name(f"{held.name}.lock"), os.O_RDONLY)  # a job still running
    try:
        fcntl.flock(holder, fcntl.LOCK_SH)
        prune(cache)
    finally:
        os.close(holder)

    assert not old.exists()
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [recent.name, f"{recent.name}.lock", held.name, f"{held.name}.lock"]
    )


def test_past_the_trees_used_last_the_older_unused_ones_are_deleted(tmp_path: Path) -> None:
    """A project edited all day makes a tree per version: only the last :data:`KEEP_TREES`
    stay, and any older one a job still holds."""
    cache = tmp_path / "bundles"
    cache.mkdir()
    made = []
    for version in range(KEEP_TREES + 3):  # used an hour apart, the last one now
        data = _zip({"mod.py": f"VERSION = {version}\n".encode()})
        digest = hashlib.sha256(data).hexdigest()
        bundle_trees._make_tree(cache, digest, data)
        used = time.time() - (KEEP_TREES + 3 - version) * 3600
        (cache / f"{digest}.lock").touch()
        os.utime(cache / f"{digest}.lock", (used, used))
        made.append(digest)
    holder = os.open(cache / f"{made[0]}.lock", os.O_RDONLY)  # the oldest: a job still runs it
    try:
        fcntl.flock(holder, fcntl.LOCK_SH)
        prune(cache)
    finally:
        os.close(holder)

    kept = sorted(p.name for p in cache.iterdir() if p.is_dir())
    assert kept == sorted([made[0], *made[-KEEP_TREES:]])


def test_what_a_killed_process_left_half_made_is_deleted_once_stale(tmp_path: Path) -> None:
    cache = tmp_path / "bundles"
    cache.mkdir()
    stale, fresh = cache / ".staging-aaa-1-x", cache / ".deleting-bbb-2"
    for leftover in (stale, fresh):
        (leftover / "pkg").mkdir(parents=True)
        (leftover / "pkg" / "mod.py").write_text("x")
    hours_ago = time.time() - 2 * 3600
    os.utime(stale, (hours_ago, hours_ago))
    prune(cache)
    assert [p.name for p in cache.iterdir()] == [fresh.name]


def test_a_tree_made_before_this_boot_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its files were never synced: a crash may have left them short of what was written."""
    cache, data = tmp_path / "bundles", _zip(_BUNDLE)
    digest = hashlib.sha256(data).hexdigest()
    fetched = []

    def fetch() -> bytes:
        fetched.append(digest)
        return data

    monkeypatch.setattr(bundle_trees, "_boot_id", lambda: "before-the-crash")
    before = use_tree(cache, digest, fetch)
    (before / "pkg" / "mod.py").write_bytes(b"")  # what a crash can leave
    monkeypatch.setattr(bundle_trees, "_boot_id", lambda: "after-it")
    after = use_tree(cache, digest, fetch)
    assert after != before and _files(after) == _BUNDLE
    assert fetched == [digest, digest]


def test_a_job_that_loses_the_race_to_make_a_tree_uses_the_winners(tmp_path: Path) -> None:
    cache = tmp_path / "bundles"
    cache.mkdir()
    data = _zip(_BUNDLE)
    digest = hashlib.sha256(data).hexdigest()
    bundle_trees._make_tree(cache, digest, data)
    made = (cache / digest / "pkg" / "mod.py").stat().st_ino
    bundle_trees._make_tree(cache, digest, data)  # its rename finds the tree there
    assert (cache / digest / "pkg" / "mod.py").stat().st_ino == made
    assert [p.name for p in cache.iterdir()] == [digest]


@pytest.mark.parametrize(
    ("root", "volumes", "debug", "overlaid"),
    [
        (True, False, False, True),
        (False, True, False, True),  # in a user namespace for its volumes anyway
        (False, False, False, False),  # a user namespace would change what the job sees
        (True, False, True, False),  # a debugger opens the job's files by their path
    ],
    ids=["root", "user-with-volumes", "user", "debug"],
)
def test_whose_code_is_overlaid(
    monkeypatch: pytest.MonkeyPatch, root: bool, volumes: bool, debug: bool, overlaid: bool
) -> None:
    monkeypatch.setattr(job.os, "geteuid", lambda: 0 if root else 1000)
    call = CallDescriptor(
        job_id="job-1",
        func_name="f",
        payload=ArtifactRef(key="payload", sha256="0" * 64, size=1),
        volumes=[Volume(path="/data", data=0)] if volumes else [],
        debug=DebugOptions() if debug else None,
    )
    assert job._overlay_changes_nothing_else(call) is overlaid
