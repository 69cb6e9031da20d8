"""``kinetic keys show | rotate | retire``: the keys that sign jobs and their results.

Where the keys are is the backend's business (the Kinetic home for local jobs, a Secret in the
namespace for Kubernetes ones); these commands act on the backend the shared options resolve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kinetic.cli import render
from kinetic.cli.context import CliContext, pass_cli

if TYPE_CHECKING:
    from kinetic_protocol import Backend

__all__ = ["keys"]


def _backend(cli: CliContext) -> Backend:
    from kinetic.backends import get_backend

    settings = cli.resolve()
    return get_backend(settings.backend_name, settings.backend_settings())


@click.group()
def keys() -> None:
    """Show, rotate and retire the keys that sign jobs and their results."""


@keys.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@pass_cli
def show(cli: CliContext, as_json: bool) -> None:
    """Where the keys are, their ids, and the one that signs (never the keys themselves)."""
    keyring = _backend(cli).signing_keys(create=False)
    document = {"source": keyring.source, "current": keyring.current, "keys": keyring.key_ids}
    if as_json:
        render.emit_json(document)
        return
    render.key_values(
        {"source": keyring.source, "current": keyring.current, "keys": ", ".join(keyring.key_ids)}
    )


@keys.command()
@pass_cli
def rotate(cli: CliContext) -> None:
    """Add a new key and sign with it from now on; older keys still verify what they signed."""
    backend = _backend(cli)
    rotated = backend.signing_keys(create=True).rotated()
    backend.replace_signing_keys(rotated)
    render.echo(
        f"{rotated.source}: now signing with {rotated.current} (keys: {len(rotated.key_ids)})."
    )


@keys.command()
@click.argument("key_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_cli
def retire(cli: CliContext, key_id: str, yes: bool) -> None:
    """Remove KEY_ID (a key believed leaked): whatever it signed is refused from now on."""
    backend = _backend(cli)
    reduced = backend.signing_keys(create=False).without(key_id)
    if not yes:
        click.confirm(
            f"Retire key {key_id} of {reduced.source}? Results and calls it signed will no "
            "longer be readable.",
            abort=True,
        )
    backend.replace_signing_keys(reduced)
    render.echo(f"{reduced.source}: retired {key_id}; {len(reduced.key_ids)} keys left.")
