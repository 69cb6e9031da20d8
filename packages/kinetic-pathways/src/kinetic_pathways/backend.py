"""``PathwaysBackend``: each multi-host TPU job is one LeaderWorkerSet on a GKE cluster.

Polling, listing, deletion with confirmation and the bucket are the gke backend's, with a
LeaderWorkerSet workload. What differs: every host's pod counts towards the job's state, a
finished slice is stopped at once (so it burns no TPU hours), and logs are per host. A
``debug=True`` job's debugger is the leader's: its pod serves it, and ``port_forward_command``
(the gke backend's) forwards to host 0's pod.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import ClassVar

from kinetic_gke import GKEBackend
from kinetic_gke.k8s import Obj
from kinetic_gke.labels import job_selector
from kinetic_gke.pod_logs import prefixed
from kinetic_pathways.manifest import APP, lws_manifest, slice_record
from kinetic_pathways.status import (
    LOG_TAIL_LINES,
    host_pods,
    newest_by_host,
    recorded_hosts,
    recorded_log,
    recorded_state,
)
from kinetic_pathways.workload import LeaderWorkerSetWorkload
from kinetic_protocol import (
    NO_ENV,
    Accelerator,
    Capabilities,
    ConfigError,
    HostSelection,
    JobRecord,
    JobState,
    JobStatus,
    parse_accelerator,
)
from kinetic_protocol.host_groups import selected_hosts

__all__ = ["PathwaysBackend"]


_STOP_ATTEMPTS = 5
"""Reads of a finished slice before giving up on recording its outcome in this poll (the
LWS controller's own status writes also change its version)."""


def _restarted(pod: Obj) -> bool:
    """The container ran once and was restarted: its first run's output is the previous log."""
    return any(
        "terminated" in (c.get("lastState") or {})
        for c in pod.get("status", {}).get("containerStatuses") or []
    )


class PathwaysBackend(GKEBackend):
    """Runs multi-host TPU jobs as LeaderWorkerSets (one group of host-count pods per job)."""

    name = "pathways"
    capabilities: ClassVar[Capabilities] = Capabilities(
        container_image=True,
        multi_host=True,
        single_host=False,
        volumes=True,
        fuse=True,
        debug_port_forward=True,
        per_host_logs=True,
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

    def check_host_groups(self, nodes: int, slices: int) -> None:
        """One job is one slice, a LeaderWorkerSet; several slices run on ``gke``."""
        if slices > 1:
            raise ConfigError(
                f"slices={slices}: the pathways backend runs one TPU slice per job (a "
                "LeaderWorkerSet). Run several slices with backend='gke', which makes them "
                "one JobSet, or pass slices=1."
            )
        super().check_host_groups(nodes, slices)

    def manifest(
        self,
        record: JobRecord,
        *,
        env_secret: str | None = None,
        accelerator: Accelerator | None = None,
    ) -> Obj:
        return lws_manifest(
            record,
            accelerator=accelerator,
            version=self.workload.version(self.connection),
            options=self.pod_options,
            command=self._command,
            env_secret=env_secret,
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
            return self._stop(record, pods, state)
        return state

    def _stop(self, record: JobRecord, pods: list[Obj], state: JobState) -> JobState:
        """Record ``state`` on the slice and stop it, unless another reader recorded an outcome
        first: then that one is the job's.

        Readers race: one whose listing of the set predates another's stop lists the stopped
        hosts' pods gone and would take them for replaced hosts. The record is written only
        over the version of the set it was checked against, so the first outcome wins and
        every reader returns it.
        """
        tails: dict[int, str] | None = None
        for _ in range(_STOP_ATTEMPTS):
            current = self.workload.get(self.connection, record.k8s_name)
            if current is None or current["metadata"].get("deletionTimestamp"):
                return JobState(status=JobStatus.NOT_FOUND)
            recorded = recorded_state(current)
            if recorded is not None:
                return recorded
            if tails is None:
                newest = newest_by_host(pods)  # the pods this poll listed: no read of its own
                hosts = range(parse_accelerator(record.accelerator).hosts)
                tails = {host: self._pod_log(newest.get(host), LOG_TAIL_LINES) for host in hosts}
            if self.workload.stop(self.connection, current, state, tails):
                return state
        return state  # the set kept changing under us; the next poll records it

    # -- logs, per host --------------------------------------------------------------------

    def _hosts(self, record: JobRecord, host: HostSelection) -> list[int]:
        return selected_hosts(record.job_id, parse_accelerator(record.accelerator).hosts, host)

    def _pods_by_host(self, record: JobRecord) -> dict[int, Obj]:
        """The newest pod of each host: one LIST for the whole slice."""
        return newest_by_host(self.connection.list_pods(job_selector(record.job_id, self.app)))

    def _pod_for(self, record: JobRecord, host: int) -> Obj | None:
        return self._pods_by_host(record).get(host)

    def _host_logs(
        self, record: JobRecord, hosts: list[int], tail: int | None, lws: Obj | None
    ) -> dict[int, str]:
        """Each host's output: once the slice is stopped (its pods going or gone), the end of
        it recorded on ``lws`` (its LeaderWorkerSet, as read); before, its pod's."""
        if lws is not None and recorded_state(lws) is not None:
            recorded = {host: (recorded_log(lws, host) or "") for host in hosts}
            return {
                host: "".join(text.splitlines(keepends=True)[-tail:] if tail else text)
                for host, text in recorded.items()
            }
        pods = self._pods_by_host(record)
        return {host: self._pod_log(pods.get(host), tail) for host in hosts}

    def _pod_log(self, pod: Obj | None, tail: int | None) -> str:
        if pod is None:
            return ""
        return self.connection.pod_log(pod, tail=tail, previous=_restarted(pod))

    # -- every way in names the slice by its LeaderWorkerSet's (possibly shortened) name ----

    def submit(self, record: JobRecord, *, env: Mapping[str, str] = NO_ENV) -> None:
        super().submit(slice_record(record), env=env)

    def statuses(self, records: Sequence[JobRecord]) -> dict[str, JobState]:
        return super().statuses([slice_record(record) for record in records])

    def delete(self, record: JobRecord, *, timeout: float, poll_interval: float) -> None:
        super().delete(slice_record(record), timeout=timeout, poll_interval=poll_interval)

    def logs(
        self, record: JobRecord, *, tail: int | None = None, host: HostSelection = None
    ) -> str:
        record = slice_record(record)
        lws = self.workload.get(self.connection, record.k8s_name)
        hosts = self._hosts(record, _failed_host(lws) if host is None else host)
        if tail is not None and tail <= 0:
            return ""
        texts = self._host_logs(record, hosts, tail, lws)
        if host != "all":
            return texts[hosts[0]]
        return "".join(
            "".join(prefixed(i, iter(texts[i].splitlines(keepends=True)))) for i in hosts
        )

    def _stream(self, pod: Obj) -> Iterator[str]:
        if _restarted(pod):  # the first run is over; the running container only waits
            return iter(self.connection.pod_log(pod, previous=True).splitlines(keepends=True))
        return super()._stream(pod)

    def follow_logs(self, record: JobRecord, *, host: HostSelection = None) -> Iterator[str]:
        record = slice_record(record)
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
            lws = self.workload.get(self.connection, record.k8s_name)
            yield from self._host_logs(record, [host], None, lws)[host].splitlines(keepends=True)


def _failed_host(lws: Obj | None) -> int | None:
    """The host whose failure stopped the slice, as recorded on it (None while it runs)."""
    state = None if lws is None else recorded_state(lws)
    return None if state is None else state.failed_host
