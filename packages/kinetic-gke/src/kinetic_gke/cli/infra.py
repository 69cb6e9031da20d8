"""``kinetic up``, ``kinetic down`` and ``kinetic status``: the cluster, built, removed, shown.

``up`` and ``down`` read the current state from the cloud, print the plan, and (unless
``--dry-run``) apply it with progress; both are safe to run again after a failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from kinetic_gke.cli import pass_host
from kinetic_protocol.commands import CommandHost

if TYPE_CHECKING:
    from kinetic_gke.provision import ClusterSpec, Plan

__all__ = ["down", "run_plan", "save_profile", "show_pools", "spec_from", "status", "up"]


def spec_from(host: CommandHost, **extra: Any) -> ClusterSpec:
    """The cluster the global options, environment and profile name."""
    from kinetic_gke import settings as gke_settings
    from kinetic_gke.provision import ClusterSpec

    settings = host.backend_settings()
    if not settings.project:
        raise _no_project()
    return ClusterSpec(
        project=settings.project,
        zone=settings.zone,
        cluster=settings.cluster,
        namespace=settings.namespace or "default",
        ksa=gke_settings.SERVICE_ACCOUNT.from_env() or "default",
        queues=host.setting(gke_settings.QUEUES) or "",
        **extra,
    )


def _no_project() -> Exception:
    """The error of a cluster command run with no project: it names the command that was run
    (not ``kinetic up`` for all of them) and each way of giving the project to it."""
    from kinetic_protocol import ConfigError

    ctx = click.get_current_context(silent=True)
    command = ctx.command_path if ctx is not None else "kinetic up"
    return ConfigError(
        f"`{command}` needs a GCP project and none is set: run `{command} --project P`, set "
        "KINETIC_PROJECT=P, or save it in a profile once (`kinetic profile create NAME "
        "--project P --use`)."
    )


def run_plan(plan: Plan, *, heading: str, dry_run: bool) -> None:
    """Show the plan; apply it unless ``dry_run``."""
    from kinetic_gke.provision import apply

    click.echo(heading)
    click.echo(plan.render())
    if dry_run:
        click.echo("\nDry run: nothing was changed.")
        return
    if plan.empty:
        click.echo("\nNothing to do: everything is in place.")
        return
    click.echo("")
    apply(plan, click.echo)
    click.echo("Done.")


def save_profile(
    host: CommandHost, spec: ClusterSpec, name: str, *, build_service_account: str = ""
) -> None:
    """Write the profile of ``spec``'s cluster and make it active."""
    from kinetic_protocol import BackendSettings

    settings = BackendSettings(
        project=spec.project, zone=spec.zone, cluster=spec.cluster, namespace=spec.namespace
    )
    host.save_profile(name, settings, build_service_account=build_service_account)


def show_pools(host: CommandHost, pools: list[dict[str, Any]]) -> None:
    """The node pools table of ``status`` and ``pool list``."""
    rows = [
        [p["name"], p["accelerator"], p["machine_type"], f"{p['min_nodes']}-{p['max_nodes']}",
         p["capacity"], p["status"]]
        for p in pools
    ]  # fmt: skip
    host.table(["POOL", "ACCELERATOR", "MACHINE", "NODES", "CAPACITY", "STATUS"], rows,
               empty="No node pools.")  # fmt: skip


@click.command()
@click.option("--dry-run", is_flag=True, help="Print the plan and change nothing.")
@click.option("--max-cpu", type=click.IntRange(0), default=256, show_default=True,
              help="vCPUs node auto-provisioning may add in all.")  # fmt: skip
@click.option("--max-memory-gb", type=click.IntRange(0), default=1024, show_default=True,
              help="Memory (GB) node auto-provisioning may add in all.")  # fmt: skip
@click.option("--profile", "profile_name", help="Profile to write (default: the cluster name).")
@pass_host
def up(
    host: CommandHost, dry_run: bool, max_cpu: int, max_memory_gb: int, profile_name: str | None
) -> None:
    """Create or complete the cluster and everything Kinetic needs, then make a profile of it.

    Enables the APIs; creates the service accounts and their roles, the GKE cluster (Workload
    Identity, GCS FUSE driver, auto-provisioning, a default pool), the jobs bucket, the Artifact
    Registry repository, the Workload Identity binding, the namespace's service account, and
    installs LeaderWorkerSet, JobSet and Kueue, with Kueue's queues sized to the node pools
    (KINETIC_QUEUES or the profile's queues declare several). What exists is kept; running it
    again changes nothing.
    """
    from kinetic_gke.k8s import get_credentials_command
    from kinetic_gke.provision import GoogleClients, up_plan

    spec = spec_from(host, max_cpu=max_cpu, max_memory_gb=max_memory_gb)
    plan = up_plan(spec, GoogleClients())
    heading = f"kinetic up: cluster {spec.cluster} in {spec.zone}, project {spec.project}"
    run_plan(plan, heading=heading, dry_run=dry_run)
    if dry_run:
        return
    name = profile_name or spec.cluster
    save_profile(host, spec, name, build_service_account=spec.account("build"))
    click.echo(f"Profile {name!r} saved and made active.")
    click.echo(
        "Kinetic's jobs reach the cluster through your kubeconfig, which kinetic up never "
        "writes; fetch its credentials once:\n  "
        + get_credentials_command(spec.project, spec.zone, spec.cluster)
    )


@click.command()
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--delete-bucket", is_flag=True, help="Delete the jobs bucket and its contents too.")
@click.option("--dry-run", is_flag=True, help="Print the plan and change nothing.")
@pass_host
def down(host: CommandHost, yes: bool, delete_bucket: bool, dry_run: bool) -> None:
    """Delete what `kinetic up` created: the cluster, registry and service accounts.

    The bucket (your jobs' results and outputs) is kept unless --delete-bucket.
    """
    from kinetic_gke.provision import GoogleClients, down_plan

    spec = spec_from(host)
    plan = down_plan(spec, GoogleClients(), delete_bucket=delete_bucket)
    heading = f"kinetic down: cluster {spec.cluster} in {spec.zone}, project {spec.project}"
    if plan.empty or dry_run:
        run_plan(plan, heading=heading, dry_run=dry_run)
        return
    click.echo(heading)
    click.echo(plan.render())
    if not yes and not click.confirm("\nDelete these?", default=False):
        raise click.Abort
    click.echo("")
    from kinetic_gke.provision import apply

    apply(plan, click.echo)
    click.echo("Done. Kept: " + "; ".join(plan.notes))


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@pass_host
def status(host: CommandHost, as_json: bool) -> None:
    """The cluster, its pools, bucket, registry, LeaderWorkerSet, JobSet, Kueue and its queues,
    FUSE driver and what runs."""
    from kinetic_gke.provision.status import cluster_status

    document = cluster_status(spec_from(host))
    if as_json:
        host.emit_json(document)
        return
    _show_status(host, document)


def _show_status(host: CommandHost, document: dict[str, Any]) -> None:
    cluster = document["cluster"]
    off = document["apis_off"]
    host.key_values(
        {
            "Project": document["project"]
            + (f" ({len(off)} APIs off: {', '.join(off)})" if off else ""),
            "Cluster": f"{document['name']} ({document['zone']}): "
            + (cluster["status"] if cluster else "does not exist (`kinetic up` creates it)"),
            "Bucket": f"gs://{document['bucket']['name']}: "
            + ("exists" if document["bucket"]["exists"] else "missing"),
            "Registry": f"{document['registry']['name']}: "
            + ("exists" if document["registry"]["exists"] else "missing"),
        }
    )
    if not cluster:
        return
    host.key_values(
        {
            "Workload Identity": cluster["workload_pool"] or "off",
            "GCS FUSE driver": "on" if cluster["fuse_driver"] else "off",
            "Auto-provisioning": "on" if cluster["autoprovisioning"] else "off",
            "LeaderWorkerSet": document["lws"] or "not installed",
            "JobSet": document.get("jobset") or "not installed",
            "Kueue": _kueue_line(document.get("kueue")),
            "Running": document["running"],
        }
    )
    click.echo("")
    show_pools(host, cluster["pools"])
    queues = (document.get("kueue") or {}).get("queues") or []
    if queues:
        click.echo("")
        _show_queues(host, queues)


def _kueue_line(kueue: dict[str, Any] | None) -> str:
    """Whether jobs are queued, and Kueue's controller."""
    if not kueue:
        return "unknown"
    if "error" in kueue:
        return f"unknown ({kueue['error']})"
    if kueue["api"] is None:
        return "not installed: jobs run unqueued (`kinetic up` installs it)"
    text = f"{kueue['release'] or 'serving'} (API {kueue['api']})"
    if kueue["controller"]:
        available, wanted = kueue["controller"]
        text += f", controller {available}/{wanted} available"
    return text


def _show_queues(host: CommandHost, queues: list[dict[str, Any]]) -> None:
    """Each queue of the namespace: its jobs and the quota its cluster queue holds."""
    rows = [
        [q["name"], q["cluster_queue"], str(q["admitted"]), str(q["pending"]),
         ", ".join(f"{r} {q['in_use'].get(r, '0')}/{amount}"
                   for r, amount in q["quota"].items() if amount != "0")]
        for q in queues
    ]  # fmt: skip
    host.table(["QUEUE", "CLUSTER QUEUE", "ADMITTED", "PENDING", "IN USE / QUOTA"], rows,
               empty="No queues.")  # fmt: skip
