"""The installed client's version, from its distribution's metadata: reading it imports nothing
of ``kinetic`` (a job's record carries it, and so does ``kinetic.__version__``)."""

import functools
from importlib.metadata import PackageNotFoundError, version

__all__ = ["kinetic_version"]


@functools.cache
def kinetic_version() -> str:
    """Read once per process: the code running is the version first read, even if another is
    installed meanwhile, and every submission asks (a metadata read costs about 0.6 ms)."""
    try:
        return version("kinetic")
    except PackageNotFoundError:  # a source tree that is not installed
        return "0.0.0"
