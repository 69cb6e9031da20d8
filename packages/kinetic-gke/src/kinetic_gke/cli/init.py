"""``kinetic init``: onboarding. Detects credentials and tools, lists the project's clusters,
and offers to join one (a profile, and the command that fetches its credentials), create one
(``kinetic up``) or troubleshoot (``kinetic doctor``)."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, ClassVar

import click

from kinetic_gke.cli import pass_host
from kinetic_protocol.commands import CommandHost

if TYPE_CHECKING:
    from kinetic_gke.doctor import Context

__all__ = ["init"]


class _Answer(click.Choice[str]):
    """The prompt's choices, as the guides name them; an older word still answers."""

    aliases: ClassVar[dict[str, str]] = {"diagnose": "troubleshoot"}

    def __init__(self) -> None:
        super().__init__(["join", "create", "troubleshoot"])

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> str:
        word = value.strip().lower() if isinstance(value, str) else value
        return str(super().convert(self.aliases.get(str(word), word), param, ctx))


@click.command()
@click.option("--yes", is_flag=True, help="No questions: join the cluster named by the settings "
              "if it exists, else create it.")  # fmt: skip
@click.pass_context
@pass_host
def init(host: CommandHost, ctx: click.Context, yes: bool) -> None:
    """Set up Kinetic for a GCP project: join a cluster, create one, or troubleshoot."""
    from kinetic_gke.cli.infra import spec_from
    from kinetic_gke.doctor import Context
    from kinetic_gke.doctor.checks import credentials
    from kinetic_gke.provision.clients import calling
    from kinetic_gke.provision.cloud import disabled_apis
    from kinetic_protocol import ConfigError

    for tool in ("gcloud", "kubectl", "gke-gcloud-auth-plugin"):
        click.echo(f"{tool:24} {'found' if shutil.which(tool) else 'not found'}")
    spec = spec_from(host)
    context = Context(spec)
    outcome, message, fix = credentials(context)
    click.echo(f"{'credentials':24} {message}")
    if outcome == "FAIL":
        raise ConfigError(f"{message}. Fix: {fix}")
    disabled = disabled_apis(context.clients, spec.project)
    if disabled:
        click.echo(f"{'APIs off':24} {', '.join(disabled)} (kinetic up enables them)")
    clusters = []
    if "container.googleapis.com" not in disabled:  # else the project has no cluster
        clusters = calling(
            f"listing clusters of project {spec.project}",
            context.clients.container.list_clusters,
            parent=f"projects/{spec.project}/locations/-",
        ).clusters
    names = [f"{c.name} ({c.location})" for c in clusters]
    click.echo(f"Clusters in {spec.project}: {', '.join(names) or 'none'}")
    exists = any(c.name == spec.cluster and c.location == spec.zone for c in clusters)
    if yes:
        choice = "join" if exists else "create"
    else:
        choice = click.prompt(
            f"Join cluster {spec.cluster} ({spec.zone}), create it, or troubleshoot?",
            type=_Answer(),
            default="join" if exists else "create",
        )
    if choice == "join":
        _join(host, context, exists)
    elif choice == "create":
        from kinetic_gke.cli.infra import up

        ctx.invoke(up)
    else:
        from kinetic_gke.cli.doctor import doctor

        ctx.invoke(doctor)


def _join(host: CommandHost, context: Context, exists: bool) -> None:
    """Save the cluster's profile (with the build account ``kinetic up`` made, if there is
    one) and say how to fetch its credentials; the kubeconfig is never written."""
    from kinetic_gke.cli.infra import save_profile
    from kinetic_gke.k8s import get_credentials_command
    from kinetic_gke.provision.accounts import get_account
    from kinetic_protocol import ConfigError, KineticError

    spec = context.spec
    if not exists:
        raise ConfigError(
            f"Cluster {spec.cluster} does not exist in {spec.zone} (project {spec.project}), so "
            "there is nothing to join: choose create, or name another with --cluster/--zone."
        )
    try:
        builds_as = get_account(spec, context.clients, spec.account("build"))
    except KineticError:  # no right to read service accounts: builds use Cloud Build's own
        builds_as = None
    account = spec.account("build") if builds_as else ""
    save_profile(host, spec, spec.cluster, build_service_account=account)
    click.echo(
        f"Profile {spec.cluster!r} saved and made active. Fetch the cluster's credentials once:\n"
        f"  {get_credentials_command(spec.project, spec.zone, spec.cluster)}"
    )
