"""Where and how a call runs: settings, backend, store, code bundle, and the backend's own
preparation, resolved once per call (or once per batch) before anything is written.

What differs between backends is read from their declared capabilities and done by their
``prepare`` step; nothing here asks for a backend by name.
"""

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinetic import _log
from kinetic._context import open_store
from kinetic.backends import get_backend
from kinetic.config import ResolvedSettings, kinetic_home, resolve_settings
from kinetic.options import RunOptions
from kinetic.packaging import CodeBundle, build_bundle
from kinetic.settings import CONTAINER_IMAGE
from kinetic_protocol import Backend, ConfigError, ObjectStore, PrepareRequest

__all__ = ["Target", "resolve_target"]


@dataclass(frozen=True)
class Target:
    """Where and how a call runs; resolved once per call, or once per batch."""

    options: RunOptions
    settings: ResolvedSettings
    backend: Backend
    store: ObjectStore
    bundle: CodeBundle
    image_uri: str = ""
    requirements: tuple[str, ...] = ()
    backend_data: dict[str, str] = field(default_factory=dict)

    @property
    def backend_name(self) -> str:
        return self.settings.backend_name


def _source_dir(fn: Callable[..., Any]) -> Path:
    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    filename = getattr(module, "__file__", None) or getattr(
        getattr(fn, "__code__", None), "co_filename", None
    )
    if filename and Path(filename).exists():
        return Path(filename).resolve().parent
    return Path.cwd()


def _kinetic_state_dirs(store: ObjectStore) -> list[Path]:
    """Kinetic's own directories, never part of a code bundle even inside the project."""
    dirs = [kinetic_home()]
    if store.uri.startswith("file://"):
        dirs.append(Path(store.url("bundles")).parent)
    return dirs


def resolve_target(options: RunOptions, fn: Callable[..., Any]) -> Target:
    """Resolve settings, backend, store, code bundle, image and the backend's preparation."""
    settings = resolve_settings(
        backend=options.backend, project=options.project, zone=options.zone,
        cluster=options.cluster, namespace=options.namespace,
    )  # fmt: skip
    name = settings.backend_name
    backend = get_backend(name, settings.backend_settings())
    capabilities = backend.capabilities
    if options.volumes and not capabilities.volumes:
        raise ConfigError(
            f"volumes are not supported on the {name!r} backend in this version of Kinetic; "
            "pass the kinetic.Data as a function argument, or stage it in a gs:// bucket."
        )
    accelerator = options.accelerator
    if not capabilities.provisions_accelerators and accelerator.category != "cpu":
        _log.notice(
            f"{name}-accelerator-{accelerator.name}",
            f"kinetic: the {name} backend runs {accelerator.name!r} jobs on this machine's own "
            "hardware; no accelerator is provisioned.",
        )
    store = open_store(backend.store_uri)
    bundle = build_bundle(_source_dir(fn), exclude=_kinetic_state_dirs(store))
    requirements: tuple[str, ...]
    image_uri, requirements = "", ()
    if capabilities.container_image:
        from kinetic.images import resolve_image

        image = resolve_image(
            container_image=options.container_image or CONTAINER_IMAGE.from_env(),
            base_image_repo=options.base_image_repo,
            accelerator=accelerator,
            project_root=bundle.root,
            project=settings.project.value or "",
            zone=settings.zone.value or "",
        )
        image_uri, requirements = image.uri, tuple(image.requirements)
    preparation = backend.prepare(
        PrepareRequest(
            accelerator=accelerator, project_root=bundle.root, isolate=options.isolate,
            image=image_uri,
        )
    )  # fmt: skip
    return Target(
        options, settings, backend, store, bundle,
        image_uri=image_uri, requirements=requirements, backend_data=preparation.backend_data,
    )  # fmt: skip
