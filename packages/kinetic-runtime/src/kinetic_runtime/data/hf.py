"""``hf://`` data: load a Hugging Face dataset with ``datasets`` and save it as a directory.

The job receives the path of a ``save_to_disk`` directory (``datasets.load_from_disk`` reads
it back). ``datasets`` is imported here, only when a call uses ``hf://``: it is the
``kinetic-runtime[hf]`` extra, and Kinetic's bundled images add it when a call needs it.

``KINETIC_HF_MIRROR`` names a directory of dataset repositories (``<mirror>/<repo>``, e.g.
``<mirror>/owner/name`` holding the repository's files) to load from instead of the hub:
for clusters without internet access, and for tests, which build a small dataset with the real
``datasets`` library and load it through exactly this code.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kinetic_protocol.data import DataSpec, parse_hf_uri
from kinetic_protocol.errors import DataUnavailableError
from kinetic_runtime import settings

__all__ = ["load_hf_dataset"]


def _source(repo: str) -> tuple[str, bool]:
    """What ``load_dataset`` is given for ``repo``, and whether that is a local mirror."""
    mirror = settings.HF_MIRROR.from_env()
    if mirror is None:
        return repo, False
    local = Path(mirror, repo)
    if not local.is_dir():
        raise DataUnavailableError(
            f"hf://{repo}: {settings.HF_MIRROR.env} is {mirror}, which has no {repo}/ "
            "directory. Put the dataset repository's files there, or unset the variable to "
            "load from the hub."
        )
    return str(local), True


def load_hf_dataset(spec: DataSpec, destination: Path, say: Callable[[str], None]) -> None:
    """Load ``spec`` (an ``hf://`` URI) and save it to ``destination``, a new directory."""
    wanted = parse_hf_uri(spec.uri)
    source, mirrored = _source(wanted.repo)
    try:
        import datasets
    except ImportError as exc:
        raise DataUnavailableError(
            f"{spec.uri} needs the datasets library in the job's environment: install "
            "'kinetic-runtime[hf]' in the image (bundled images add it when a call uses hf://)."
        ) from exc
    options: dict[str, Any] = {}
    if wanted.config_name:
        options["name"] = wanted.config_name
    if wanted.split:
        options["split"] = wanted.split
    if wanted.revision and not mirrored:
        options["revision"] = wanted.revision
    if spec.hf_trust_remote_code:
        say(
            f"WARNING: {spec.uri} is loaded with hf_trust_remote_code=True: Python code from "
            "the dataset's repository runs in this job, with its credentials. Use it only for "
            "repositories you trust."
        )
        options["trust_remote_code"] = True
    datasets.disable_progress_bars()  # one line per step in the job's log, not a redrawn bar
    try:
        loaded = datasets.load_dataset(source, **options)
    except Exception as exc:
        raise DataUnavailableError(f"{spec.uri} did not load: {type(exc).__name__}: {exc}") from exc
    loaded.save_to_disk(str(destination))
