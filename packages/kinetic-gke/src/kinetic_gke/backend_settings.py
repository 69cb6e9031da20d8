"""What the gke backend reads from its settings, once, when it is built (never per job): what
every pod gets, its poll bounds, and how long a job may wait unschedulable."""

from kinetic_gke import settings as declared
from kinetic_gke.manifests import GroupPorts, PodOptions
from kinetic_protocol import ConfigError

__all__ = [
    "DEFAULT_UNSCHEDULABLE_TIMEOUT",
    "group_ports",
    "pod_options",
    "poll_bounds",
    "unschedulable_timeout",
]

DEFAULT_UNSCHEDULABLE_TIMEOUT = float(declared.UNSCHEDULABLE_TIMEOUT.default or 900)
"""A fresh accelerator node pool can take minutes to scale up; past this, say why and fail."""


def poll_bounds(raw: str) -> tuple[float, float]:
    try:
        low, high = (float(part) for part in raw.split(","))
    except ValueError:
        low = high = -1.0
    if not 0 < low <= high:
        raise ConfigError(
            f"{declared.POLL.env} must be 'LOW,HIGH' seconds with 0 < LOW <= HIGH, got {raw!r}."
        )
    return low, high


def unschedulable_timeout(given: float | None, environ: dict[str, str]) -> float:
    if given is not None:
        return given
    return declared.UNSCHEDULABLE_TIMEOUT.number(environ) or DEFAULT_UNSCHEDULABLE_TIMEOUT


def pod_options(environ: dict[str, str]) -> PodOptions:
    return PodOptions(
        service_account=declared.SERVICE_ACCOUNT.from_env(environ),
        run_as_root=declared.RUN_AS_ROOT.flag(environ),
        cpu=declared.POD_CPU.from_env(environ),
        memory=declared.POD_MEMORY.from_env(environ),
        group_ports=group_ports(environ),
    )


def group_ports(environ: dict[str, str]) -> GroupPorts | None:
    raw = declared.HOST_GROUP_PORTS.from_env(environ)
    if raw is None:
        return None
    try:
        ports = [int(part) for part in raw.split(",")]
    except ValueError:
        ports = []
    if len(ports) != 3 or len(set(ports)) != 3 or not all(0 < port < 65536 for port in ports):
        raise ConfigError(
            f"{declared.HOST_GROUP_PORTS.env} must be three different ports (1..65535) as "
            f"COORDINATOR,TORCH,MEGASCALE, got {raw!r}; unset it for 8476,29500,8080."
        )
    return GroupPorts(*ports)
