"""``kinetic accelerators``: every name ``@kinetic.run(accelerator=...)`` accepts."""

from typing import TYPE_CHECKING, Any

import click

from kinetic.cli import render

if TYPE_CHECKING:
    from kinetic_protocol.accelerators import Accelerator

__all__ = ["accelerators"]


@click.command()
@click.option(
    "--category",
    type=click.Choice(["cpu", "gpu", "tpu"]),
    help="Only this kind of accelerator.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def accelerators(category: str | None, as_json: bool) -> None:
    """List every accelerator name and its shape.

    Shows category, GPUs or TPU chips, topology, hosts, chips per host and the TPU machine
    type. GPU names also take the bare type (`l4` means `gpu-l4`); TPU names also take a
    topology. v5e 2x4 comes in two forms: `tpu-v5e-8` is one 8-chip host, and
    `tpu-v5e-8-multihost` (also `tpu-v5litepod-2x4`) is two hosts of 4 chips. v3, v4 and v5p
    sizes count TensorCores (two per chip), as Cloud TPU names do.
    """
    from kinetic_protocol.accelerators import parse_accelerator, valid_accelerator_names

    catalogue = [parse_accelerator(name) for name in valid_accelerator_names()]
    if category:
        catalogue = [acc for acc in catalogue if acc.category == category]
    if as_json:
        render.emit_json([_document(acc) for acc in catalogue])
        return
    rows = [
        [
            acc.name,
            acc.category,
            str(acc.count) if acc.count else "",
            acc.topology,
            str(acc.hosts),
            str(acc.chips_per_host) if acc.chips_per_host else "",
            acc.machine_type,
            acc.k8s_accelerator,
        ]
        for acc in catalogue
    ]
    render.table(
        [
            "NAME",
            "CATEGORY",
            "GPUS/CHIPS",
            "TOPOLOGY",
            "HOSTS",
            "CHIPS/HOST",
            "MACHINE TYPE",
            "GKE ACCELERATOR",
        ],
        rows,
        empty="No accelerators match.",
    )


def _document(acc: "Accelerator") -> dict[str, Any]:
    return {
        "name": acc.name,
        "category": acc.category,
        "type": acc.type,
        "count": acc.count,
        "topology": acc.topology,
        "hosts": acc.hosts,
        "chips_per_host": acc.chips_per_host,
        "multi_host": acc.multi_host,
        "machine_type": acc.machine_type,
        "k8s_accelerator": acc.k8s_accelerator,
    }
