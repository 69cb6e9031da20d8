"""``nodes=`` and ``slices=``: a job larger than one host of its accelerator, checked once.

A job runs on ``nodes * slices * hosts-per-slice`` hosts, one runtime per host. ``nodes``
multiplies a GPU or CPU host (``gpu-h100-x8`` with ``nodes=4``: four hosts of eight GPUs);
``slices`` multiplies a TPU slice, whose own hosts come from its shape (``tpu-v5e-16`` with
``slices=2``: two slices of four hosts, joined by the data-centre network). So at most one
of the two exceeds 1: a TPU shape's hosts are its slice's (more of them are more slices),
and slices of GPUs or CPUs do not exist.

``nodes`` with ``cpu`` is allowed: CPU-only distributed work (gloo collectives, JAX's CPU
backend) is real, and it is how a multi-node GPU program is tried on a laptop first.
"""

from typing import TYPE_CHECKING

from kinetic_protocol.errors import ConfigError

if TYPE_CHECKING:
    from kinetic_protocol.accelerators import Accelerator
    from kinetic_protocol.backend import HostSelection
    from kinetic_protocol.records import JobRecord

__all__ = [
    "COORDINATOR_PORT",
    "check_host_groups",
    "job_hosts",
    "record_hosts",
    "selected_hosts",
    "shape_label",
]


COORDINATOR_PORT = 8476
"""Where host 0 serves JAX's coordinator when a backend names only its host (JAX's own default
for TPU pods): a JobSet's pods and a LeaderWorkerSet leader's address use it."""


def _check_count(name: str, value: object, meaning: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{name} must be a positive int ({meaning}), got {type(value).__name__} {value!r}."
        )
    if value < 1:
        raise ConfigError(f"{name}={value!r} must be 1 or more: {meaning} (default 1).")
    return value


def check_host_groups(accelerator: "Accelerator", nodes: object, slices: object) -> None:
    """Refuse a ``nodes``/``slices`` combination that cannot run, naming the rule broken.

    A wrong type is a TypeError, a wrong value a :class:`ConfigError`, as for every option.
    """
    nodes = _check_count("nodes", nodes, "how many hosts of the accelerator run the function")
    slices = _check_count("slices", slices, "how many TPU slices run the function")
    name = accelerator.name
    if slices > 1 and accelerator.category != "tpu":
        kind = "a GPU" if accelerator.category == "gpu" else "CPU"
        raise ConfigError(
            f"slices={slices} needs a TPU accelerator, and {name!r} is {kind}: slices are TPU "
            f"slices joined by the data-centre network (multislice). For {slices} hosts of "
            f"{name!r}, pass nodes={slices} instead."
        )
    if nodes > 1 and accelerator.category == "tpu":
        hosts = f"{accelerator.hosts} hosts" if accelerator.multi_host else "one host"
        raise ConfigError(
            f"nodes={nodes} does not apply to the TPU accelerator {name!r}: a TPU slice's "
            f"hosts come from its shape ({name!r} is {hosts}). For {nodes} of these slices, "
            f"pass slices={nodes}; for one larger slice, choose a larger shape "
            "(`kinetic accelerators` lists them)."
        )


def job_hosts(accelerator: "Accelerator", nodes: int = 1, slices: int = 1) -> int:
    """How many hosts (runtimes) the job runs on."""
    return nodes * slices * accelerator.hosts


def record_hosts(record: "JobRecord") -> int:
    """How many hosts the job of ``record`` runs on: its accelerator's, times its nodes and
    slices (a record from before ``nodes``/``slices`` reads 1 for each)."""
    from kinetic_protocol.accelerators import parse_accelerator

    return job_hosts(parse_accelerator(record.accelerator), record.nodes, record.slices)


def selected_hosts(
    job_id: str, count: int, host: "HostSelection", *, default: int = 0
) -> list[int]:
    """The hosts whose output ``host`` selects of a job on ``count`` hosts: every one for
    ``"all"``, ``default`` (the leader, or the host whose failure ended the job) for None;
    an index out of range is a :class:`ConfigError` naming the range, on every backend."""
    if host == "all":
        return list(range(count))
    if host is None:
        return [default]
    if isinstance(host, int) and not isinstance(host, bool) and 0 <= host < count:
        return [host]
    raise ConfigError(
        f"Job {job_id} has no host {host!r}: it runs on {count} host{'s' if count != 1 else ''} "
        f"(0..{count - 1}); pass an index in that range, or 'all'."
    )


def shape_label(nodes: int, slices: int) -> str:
    """``nodes=4`` or ``slices=2`` (empty for a job of one node and one slice), for messages."""
    return ", ".join(
        f"{name}={count}" for name, count in (("nodes", nodes), ("slices", slices)) if count > 1
    )
