"""Kinetic's Pathways backend: each multi-host TPU job is a LeaderWorkerSet."""

from kinetic_protocol import BackendSettings, Capabilities, ConfigError

__all__ = ["PathwaysBackend"]


class PathwaysBackend:
    """Registered so the name is known; refuses to be built until it is implemented."""

    name = "pathways"
    capabilities = Capabilities(
        container_image=True, multi_host=True, single_host=False, per_host_logs=True
    )
    declared_settings = ()

    def __init__(self, settings: BackendSettings) -> None:
        raise ConfigError(
            "The 'pathways' backend is not implemented in this version of kinetic-pathways. "
            "Use backend='local' to run on this machine."
        )
