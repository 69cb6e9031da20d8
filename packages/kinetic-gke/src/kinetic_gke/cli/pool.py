"""``kinetic pool add | list | remove``: node pools made from the accelerator catalogue."""

from __future__ import annotations

import click

from kinetic_gke.cli import pass_host
from kinetic_gke.cli.infra import run_plan, show_pools, spec_from
from kinetic_protocol.commands import CommandHost

__all__ = ["pool"]


@click.group()
def pool() -> None:
    """Add, list and remove the cluster's node pools."""


@pool.command()
@click.option("--accelerator", required=True, help="Accelerator name (`kinetic accelerators`).")
@click.option("--min-nodes", type=click.IntRange(0), default=0, show_default=True,
              help="Nodes kept even when idle.")  # fmt: skip
@click.option("--max-nodes", type=click.IntRange(0), default=None,
              help="Most nodes (default: 3; a multi-host TPU slice: its host count).")  # fmt: skip
@click.option("--spot", is_flag=True, help="Spot VMs: cheaper, and may be reclaimed at any time.")
@click.option("--reservation", default="",
              help="Consume this Compute Engine reservation (jobs ask for it with "
                   "capacity='reservation:NAME').")  # fmt: skip
@click.option("--flex-start", is_flag=True,
              help="GKE's queued provisioning (Dynamic Workload Scheduler): nodes come all at "
                   "once when they exist, for jobs that ask capacity='flex-start'.")  # fmt: skip
@click.option("--name", "pool_name",
              help="Pool name (default: kinetic-<accelerator>[-spot|-flex]).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Print the plan and change nothing.")
@pass_host
def add(
    host: CommandHost,
    accelerator: str,
    min_nodes: int,
    max_nodes: int | None,
    spot: bool,
    reservation: str,
    flex_start: bool,
    pool_name: str | None,
    dry_run: bool,
) -> None:
    """Add a node pool for ACCELERATOR: its machine type, GPUs or TPU topology, and for a
    multi-host TPU slice its hosts in compact placement."""
    from kinetic_gke.pools import pool_name as default_name
    from kinetic_gke.pools import pool_shape
    from kinetic_gke.provision import GoogleClients, PoolRequest, plan_pool
    from kinetic_protocol import parse_accelerator

    parsed = parse_accelerator(accelerator)
    request = PoolRequest(
        pool_shape(parsed), spot=spot, min_nodes=min_nodes, max_nodes=max_nodes,
        reservation=reservation, flex_start=flex_start,
    )  # fmt: skip
    spec = spec_from(host)
    name = pool_name or default_name(
        parsed, spot=spot, reservation=reservation, flex_start=flex_start
    )
    plan = plan_pool(spec, GoogleClients(), name, request)
    run_plan(plan, heading=f"kinetic pool add: cluster {spec.cluster}", dry_run=dry_run)


@pool.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@pass_host
def list_pools(host: CommandHost, as_json: bool) -> None:
    """The cluster's node pools: accelerator, machine, size, capacity (on-demand, spot or
    reservation:NAME)."""
    from kinetic_gke.gcp import cluster_view
    from kinetic_gke.provision import GoogleClients
    from kinetic_gke.provision.cluster import require_cluster
    from kinetic_gke.provision.status import pool_document

    found = require_cluster(spec_from(host), GoogleClients())
    pools = [pool_document(p) for p in cluster_view(found).pools]
    if as_json:
        host.emit_json(pools)
        return
    show_pools(host, pools)


@pool.command()
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--dry-run", is_flag=True, help="Print the plan and change nothing.")
@pass_host
def remove(host: CommandHost, name: str, yes: bool, dry_run: bool) -> None:
    """Remove the node pool NAME (its nodes, and the jobs running on them, go with it)."""
    from kinetic_gke.provision import GoogleClients, unplan_pool

    spec = spec_from(host)
    plan = unplan_pool(spec, GoogleClients(), name)
    if not dry_run and not yes:
        click.echo(plan.render())
        if not click.confirm(f"Remove node pool {name}?", default=False):
            raise click.Abort
    run_plan(plan, heading=f"kinetic pool remove: cluster {spec.cluster}", dry_run=dry_run)
