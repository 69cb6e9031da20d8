"""A gke backend's reads of its jobs' pods: their output (read, or followed until the job
ends) and the port forward to a job's debug server. :class:`~kinetic_gke.GKEBackend` has
them from :class:`PodReads`; a backend whose job has a pod per host says how many hosts it has
(``_host_count``) and which pod is whose (``_pod_for``): ``host="all"`` then reads or follows
every host's, each line prefixed ``[host i]``.
"""

import queue
import shutil
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from typing import ClassVar

from kinetic_gke.jobset_jobs import JobSets, host_group
from kinetic_gke.k8s import ClusterConnection, Obj
from kinetic_gke.labels import pod_selector
from kinetic_protocol import BackendError, ConfigError, HostSelection, JobRecord, JobState
from kinetic_protocol.host_groups import selected_hosts

__all__ = ["PodReads", "prefixed"]


def prefixed(host: int, lines: Iterator[str]) -> Iterator[str]:
    """One host's lines as ``host="all"`` shows them."""
    for line in lines:
        yield f"[host {host}] {line}"


class PodReads:
    """Reads a backend's jobs' pods; the backend supplies its cluster connection, its
    statuses and its poll bounds."""

    app: ClassVar[str] = "kinetic"
    poll_bounds: tuple[float, float]

    @property
    def connection(self) -> ClusterConnection:
        raise NotImplementedError

    def _context_name(self) -> str:
        raise NotImplementedError

    def statuses(self, records: Sequence[JobRecord]) -> dict[str, JobState]:
        raise NotImplementedError

    def _pods_selector(self, record: JobRecord) -> str:
        return pod_selector(record, self.app)

    def _newest_pod(self, record: JobRecord) -> Obj | None:
        pods = self.connection.list_pods(self._pods_selector(record))
        return max(pods, key=lambda p: p["metadata"].get("creationTimestamp") or "", default=None)

    def port_forward_command(
        self, record: JobRecord, local_port: int, remote_port: int
    ) -> list[str]:
        """``kubectl port-forward`` from ``local_port`` here to ``remote_port`` of the job's
        running pod (``Capabilities.debug_port_forward``; ``kinetic.debug`` runs it)."""
        if shutil.which("kubectl") is None:
            raise ConfigError(
                "Forwarding the debug port needs kubectl, which is not on PATH. Install it "
                "with `gcloud components install kubectl` (or your package manager)."
            )
        connection = self.connection
        pod = self._pod_for(record, 0)  # a multi-host job's debugger is its leader's
        phase = (pod or {}).get("status", {}).get("phase")
        if pod is None or phase != "Running":
            raise BackendError(
                f"Job {record.job_id} has no running pod to forward the debug port to "
                f"(pod phase: {phase or 'none'}). `kinetic jobs status {record.job_id}` says why."
            )
        pod_name = pod["metadata"]["name"]
        command = ["kubectl", "port-forward", f"pod/{pod_name}", f"{local_port}:{remote_port}"]
        command += ["-n", connection.namespace]
        command += ["--context", connection.context or self._context_name()]
        if connection.kubeconfig is not None:
            command += ["--kubeconfig", str(connection.kubeconfig)]
        return command

    def _pod_for(self, record: JobRecord, host: int) -> Obj | None:
        """The pod whose output is host ``host``'s (a Job has one host; a JobSet one each)."""
        if host_group(record) is None:
            return self._newest_pod(record)
        return JobSets(self.connection, self.app).pods_by_host(record).get(host)

    def _host_count(self, record: JobRecord) -> int:
        """How many hosts ``record`` runs on (each with its own pod and output)."""
        group = host_group(record)
        return 1 if group is None else group.hosts

    def _hosts(self, record: JobRecord, host: HostSelection) -> list[int]:
        """The hosts ``host`` selects (None: host 0; ``"all"``: every one)."""
        return selected_hosts(record.job_id, self._host_count(record), host)

    def logs(
        self, record: JobRecord, *, tail: int | None = None, host: HostSelection = None
    ) -> str:
        """One host's output (None: the host whose failure ended a job of several, else host
        0), or every host's (``"all"``)."""
        if host is None and self._host_count(record) > 1:
            host = self.statuses([record])[record.job_id].failed_host
        hosts = self._hosts(record, host)
        if tail is not None and tail <= 0:
            return ""
        texts = {index: self._host_log(record, index, tail) for index in hosts}
        if host != "all" or len(hosts) == 1:
            return texts[hosts[0]]
        return "".join(
            "".join(prefixed(i, iter(texts[i].splitlines(keepends=True)))) for i in hosts
        )

    def _host_log(self, record: JobRecord, host: int, tail: int | None) -> str:
        pod = self._pod_for(record, host)
        return "" if pod is None else self.connection.pod_log(pod, tail=tail)

    def follow_logs(self, record: JobRecord, *, host: HostSelection = None) -> Iterator[str]:
        hosts = self._hosts(record, host)
        if host != "all" or len(hosts) == 1:
            return self._follow_host(record, hosts[0])
        return self._follow_all(record, hosts)

    def _follow_all(self, record: JobRecord, hosts: list[int]) -> Iterator[str]:
        """Every host's lines as they come, prefixed, until the job has ended."""
        lines: queue.Queue[str | None] = queue.Queue()

        def pump(host: int) -> None:
            try:
                for line in prefixed(host, self._follow_host(record, host)):
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

    def _follow_host(self, record: JobRecord, host: int) -> Iterator[str]:
        """Stream one host's output, then return once the job is terminal.

        The stream ends when the container exits, a moment before the Job records it; waiting
        for that keeps the promise that the job has ended when this returns. A pod that ran
        and ended between two looks (seen pending, then the job terminal) is read once more:
        its whole log is there to stream.
        """
        low, high = self.poll_bounds
        delay = low
        streamed = False
        while True:
            if not streamed:
                streamed = yield from self._stream_started(record, host)
                if streamed:
                    delay = low
            if self.statuses([record])[record.job_id].status.is_terminal:
                if not streamed:
                    yield from self._stream_started(record, host)
                return
            time.sleep(delay)
            delay = min(delay * 2, high)

    def _stream_started(self, record: JobRecord, host: int) -> Generator[str, None, bool]:
        """Stream the host's pod if it has started; whether it had."""
        pod = self._pod_for(record, host)
        phase = (pod or {}).get("status", {}).get("phase")
        if pod is None or phase not in ("Running", "Succeeded", "Failed"):
            return False
        yield from self._stream(pod)
        return True

    def _stream(self, pod: Obj) -> Iterator[str]:
        """A started pod's output as it is written, until its container exits."""
        return self.connection.follow_pod_log(pod["metadata"]["name"])
