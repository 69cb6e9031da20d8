"""``kinetic init``: onboarding. Detects credentials and tools, lists the project's clusters,
and offers to join one (its credentials command and a profile), create one (`kinetic up`) or
diagnose (`kinetic doctor`)."""

from __future__ import annotations

import shutil

import click

from kinetic.cli.context import CliContext, pass_cli

__all__ = ["init"]


@click.command()
@click.option("--yes", is_flag=True, help="No questions: join the cluster named by the settings "
              "if it exists, else create it.")  # fmt: skip
@click.pass_context
@pass_cli
def init(cli: CliContext, ctx: click.Context, yes: bool) -> None:
    """Set up Kinetic for a GCP project: join a cluster, create one, or diagnose."""
    from kinetic.cli.infra import _save_profile, spec_from
    from kinetic.provision import GoogleClients
    from kinetic.provision.clients import calling
    from kinetic_gke.k8s import get_credentials_command

    for tool in ("gcloud", "kubectl", "gke-gcloud-auth-plugin"):
        click.echo(f"{tool:24} {'found' if shutil.which(tool) else 'not found'}")
    spec = spec_from(cli)
    listing = calling(
        f"listing clusters of project {spec.project}",
        GoogleClients().container.list_clusters,
        parent=f"projects/{spec.project}/locations/-",
    )
    names = [f"{c.name} ({c.location})" for c in listing.clusters]
    click.echo(f"Clusters in {spec.project}: {', '.join(names) or 'none'}")
    exists = any(c.name == spec.cluster and c.location == spec.zone for c in listing.clusters)
    if yes:
        choice = "join" if exists else "create"
    else:
        choice = click.prompt(
            "Join a cluster, create one, or diagnose?",
            type=click.Choice(["join", "create", "diagnose"]),
            default="join" if exists else "create",
        )
    if choice == "join":
        _save_profile(spec, spec.cluster)
        click.echo(f"Profile {spec.cluster!r} saved and made active. Fetch the credentials:\n  "
                   + get_credentials_command(spec.project, spec.zone, spec.cluster))  # fmt: skip
    elif choice == "create":
        from kinetic.cli.infra import up

        ctx.invoke(up)
    else:
        from kinetic.cli.doctor import doctor

        ctx.invoke(doctor)
