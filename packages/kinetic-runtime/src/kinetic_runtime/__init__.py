"""The Kinetic job entrypoint: ``python -m kinetic_runtime --store URI --job ID``.

It is what a container image or a local job process runs. It imports only the standard
library, ``kinetic_protocol``, ``cloudpickle`` and, for ``gs://`` stores, the GCS client.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kinetic-runtime")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
