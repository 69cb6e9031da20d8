"""The agent's fault-injection methods, each arming one :class:`PodFault`.

Every method aims like the others: ``namespace`` and/or pod ``name``, a label ``selector``,
or a ``where`` predicate over the pod dict; ``times`` (default 1: the next matching pod)
bounds how many pods it hits. Kill faults strike ``after`` seconds into the container's run.
"""

from __future__ import annotations

from collections.abc import Callable

from .api import Obj
from .faults import FaultKind, FaultRegistry, PodFault

__all__ = ["FaultMethods"]

Where = Callable[[Obj], bool] | None


class FaultMethods:
    """Mixed into :class:`NodeAgent`; ``_armed`` wakes its loop so the fault acts at once."""

    faults: FaultRegistry

    def _armed(self, fault: PodFault) -> PodFault:
        raise NotImplementedError

    def _aim(
        self,
        kind: FaultKind,
        namespace: str | None,
        name: str | None,
        selector: str | None,
        where: Where,
        times: int | None,
        after: float = 0.0,
        reason: str = "",
        message: str = "",
    ) -> PodFault:
        return self._armed(
            PodFault(
                kind=kind,
                namespace=namespace,
                name=name,
                selector=selector,
                where=where,
                times=times,
                after=after,
                reason=reason,
                message=message,
            )
        )

    def fail_image_pull(
        self,
        namespace: str | None = None,
        name: str | None = None,
        *,
        selector: str | None = None,
        where: Where = None,
        times: int | None = 1,
        reason: str = "",
        message: str = "",
    ) -> PodFault:
        """The image cannot be pulled: ErrImagePull, then ImagePullBackOff; it never starts.

        ``reason``/``message`` replace that pair (e.g. ``InvalidImageName``), reported once.
        """
        return self._aim(
            "image-pull", namespace, name, selector, where, times, reason=reason, message=message
        )

    def oom_kill(
        self,
        namespace: str | None = None,
        name: str | None = None,
        *,
        selector: str | None = None,
        where: Where = None,
        times: int | None = 1,
        after: float = 0.0,
    ) -> PodFault:
        """SIGKILL the container: Failed, terminated reason OOMKilled, exit code 137."""
        return self._aim("oom", namespace, name, selector, where, times, after)

    def evict(
        self,
        namespace: str | None = None,
        name: str | None = None,
        *,
        selector: str | None = None,
        where: Where = None,
        times: int | None = 1,
        after: float = 0.0,
        message: str = "",
    ) -> PodFault:
        """Node-pressure eviction: Failed, reason Evicted, DisruptionTarget TerminationByKubelet."""
        return self._aim("evict", namespace, name, selector, where, times, after, message=message)

    def preempt_spot(
        self,
        namespace: str | None = None,
        name: str | None = None,
        *,
        selector: str | None = None,
        where: Where = None,
        times: int | None = 1,
        after: float = 0.0,
    ) -> PodFault:
        """Spot reclaim (graceful node shutdown): SIGTERM, then Failed, reason Terminated,
        DisruptionTarget TerminationByKubelet, exit code 143 (or 137 after the grace)."""
        return self._aim("preempt", namespace, name, selector, where, times, after)

    def lose_node(
        self,
        namespace: str | None = None,
        name: str | None = None,
        *,
        selector: str | None = None,
        where: Where = None,
        times: int | None = 1,
        after: float = 0.0,
    ) -> PodFault:
        """The node running the matching pod vanishes (see ``NodeAgent._lose_node``)."""
        return self._aim("node-loss", namespace, name, selector, where, times, after)
