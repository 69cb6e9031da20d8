"""Where and how a call runs: settings, backend, store, code bundle, and the backend's own
preparation, resolved once per call (or once per batch) before anything is written.

Every check that can refuse a job runs here, before anything slow or costly: the cheap ones
(settings, capabilities, the signing keys) before the bundle is built, the backend's own
(``prepare``: node pools, drivers) before it builds an image, and all of them before the
submission uploads data or the bundle.

What differs between backends is read from their declared capabilities and done by their
``prepare`` step; nothing here asks for a backend by name.
"""

import functools
import sys
import sysconfig
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinetic import _log
from kinetic._context import open_store
from kinetic.backends import available_backends, get_backend, load_factory
from kinetic.config import ResolvedSettings, kinetic_home, resolve_settings
from kinetic.data import Data
from kinetic.options import RunOptions
from kinetic.packaging import CodeBundle, build_bundle
from kinetic.submission.debugging import debug_options
from kinetic.submission.queueing import queueing_names
from kinetic_protocol import (
    Backend,
    Capabilities,
    ConfigError,
    DebugOptions,
    ObjectStore,
    PrepareRequest,
)
from kinetic_protocol.capacity import ON_DEMAND, SPOT
from kinetic_protocol.host_groups import shape_label

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
    debug: DebugOptions | None = None
    """The debug server's options of a ``debug=True`` call; None otherwise."""
    queue: str = ""
    """``JobRecord.queue``: the queue the backend will admit the jobs through, else the one
    asked for, else empty."""
    priority: str = ""
    """``JobRecord.priority``: the priority class asked for; empty for none."""

    @property
    def backend_name(self) -> str:
        return self.settings.backend_name


def _defining_function(fn: Callable[..., Any]) -> Any:
    """What ``fn`` really runs: through ``functools.partial``, bound methods and
    ``__wrapped__`` to the function underneath; a callable object stands for its class."""
    seen: set[int] = set()
    current: Any = fn
    while id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, functools.partial | functools.partialmethod):
            current = current.func
        elif isinstance(current, types.MethodType):
            current = current.__func__
        elif getattr(current, "__wrapped__", None) is not None:
            current = current.__wrapped__
    if isinstance(current, types.FunctionType | type | types.BuiltinFunctionType):
        return current
    return type(current)  # a callable instance: its class says where it was defined


def _installation_dirs() -> list[Path]:
    paths = sysconfig.get_paths()
    names = ("stdlib", "platstdlib", "purelib", "platlib")
    return [Path(paths[name]).resolve() for name in names if name in paths]


def _source_dir(fn: Callable[..., Any]) -> Path:
    """The project directory to bundle: the directory of the module defining ``fn``.

    A ``functools.partial``, a bound method or a wrapper is followed to the function it calls
    (their own ``__module__`` would be ``functools`` or the wrapper's). Code with no source
    file (a builtin, a ``__main__`` from stdin) bundles the working directory; code defined in
    the Python installation (the standard library, site-packages) is refused rather than
    bundling the installation.
    """
    underlying = _defining_function(fn)
    module = sys.modules.get(getattr(underlying, "__module__", "") or "")
    filename = getattr(module, "__file__", None) or getattr(
        getattr(underlying, "__code__", None), "co_filename", None
    )
    if not filename or not Path(filename).exists():
        return Path.cwd()
    directory = Path(filename).resolve().parent
    for installed in _installation_dirs():
        if directory == installed or installed in directory.parents:
            name = getattr(underlying, "__qualname__", None) or repr(underlying)
            raise TypeError(
                f"kinetic.run cannot tell which project to ship for {fn!r}: {name} is defined in "
                f"the Python installation ({directory}), not in your project. Call it from a "
                "function of your own module and decorate that function instead."
            )
    return directory


def _kinetic_state_dirs(store: ObjectStore) -> list[Path]:
    """Kinetic's own directories, never part of a code bundle even inside the project."""
    dirs = [kinetic_home()]
    if store.uri.startswith("file://"):
        dirs.append(Path(store.url("bundles")).parent)
    return dirs


def _check_capacity_choices(name: str, capabilities: Capabilities, options: RunOptions) -> None:
    """Refuse a list of accelerators or kinds of capacity, or a kind beyond on-demand and spot,
    on a backend that cannot choose among them, before anything is built or uploaded."""
    asked = []
    if options.fallback_accelerators:
        asked.append(f"accelerator={[a.name for a in options.accelerators]!r}")
    if options.capacity not in ((ON_DEMAND,), (SPOT,)):
        one = options.capacity[0] if len(options.capacity) == 1 else list(options.capacity)
        asked.append(f"capacity={one!r}")
    if not asked or capabilities.capacity_choices:
        return
    able = _backends_able("capacity_choices")
    raise ConfigError(
        f"The {name!r} backend runs each job on one accelerator, on demand or on spot, so it "
        f"cannot take {' and '.join(asked)}. Backends that can: {', '.join(able) or 'none'}; "
        "pass backend=..., or one accelerator and capacity='on-demand' or 'spot'."
    )


def _check_host_groups(name: str, capabilities: Capabilities, options: RunOptions) -> None:
    """Refuse several nodes or slices on a backend that runs one host group per job (after
    its ``prepare``, which may have refused them first, saying more), naming those that can."""
    shape = shape_label(options.nodes, options.slices)
    if not shape or capabilities.host_groups:
        return
    able = _backends_able("host_groups")
    raise ConfigError(
        f"The {name!r} backend runs each job on one group of hosts, so it cannot run {shape}. "
        f"Backends that can: {', '.join(able) or 'none installed'}; pass backend=... (or "
        "drop nodes/slices)."
    )


def _backends_able(capability: str) -> list[str]:
    """The installed backends whose capabilities have ``capability`` set, by name."""
    able = []
    for name in sorted(available_backends()):
        try:
            factory = load_factory(name)
        except ConfigError:
            continue
        capabilities = getattr(factory, "capabilities", None)
        if isinstance(capabilities, Capabilities) and getattr(capabilities, capability):
            able.append(name)
    return able


def resolve_target(
    options: RunOptions, fn: Callable[..., Any], data: Sequence[Data] = ()
) -> Target:
    """Resolve settings, backend, store, code bundle and the backend's preparation (which, for a
    backend whose jobs need a container image, resolves the image).

    ``data`` is the ``kinetic.Data`` the call (or every input of a batch) passes: local data
    inside the project stays out of the code bundle, and ``hf://`` data needs the ``hf``
    extra of the runtime in the image.
    """
    settings = resolve_settings(
        backend=options.backend,
        project=options.project,
        zone=options.zone,
        cluster=options.cluster,
        namespace=options.namespace,
        accelerator=options.accelerator,
        queue=options.queue,
        priority=options.priority,
        slices=options.slices,
    )
    queue, priority = queueing_names(settings)
    name = settings.backend_name
    backend = get_backend(name, settings.backend_settings())
    capabilities = backend.capabilities
    if options.volumes and not capabilities.volumes:
        raise ConfigError(
            f"volumes are not supported on the {name!r} backend (it cannot put data at a fixed "
            "path); pass the kinetic.Data as a function argument instead: the function "
            "receives its path."
        )
    debug = debug_options(capabilities) if options.debug else None
    every = [*data, *(item for _, item in options.volumes)]
    accelerator = options.accelerator
    if not capabilities.provisions_accelerators and accelerator.category != "cpu":
        _log.notice(
            f"{name}-accelerator-{accelerator.name}",
            f"kinetic: the {name} backend runs {accelerator.name!r} jobs on this machine's own "
            "hardware; no accelerator is provisioned.",
        )
    store = open_store(backend.store_uri)
    # The keys every record is sealed with: a cluster that will not hand them out refuses
    # the job here, before an image is built or anything is uploaded (cached afterwards).
    backend.signing_keys(create=True)
    _check_capacity_choices(name, capabilities, options)
    local_data = [Path(item.path) for item in every if item.is_local]
    bundle = build_bundle(
        _source_dir(fn), exclude=_kinetic_state_dirs(store), data_paths=local_data
    )
    preparation = backend.prepare(
        PrepareRequest(
            accelerator=accelerator,
            project_root=bundle.root,
            isolate=options.isolate,
            spot=options.capacity == (SPOT,),
            container_image=options.container_image,
            base_image_repo=options.base_image_repo,
            runtime_extras=("hf",) if any(item.is_hf for item in every) else (),
            volumes=tuple(path for path, _ in options.volumes),
            fuse=any(item.fuse for item in every),
            queue=queue,
            priority=priority,
            nodes=options.nodes,
            slices=options.slices,
            fallback_accelerators=options.fallback_accelerators,
            capacity=options.capacity,
        )
    )
    _check_host_groups(name, capabilities, options)
    return Target(
        options,
        settings,
        backend,
        store,
        bundle,
        image_uri=preparation.image,
        requirements=preparation.requirements,
        backend_data=preparation.backend_data,
        debug=debug,
        queue=preparation.queue or queue or "",
        priority=priority or "",
    )
