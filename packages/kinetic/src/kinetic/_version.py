"""The installed client's version, from its distribution's metadata: reading it imports nothing
of ``kinetic`` (a job's record carries it, and so does ``kinetic.__version__``)."""

from importlib.metadata import PackageNotFoundError, version

__all__ = ["kinetic_version"]


def kinetic_version() -> str:
    try:
        return version("kinetic")
    except PackageNotFoundError:  # a source tree that is not installed
        return "0.0.0"
