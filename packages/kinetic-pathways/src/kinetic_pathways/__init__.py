"""Kinetic's Pathways backend: each multi-host TPU job is a LeaderWorkerSet."""

from kinetic_protocol import Backend, BackendSettings, ConfigError

__all__ = ["create_backend"]


def create_backend(settings: BackendSettings) -> Backend:
    """Entry point of the ``pathways`` backend."""
    raise ConfigError(
        "The 'pathways' backend is not implemented in this version of kinetic-pathways. "
        "Use backend='local' to run on this machine."
    )
