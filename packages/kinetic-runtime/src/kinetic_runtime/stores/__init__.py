"""Object stores, chosen by URI: ``file://`` (a local directory) and ``gs://`` (a GCS bucket).

The stores live in the runtime because the runtime, inside a pod or a local process, is the
first thing that must read the job; the client imports them from here. Importing this package
never imports ``google.cloud``: that happens when a ``gs://`` store is first used. Nor does it
load the ``gs://`` store's own module (HTTP and thread-pool machinery) before a ``gs://`` URI
is opened or ``GCSStore`` is named: a local job's start pays for neither.
"""

import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

from kinetic_protocol.errors import ConfigError
from kinetic_protocol.store import ObjectStore
from kinetic_runtime.stores.local import LocalStore

if TYPE_CHECKING:
    from kinetic_runtime.stores.gcs import GCSStore

__all__ = [
    "GCSStore",
    "LocalStore",
    "default_local_store_uri",
    "load_client_library",
    "open_store",
]

_ACCEPTED = "gs://BUCKET[/PREFIX] (e.g. gs://my-bucket), file:///ABSOLUTE/PATH or /ABSOLUTE/PATH"


def open_store(uri: str) -> ObjectStore:
    """Return the store that ``uri`` names; ``ConfigError`` if it names none."""
    if not isinstance(uri, str) or not uri:
        raise ConfigError(f"Invalid store URI {uri!r}: expected {_ACCEPTED}.")
    if uri.startswith("/"):
        return LocalStore(uri)
    parts = urlsplit(uri)
    if parts.query or parts.fragment:
        raise ConfigError(
            f"Invalid store URI {uri!r}: '?' and '#' parts are not supported; expected {_ACCEPTED}."
        )
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ConfigError(
                f"Invalid store URI {uri!r}: a file URI needs an absolute path and three "
                f"slashes, e.g. file:///home/me/.kinetic/store; expected {_ACCEPTED}."
            )
        return LocalStore(unquote(parts.path))
    if parts.scheme == "gs":
        if not parts.netloc:
            raise ConfigError(f"Invalid store URI {uri!r}: no bucket name; expected {_ACCEPTED}.")
        from kinetic_runtime.stores.gcs import GCSStore

        try:
            return GCSStore(parts.netloc, unquote(parts.path))
        except ConfigError as exc:
            raise ConfigError(f"Invalid store URI {uri!r}: {exc} Expected {_ACCEPTED}.") from None
    raise ConfigError(f"Unsupported store URI {uri!r}: expected {_ACCEPTED}.")


def __getattr__(name: str) -> Any:
    if name == "GCSStore":
        from kinetic_runtime.stores.gcs import GCSStore

        return GCSStore
    raise AttributeError(f"module 'kinetic_runtime.stores' has no attribute {name!r}")


def default_local_store_uri() -> str:
    """``file://$KINETIC_HOME/store``, with ``KINETIC_HOME`` defaulting to ``~/.kinetic``."""
    from kinetic_runtime.settings import kinetic_home

    return (kinetic_home() / "store").as_uri()


def load_client_library(store: ObjectStore) -> None:
    """Import the library ``store`` makes its client from, without making the client (see
    :func:`kinetic_runtime.stores.gcs.load_library`); nothing for a ``file://`` store."""
    gcs = sys.modules.get("kinetic_runtime.stores.gcs")  # loaded once a gs:// URI is opened
    if gcs is not None and isinstance(store, gcs.GCSStore):
        gcs.load_library()
