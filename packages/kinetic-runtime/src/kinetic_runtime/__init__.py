"""The Kinetic job entrypoint: ``python -m kinetic_runtime --store URI --job ID``.

It is what a container image or a local job process runs. It imports only the standard
library, ``kinetic_protocol``, ``cloudpickle`` and, for ``gs://`` stores, the GCS client.
"""

from typing import Any

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    # importlib.metadata costs ~50 ms at start-up, a third of a job's overhead: load on demand.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("kinetic-runtime")
        except PackageNotFoundError:  # a source tree that is not installed
            return "0.0.0"
    raise AttributeError(f"module 'kinetic_runtime' has no attribute {name!r}")
