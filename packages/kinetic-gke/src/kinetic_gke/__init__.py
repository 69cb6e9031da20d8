"""Kinetic's GKE backend: each job is a Kubernetes Job. Placeholder until the GKE issue lands."""

from kinetic_protocol import Backend, BackendSettings, ConfigError

__all__ = ["create_backend"]


def create_backend(settings: BackendSettings) -> Backend:
    """Entry point of the ``gke`` backend."""
    raise ConfigError(
        "The 'gke' backend is not implemented in this version of kinetic-gke. "
        "Use backend='local' to run on this machine."
    )
