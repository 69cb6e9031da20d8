"""``kinetic accelerators``: every name ``@kinetic.run(accelerator=...)`` accepts."""

from typing import TYPE_CHECKING, Any

import click

from kinetic.cli import render

if TYPE_CHECKING:
    from kinetic_protocol.accelerators import Accelerator
    from kinetic_protocol.prices import PriceTable

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

    Prices are list prices in USD per hour of the whole accelerator (every GPU, every chip of
    the slice), on demand and on spot, for the region and day printed below the table; a
    table of your own (another region, newer prices) goes in the file KINETIC_PRICES names.
    """
    from kinetic.usage import price_table
    from kinetic_protocol.accelerators import parse_accelerator, valid_accelerator_names

    table = price_table()
    catalogue = [parse_accelerator(name) for name in valid_accelerator_names()]
    if category:
        catalogue = [acc for acc in catalogue if acc.category == category]
    if as_json:
        render.emit_json([_document(acc, table) for acc in catalogue])
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
            *(_price(acc, kind, table) for kind in ("on-demand", "spot")),
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
            "$/H ON-DEMAND",
            "$/H SPOT",
        ],
        rows,
        empty="No accelerators match.",
    )
    click.echo(f"Prices: {table.describe()}.", err=True)


def _price(acc: "Accelerator", capacity: str, table: "PriceTable") -> str:
    from kinetic_protocol.prices import hourly_price

    price = hourly_price(acc, capacity, table)
    return "" if price is None else f"{price:.2f}"


def _document(acc: "Accelerator", table: "PriceTable") -> dict[str, Any]:
    from kinetic_protocol.prices import hourly_price

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
        "list_price": {
            "usd_per_hour": {
                kind: hourly_price(acc, kind, table) for kind in ("on-demand", "spot", "flex-start")
            },
            "region": table.region,
            "as_of": str(table.as_of),
            "stale_by": str(table.stale_by),
            "source": table.source,
        },
    }
