"""``jax.distributed.initialize()`` with no arguments joins a multi-host job's hosts.

JAX reads only the coordinator's address from the environment (``JAX_COORDINATOR_ADDRESS``);
the process count and id come from a cluster environment it detects (Slurm, Open MPI,
Kubernetes Jobs through the API, Cloud TPU metadata), and a Kinetic job on CPUs or GPUs is
none of those. JAX finds such environments as subclasses of its ``ClusterEnv`` ("detected when
imported", its docstring says), so each host of a job defines one more, ahead of the others:
Kinetic knows the host's place, whatever else the machine looks like.

It is defined when the job first imports JAX (an import hook), so a job that never uses JAX
never loads it, and defined once per process.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

from kinetic_runtime.host_place import SliceHost

__all__ = ["CLUSTER_NAME", "register_when_imported"]

CLUSTER_NAME = "kinetic"
"""The name JAX knows the job's hosts by (``cluster_detection_method="kinetic"``)."""


def _register(host: SliceHost) -> None:
    """Put the job's hosts first among the cluster environments JAX detects."""
    try:
        from jax._src import clusters  # JAX's own extension point; moved in another version?
    except ImportError:
        return
    known: list[Any] = clusters.ClusterEnv._cluster_types
    if any(getattr(env, "name", "") == CLUSTER_NAME for env in known):
        return

    class KineticCluster(clusters.ClusterEnv):  # type: ignore[no-untyped-call]
        name = CLUSTER_NAME
        opt_in_only_method = False

        @classmethod
        def is_env_present(cls) -> bool:
            return True

        @classmethod
        def get_coordinator_address(
            cls, timeout_secs: int | None, override_coordinator_port: str | None
        ) -> str:
            if override_coordinator_port:  # JAX_COORDINATOR_PORT
                return f"{host.leader_host}:{override_coordinator_port}"
            return host.coordinator

        @classmethod
        def get_process_count(cls) -> int:
            return host.count

        @classmethod
        def get_process_id(cls) -> int:
            return host.index

        @classmethod
        def get_local_process_id(cls) -> int | None:
            return None  # one process per host: it sees every device of its host

    known.remove(KineticCluster)
    known.insert(0, KineticCluster)


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``module`` as the other finders would, and calls ``then`` once it has run."""

    def __init__(self, module: str, then: Callable[[], None]) -> None:
        self.module, self.then = module, then
        self._loader: importlib.abc.Loader | None = None

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.module:
            return None
        # A search (``importlib.util.find_spec``) comes here as an import does: the finder
        # stays until the module runs, and is out of the way of its own search.
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        self._loader, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        assert self._loader is not None
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        assert self._loader is not None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        module.__spec__.loader = self._loader  # type: ignore[union-attr]
        module.__loader__ = self._loader
        self._loader.exec_module(module)
        try:
            self.then()
        except Exception as exc:  # never fail the user's ``import jax`` over it
            print(
                f"kinetic: jax.distributed cannot find this job's hosts: {exc!r}", file=sys.stderr
            )


def register_when_imported(host: SliceHost) -> None:
    """Make ``jax.distributed.initialize()`` find ``host``'s place, now if JAX is loaded,
    else as soon as it is."""
    if "jax" in sys.modules:
        _register(host)
    else:
        sys.meta_path.insert(0, _AfterImport("jax", lambda: _register(host)))
