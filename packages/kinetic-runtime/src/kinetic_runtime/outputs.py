"""Write a job's outputs to ``KINETIC_OUTPUT_DIR``, whether it is a directory or ``gs://``.

Inside a job::

    from kinetic_runtime.outputs import outputs

    with outputs("checkpoints") as out:        # a local pathlib.Path
        model.save(out / "model.keras")
    # on exit, everything under `out` is in $KINETIC_OUTPUT_DIR/checkpoints/

Where the output directory is local (the local backend, or ``output_dir=`` a path), ``out`` is
that directory itself and nothing is copied. Where it is ``gs://``, ``out`` is a fresh local
directory uploaded in parallel when the block ends, also when it ends with an exception, so
a checkpoint written before a crash is kept. Files are written, never deleted: what is
already in the output directory stays.
"""

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from kinetic_protocol.data import parse_gcs_uri
from kinetic_protocol.errors import ConfigError
from kinetic_runtime import settings

__all__ = ["output_dir", "outputs", "upload_directory"]


def output_dir() -> str:
    """``KINETIC_OUTPUT_DIR``: where this job's outputs go; an error outside a job."""
    value = settings.OUTPUT_DIR.from_env()
    if not value:
        raise ConfigError(
            f"{settings.OUTPUT_DIR.env} is not set: outputs() writes a Kinetic job's outputs, "
            "and works inside a job (set the variable to use it elsewhere)."
        )
    return value.rstrip("/")


def _checked(subdir: str) -> str:
    parts = PurePosixPath(subdir).parts
    if subdir.startswith("/") or ".." in parts:
        raise ConfigError(
            f"outputs({subdir!r}): give a relative directory inside the output directory, "
            "without '..'."
        )
    return "/".join(parts)


def upload_directory(local: Path, destination: str) -> int:
    """Upload every file under ``local`` to the ``gs://`` prefix ``destination``, in
    parallel; return how many files went."""
    from kinetic_runtime.data.transfer import upload_files
    from kinetic_runtime.stores.gcs import make_client

    location = parse_gcs_uri(destination.rstrip("/") + "/")
    files = [
        (path, location.name + path.relative_to(local).as_posix())
        for path in sorted(local.rglob("*"))
        if path.is_file()
    ]
    if files:
        upload_files(make_client(), location.bucket, files)
    return len(files)


@contextmanager
def outputs(subdir: str = "") -> Iterator[Path]:
    """A local directory whose files end up in ``KINETIC_OUTPUT_DIR/<subdir>``."""
    relative = _checked(subdir)
    root = output_dir()
    if "://" not in root:
        directory = Path(root, relative)
        directory.mkdir(parents=True, exist_ok=True)
        yield directory
        return
    destination = f"{root}/{relative}" if relative else root
    staging = Path(tempfile.mkdtemp(prefix="kinetic-outputs-"))
    try:
        try:
            yield staging
        except BaseException as error:
            try:
                upload_directory(staging, destination)
            except Exception as upload_error:
                error.add_note(
                    f"Kinetic could not upload the outputs written so far: {upload_error}"
                )
            raise
        upload_directory(staging, destination)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
