"""Find backends through the ``kinetic.backends`` entry-point group and build them once."""

import functools
from typing import TYPE_CHECKING, cast

import msgspec

from kinetic_protocol import (
    ENTRY_POINT_GROUP,
    ArrayBackend,
    Backend,
    BackendSettings,
    ConfigError,
)
from kinetic_protocol.settings import resolve_declared

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = [
    "array_backend",
    "available_backends",
    "get_backend",
    "load_factory",
]

_INSTALL_HINTS = {"gke": "kinetic-gke", "pathways": "kinetic-pathways"}


@functools.cache
def available_backends() -> "dict[str, EntryPoint]":
    """Every registered backend by name (read once per process, at first use)."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_factory(name: str) -> object:
    """The object the entry point ``name`` names (a backend class or factory)."""
    found = available_backends()
    if name not in found:
        hint = (
            f" It needs the {_INSTALL_HINTS[name]} package: pip install {_INSTALL_HINTS[name]}."
            if name in _INSTALL_HINTS
            else ""
        )
        raise ConfigError(
            f"Unknown backend {name!r}. Available: {', '.join(sorted(found)) or 'none'}.{hint}"
        )
    try:
        return found[name].load()
    except Exception as exc:
        raise ConfigError(
            f"Backend {name!r} is registered by {found[name].value} but failed to load: "
            f"{exc!r}. Reinstall the package that provides it."
        ) from exc


def get_backend(name: str, settings: BackendSettings) -> Backend:
    """The backend ``name`` built for ``settings`` and its declared settings as they are now
    (``BackendSettings.declared``); built once a session for equal settings, then reused, so
    a changed ``KINETIC_*`` variable of the backend's builds a fresh one."""
    from kinetic import session

    factory = load_factory(name)
    if not callable(factory):
        raise ConfigError(f"Backend entry point {name!r} is not callable: {factory!r}")
    specs = getattr(factory, "declared_settings", ())
    settings = msgspec.structs.replace(settings, declared=resolve_declared(specs))

    def build() -> Backend:
        backend: Backend = factory(settings)
        return backend

    return session.current().backend(name, settings, build)


def array_backend(
    backend: Backend, inputs: int, *, fail_fast: bool, cancel_running_on_fail: bool
) -> ArrayBackend | None:
    """``backend`` as one that holds a batch of ``inputs`` in array objects, if it can
    (``Capabilities.array_batches``: more inputs than one holds are split into several);
    None: one job per input. Fail-fast that lets running children finish cannot be asked of
    an array object, nor fail-fast across several (one's failure cannot stop another's)."""
    limit = backend.capabilities.array_batches
    if inputs <= 0 or limit <= 0:
        return None
    if fail_fast and (not cancel_running_on_fail or inputs > limit):
        return None
    return cast(ArrayBackend, backend)
