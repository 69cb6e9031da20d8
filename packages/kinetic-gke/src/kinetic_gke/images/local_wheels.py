"""Wheels of an unpublished ``kinetic-runtime``, built from its installed source, for an image.

An image installs ``kinetic-runtime==<version>`` from the package index. A Kinetic that is not
a published release (a source checkout, an editable install, a ``.dev`` or local version)
would fail that install, or get another build of the same number. For those, the build
context carries a wheel of each unpublished Kinetic distribution the runtime needs
(``kinetic-runtime`` and ``kinetic-protocol``), made here from the installed files, and the
Dockerfile installs those files instead. The wheels are byte-identical for identical source
(sorted entries, fixed timestamps, no ``__pycache__``), so the image's content hash changes
when, and only when, that source does.

Published or not is decided from what is installed, never by asking an index: a distribution
installed from a local directory or file (PEP 610 ``direct_url.json`` with a ``file:`` URL),
or whose version has a dev or local segment, is unpublished.
"""

import base64
import hashlib
import importlib.util
import io
import json
import re
import zipfile
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

__all__ = ["RUNTIME_DISTRIBUTIONS", "is_published", "local_runtime_wheels", "wheel_from_installed"]

RUNTIME_DISTRIBUTIONS = ("kinetic-runtime", "kinetic-protocol")
"""What an image's runtime install needs from Kinetic itself (the runtime and its protocol)."""
_UNRELEASED_VERSION = re.compile(r"(\.dev\d*|\+)")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_SKIPPED_PARTS = {"__pycache__"}
_SKIPPED_SUFFIXES = {".pyc", ".pyo"}


def is_published(dist: Distribution) -> bool:
    """Whether ``dist`` is a release an index can serve: not from a local source, not a dev or
    local version."""
    if _UNRELEASED_VERSION.search(dist.version):
        return False
    text = dist.read_text("direct_url.json")
    if text:
        try:
            url = str(json.loads(text).get("url", ""))
        except ValueError:
            return False
        return not url.startswith("file:")
    return True


def local_runtime_wheels() -> dict[str, bytes]:
    """``{wheel file name: bytes}`` for each unpublished, installed distribution of
    :data:`RUNTIME_DISTRIBUTIONS`; empty when all are published releases (or not installed
    here: the client may run without ``kinetic-runtime``, and the image then pins the index)."""
    wheels: dict[str, bytes] = {}
    for name in RUNTIME_DISTRIBUTIONS:
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            continue
        if not is_published(dist):
            filename, data = wheel_from_installed(dist)
            wheels[filename] = data
    return wheels


def wheel_from_installed(dist: Distribution) -> tuple[str, bytes]:
    """A pure-Python wheel of ``dist``'s import package, as installed (editable or not).

    Kinetic's distributions each hold one import package named like the distribution
    (``kinetic-runtime`` -> ``kinetic_runtime``); its installed METADATA (dependencies and
    extras included) goes into the wheel as is.
    """
    module = dist.metadata["Name"].replace("-", "_").lower()
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            f"{dist.metadata['Name']} is installed, but package {module} is not found"
        )
    package_dir = Path(next(iter(spec.submodule_search_locations)))
    stem = f"{module}-{dist.version}"
    entries: dict[str, bytes] = {}
    for path in sorted(package_dir.rglob("*")):
        relative = path.relative_to(package_dir)
        if (
            path.is_file()
            and not (_SKIPPED_PARTS & set(relative.parts))
            and (path.suffix not in _SKIPPED_SUFFIXES)
        ):
            entries[f"{module}/{relative.as_posix()}"] = path.read_bytes()
    info = f"{stem}.dist-info"
    entries[f"{info}/METADATA"] = (dist.read_text("METADATA") or "").encode("utf-8")
    entries[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: kinetic (from installed source)\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in entries.items()]
    entries[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            member = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            member.external_attr = 0o644 << 16
            member.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(member, data)
    return f"{stem}-py3-none-any.whl", raw.getvalue()


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
