"""Prepare the process for the call: unpack the bundle, set env, sys.path and cwd."""

import contextlib
import importlib
import io
import os
import stat
import sys
import zipfile
from pathlib import Path

from kinetic_protocol import CallDescriptor, ConfigError

__all__ = [
    "JOB_DEFAULTS",
    "apply_environment",
    "install_requirements",
    "missing_env",
    "unpack_bundle",
]

JOB_DEFAULTS: dict[str, str] = {"KERAS_BACKEND": "jax"}
"""Variables every job gets when its environment lacks them, on every backend and image: Keras
would otherwise fall back to TensorFlow, which no Kinetic image installs. A value the job was
given (captured, or set by a custom image) wins. This is the only place the default is set."""


_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
_COPY_CHUNK = 1 << 20


def unpack_bundle(data: bytes, dest: Path) -> None:
    """Extract a code bundle into ``dest``.

    The store is not trusted: a member whose path would land outside ``dest`` (``../x``, an
    absolute path, a path through a link out of ``dest``) refuses the whole bundle before
    anything is written. Every name is checked once and each directory made once, then each
    member's bytes are written straight to its file: ``ZipFile.extract`` resolved every path
    again and made its directories one member at a time, most of a job's start for a bundle
    of a few hundred files (and the file system calls are what a busy machine makes slow).
    """
    dest.mkdir(parents=True, exist_ok=True)
    root = str(dest.resolve())
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        files, directories = _placed_members(archive.infolist(), root)
        for directory in sorted(directories):  # a parent sorts before its children
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory)
        for member, target in files:
            fd = os.open(target, _WRITE_FLAGS, 0o666)
            try:
                with archive.open(member) as source:
                    while chunk := source.read(_COPY_CHUNK):
                        _write_all(fd, chunk)
            finally:
                os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _placed_members(
    members: list[zipfile.ZipInfo], root: str
) -> tuple[list[tuple[zipfile.ZipInfo, str]], set[str]]:
    """Where each file member goes, and every directory under ``root`` (a resolved path) the
    members need, ancestors included; a ``ConfigError`` for a member that would land outside
    ``root``."""
    inside = root.rstrip(os.sep) + os.sep
    files: list[tuple[zipfile.ZipInfo, str]] = []
    directories: set[str] = set()
    for member in members:
        target = os.path.normpath(os.path.join(root, member.filename))
        if member.filename.endswith("/") and (target == root or target.startswith(inside)):
            directory = target
        elif target.startswith(inside):
            files.append((member, target))
            directory = os.path.dirname(target)
        else:
            raise ConfigError(f"bundle member {member.filename!r} escapes the job directory")
        while directory != root and directory not in directories:
            directories.add(directory)
            directory = os.path.dirname(directory)
    # A link already in ``root`` could lead a path out of it. Parents sort before their
    # children, so a directory that exists and is no link is inside once its parent is; a
    # link is resolved. No file is opened through a link either (``O_NOFOLLOW``).
    for directory in sorted(directories):
        try:
            is_link = stat.S_ISLNK(os.lstat(directory).st_mode)
        except FileNotFoundError:
            continue
        resolved = os.path.realpath(directory) if is_link else directory
        if resolved != root and not resolved.startswith(inside):
            shown = os.path.relpath(directory, root)
            raise ConfigError(f"bundle directory {shown!r} escapes the job directory")
    return files, directories


def apply_environment(
    call: CallDescriptor, bundle_root: Path, output_dir: str, job_id: str
) -> None:
    """Make the process look like the caller's: Kinetic's variables, import roots and working
    directory. The captured variables are already set: the backend put them in the process's
    environment (the store holds their names, never their values).

    ``job_id`` is this job's own (a batch child's call is its batch's, shared). The
    :data:`JOB_DEFAULTS` fill what the job was not given; this runs before the call is
    unpickled, so before the function's modules (Keras among them) are imported."""
    for name, value in JOB_DEFAULTS.items():
        os.environ.setdefault(name, value)
    os.environ["KINETIC_OUTPUT_DIR"] = output_dir
    os.environ["KINETIC_JOB_ID"] = job_id
    if "://" not in output_dir:
        Path(output_dir).mkdir(parents=True, exist_ok=True)
    roots = [str((bundle_root / entry).resolve()) for entry in call.sys_path]
    sys.path[:0] = [root for root in roots if root not in sys.path]
    workdir = (bundle_root / call.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)


def missing_env(call: CallDescriptor) -> list[str]:
    """The captured variables the call names that this process was not given."""
    return [name for name in call.env_names if name not in os.environ]


def install_requirements(requirements: list[str], workdir: Path) -> None:
    """Install a prebuilt image's requirements into this interpreter with uv.

    They go through a requirements file, so pip options such as ``--index-url`` keep working.
    """
    if not requirements:
        return
    listing = workdir / ".kinetic-requirements.txt"
    listing.write_text("\n".join(requirements) + "\n")
    command = ["uv", "pip", "install", "--python", sys.executable, "-r", str(listing)]
    import subprocess  # only a job with requirements installs anything

    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise RuntimeError(f"installing {requirements} failed (exit {done.returncode}):\n{tail}")
    importlib.invalidate_caches()  # the function may import what was just installed
