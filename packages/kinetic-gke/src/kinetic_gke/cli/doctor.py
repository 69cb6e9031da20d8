"""``kinetic doctor``: every check a failed first job needs, with the command that fixes it."""

from __future__ import annotations

import click

from kinetic_gke.cli import pass_host
from kinetic_gke.cli.infra import spec_from
from kinetic_protocol.commands import CommandHost

__all__ = ["doctor"]


@click.command()
@click.option("--accelerator", help="Also check that a node pool can run this accelerator.")
@click.option("--fuse", is_flag=True, help="Data(fuse=True) is used: the FUSE driver must be on.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@pass_host
def doctor(host: CommandHost, accelerator: str | None, fuse: bool, as_json: bool) -> None:
    """Check credentials, APIs, cluster, pools, bucket, registry, identity, LWS, JobSet, Kueue
    and its queues, FUSE, GPU driver; each PASS, WARN or FAIL with the exact fix. Exits 1 if any
    check fails."""
    from kinetic_gke.doctor import Context, diagnose
    from kinetic_protocol import parse_accelerator

    parsed = parse_accelerator(accelerator) if accelerator else None
    findings = diagnose(Context(spec_from(host), accelerator=parsed, fuse=fuse))
    if as_json:
        host.emit_json([f.__dict__ for f in findings])
    else:
        for finding in findings:
            click.echo(f"{finding.outcome:4}  {finding.check:18} {finding.message}")
            if finding.fix:
                click.echo(f"      {'':18} fix: {finding.fix}")
    if any(f.outcome == "FAIL" for f in findings):
        raise click.exceptions.Exit(1)  # the command line's "failed" exit code
