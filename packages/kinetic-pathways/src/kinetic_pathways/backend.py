"""``PathwaysBackend``: each multi-host TPU job is one LeaderWorkerSet on a GKE cluster.

Polling, listing, deletion with confirmation and the bucket are the gke backend's, with a
LeaderWorkerSet workload. What differs: every host's pod counts towards the job's state, a
finished slice is stopped at once (so it burns no TPU hours), and logs are per host.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import ClassVar

from kinetic_gke import GKEBackend
from kinetic_gke.k8s import Obj
from kinetic_gke.labels import job_selector
from kinetic_pathways.manifest import APP, lws_manifest
from kinetic_pathways.status import (
    LOG_TAIL_LINES,
    host_of,
    host_pods,
    recorded_hosts,
    recorded_log,
    recorded_state,
)
from kinetic_pathways.workload import LeaderWorkerSetWorkload
from kinetic_protocol import (
    Accelerator,
    Capabilities,
    ConfigError,
    HostSelection,
    JobRecord,
    JobState,
    JobStatus,
    parse_accelerator,
)

__all__ = ["PathwaysBackend"]


def _restarted(pod: Obj) -> bool:
    """The container ran once and was restarted: its first run's output is the previous log."""
    return any(
        "terminated" in (c.get("lastState") or {})
        for c in pod.get("status", {}).get("containerStatuses") or []
    )


def _prefixed(host: int, lines: Iterator[str]) -> Iterator[str]:
    for line in lines:
        yield f"[host {host}] {line}"


class PathwaysBackend(GKEBackend):
    """Runs multi-host TPU jobs as LeaderWorkerSets (one group of host-count pods per job)."""

    name = "pathways"
    capabilities: ClassVar[Capabilities] = Capabilities(
        container_image=True, multi_host=True, single_host=False, per_host_logs=True
    )
    related_backends: ClassVar[tuple[str, ...]] = ("gke",)
    workload = LeaderWorkerSetWorkload()
    app: ClassVar[str] = APP

    def check_accelerator(self, accelerator: Accelerator) -> None:
        if not accelerator.multi_host:
            raise ConfigError(
                f"Accelerator {accelerator.name!r} fits on one host; the pathways backend runs "
                "multi-host TPU slices. Use backend='gke' (or leave backend unset), or a "
                "multi-host shape (`kinetic accelerators` shows hosts per shape)."
            )

    def manifest(self, record: JobRecord) -> Obj:
        return lws_manifest(
            record,
            version=self.workload.version(self.connection),
            options=self.pod_options,
            command=self._command,
        )

    def _settle(
        self, record: JobRecord, obj: Obj | None, pods: list[Obj], state: JobState
    ) -> JobState:
        """Stop a slice as soon as its outcome is known, recording it (and the end of every
        host's output, which goes with the pods) on the object; record which pod runs each
        host the first time all of them run, so a replaced host is told at once."""
        if obj is None:
            return state
        if state.status is JobStatus.RUNNING and recorded_hosts(obj) is None:
            self.workload.record_hosts(self.connection, record.k8s_name, host_pods(pods))
        if state.status.is_terminal and recorded_state(obj) is None:
            hosts = range(parse_accelerator(record.accelerator).hosts)
            tails = {host: self._pod_log(record, host, LOG_TAIL_LINES) for host in hosts}
            self.workload.stop(self.connection, record.k8s_name, state, tails)
        return state

    # -- logs, per host --------------------------------------------------------------------

    def _hosts(self, record: JobRecord, host: HostSelection) -> list[int]:
        count = parse_accelerator(record.accelerator).hosts
        if host == "all":
            return list(range(count))
        index = host or 0
        if not 0 <= index < count:
            raise ConfigError(
                f"Job {record.job_id} runs on {count} hosts (0 to {count - 1}); there is no "
                f"host {index}."
            )
        return [index]

    def _pod_for(self, record: JobRecord, host: int) -> Obj | None:
        pods = [
            pod
            for pod in self.connection.list_pods(job_selector(record.job_id, self.app))
            if host_of(pod) == host
        ]
        return max(pods, key=lambda p: p["metadata"].get("creationTimestamp") or "", default=None)

    def _host_log(self, record: JobRecord, host: int, tail: int | None) -> str:
        """The host's output: once the slice is stopped (its pods going or gone), the end of
        it recorded on the LeaderWorkerSet; before, its pod's."""
        lws = self.workload.get(self.connection, record.k8s_name)
        recorded = None if lws is None else recorded_log(lws, host)
        if recorded is not None:
            lines = recorded.splitlines(keepends=True)
            return "".join(lines if tail is None else lines[-tail:])
        return self._pod_log(record, host, tail)

    def _pod_log(self, record: JobRecord, host: int, tail: int | None) -> str:
        pod = self._pod_for(record, host)
        if pod is None:
            return ""
        return self.connection.pod_log(pod, tail=tail, previous=_restarted(pod))

    def logs(
        self, record: JobRecord, *, tail: int | None = None, host: HostSelection = None
    ) -> str:
        hosts = self._hosts(record, host)
        if tail is not None and tail <= 0:
            return ""
        if host != "all":
            return self._host_log(record, hosts[0], tail)
        return "".join(
            "".join(_prefixed(i, iter(self._host_log(record, i, tail).splitlines(keepends=True))))
            for i in hosts
        )

    def _stream(self, pod: Obj) -> Iterator[str]:
        if _restarted(pod):  # the first run is over; the running container only waits
            return iter(self.connection.pod_log(pod, previous=True).splitlines(keepends=True))
        return super()._stream(pod)

    def follow_logs(self, record: JobRecord, *, host: HostSelection = None) -> Iterator[str]:
        hosts = self._hosts(record, host)
        if host != "all":
            return self._follow_host(record, hosts[0])
        return self._follow_all(record, hosts)

    def _follow_host(self, record: JobRecord, host: int) -> Iterator[str]:
        """The host's output as it comes; if the slice was stopped before it could be
        streamed, the end of it recorded on the LeaderWorkerSet."""
        streamed = False
        for line in super()._follow_host(record, host):
            streamed = True
            yield line
        if not streamed:
            yield from self._host_log(record, host, None).splitlines(keepends=True)

    def _follow_all(self, record: JobRecord, hosts: list[int]) -> Iterator[str]:
        """Every host's lines as they come, prefixed, until the job has ended."""
        lines: queue.Queue[str | None] = queue.Queue()

        def pump(host: int) -> None:
            try:
                for line in _prefixed(host, self._follow_host(record, host)):
                    lines.put(line)
            finally:
                lines.put(None)

        for host in hosts:
            threading.Thread(target=pump, args=(host,), daemon=True, name="kinetic-logs").start()
        running = len(hosts)
        while running:
            line = lines.get()
            if line is None:
                running -= 1
            else:
                yield line
