"""``GKEBackend``: each Kinetic job is one Kubernetes Job; its artifacts live in a GCS bucket."""

import os
import re
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

from kinetic_gke._k8s import KubeApi, get_credentials_command, kube_context_name
from kinetic_gke.labels import JOB_ID, group_selector, job_selector
from kinetic_gke.manifests import RUNTIME_COMMAND, job_manifest
from kinetic_gke.status import job_state, needs_pods
from kinetic_protocol import (
    BackendError,
    BackendSettings,
    ConfigError,
    JobRecord,
    JobState,
    parse_accelerator,
)

__all__ = ["GKEBackend", "default_bucket_name"]

DEFAULT_UNSCHEDULABLE_TIMEOUT = 15 * 60.0
"""A fresh accelerator node pool can take minutes to scale up; past this, say why and fail."""


def default_bucket_name(project: str, cluster: str) -> str:
    """The jobs bucket of a cluster: ``<project>-kinetic-<cluster>``, a valid bucket name."""
    name = re.sub(r"[^a-z0-9-]+", "-", f"{project}-kinetic-{cluster}".lower()).strip("-")
    return name[:63].rstrip("-")


def _poll_bounds(raw: str) -> tuple[float, float]:
    try:
        low, high = (float(part) for part in raw.split(","))
    except ValueError:
        low = high = -1.0
    if not 0 < low <= high:
        raise ConfigError(
            f"KINETIC_GKE_POLL must be 'LOW,HIGH' seconds with 0 < LOW <= HIGH, got {raw!r}."
        )
    return low, high


def _unschedulable_timeout(given: float | None) -> float:
    if given is not None:
        return given
    raw = os.environ.get("KINETIC_UNSCHEDULABLE_TIMEOUT")
    if not raw:
        return DEFAULT_UNSCHEDULABLE_TIMEOUT
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(
            f"KINETIC_UNSCHEDULABLE_TIMEOUT must be a number of seconds, got {raw!r}."
        ) from None


class GKEBackend:
    """Runs prepared jobs as Kubernetes Jobs on a GKE cluster.

    Credentials come from the user's kubeconfig (``KUBECONFIG`` or ``~/.kube/config``), context
    ``gke_<project>_<zone>_<cluster>`` unless ``KINETIC_KUBE_CONTEXT`` names another; the file is
    only read. Pass ``api`` to use an already configured client.
    """

    name = "gke"

    def __init__(
        self,
        settings: BackendSettings,
        *,
        api: KubeApi | None = None,
        service_account: str | None = None,
        unschedulable_timeout: float | None = None,
        command: tuple[str, ...] = RUNTIME_COMMAND,
    ) -> None:
        if not settings.project and settings.store_uri is None:
            raise ConfigError(
                "The gke backend needs a GCP project: pass project= to @kinetic.run, set "
                "KINETIC_PROJECT, or create a profile with `kinetic profile create`."
            )
        self._settings = settings
        self._given_api = api
        self._apis: dict[tuple[str, str], KubeApi] = {}
        self._service_account = service_account or os.environ.get("KINETIC_SERVICE_ACCOUNT")
        self._unschedulable_timeout = _unschedulable_timeout(unschedulable_timeout)
        self._command = command
        poll = os.environ.get("KINETIC_GKE_POLL")
        self.poll_bounds = _poll_bounds(poll) if poll else (1.0, 10.0)

    @property
    def store_uri(self) -> str:
        if self._settings.store_uri:
            return self._settings.store_uri
        return f"gs://{default_bucket_name(self._settings.project, self._settings.cluster)}"

    @property
    def api(self) -> KubeApi:
        """The cluster client, rebuilt if ``KUBECONFIG``/``KINETIC_KUBE_CONTEXT`` changed."""
        if self._given_api is not None:
            return self._given_api
        settings = self._settings
        context = os.environ.get("KINETIC_KUBE_CONTEXT") or kube_context_name(
            settings.project, settings.zone, settings.cluster
        )
        key = (os.environ.get("KUBECONFIG", ""), context)
        if key not in self._apis:
            self._apis[key] = KubeApi.from_kubeconfig(
                context=context,
                namespace=settings.namespace,
                get_credentials=get_credentials_command(
                    settings.project, settings.zone, settings.cluster
                ),
            )
        return self._apis[key]

    # -- the Backend protocol ----------------------------------------------------------------

    def submit(self, record: JobRecord) -> None:
        if not record.image_uri:
            raise ConfigError(f"Job {record.job_id} has no container image to run on GKE.")
        accelerator = parse_accelerator(record.accelerator)
        if accelerator.multi_host:
            # One pod holds one host's share of the slice; the other hosts would never join.
            raise ConfigError(
                f"Accelerator {record.accelerator!r} spans {accelerator.hosts} TPU hosts, and "
                "the gke backend runs single-host jobs. Use backend='pathways' for a "
                "multi-host slice, or a single-host size (`kinetic accelerators` lists them)."
            )
        manifest = job_manifest(
            record, service_account=self._service_account, command=self._command
        )
        self.api.create_job(manifest)  # "already exists" means a retried submit: fine

    def statuses(self, records: Sequence[JobRecord]) -> dict[str, JobState]:
        if not records:
            return {}
        selector = self._selector_for(records)
        jobs = {job["metadata"]["name"]: job for job in self.api.list_jobs(selector)}
        wanted = [jobs.get(record.k8s_name) for record in records]
        pods_by_job: dict[str, list[dict[str, Any]]] = defaultdict(list)
        if any(job is not None and needs_pods(job) for job in wanted):
            for pod in self.api.list_pods(selector):
                pods_by_job[pod["metadata"].get("labels", {}).get(JOB_ID, "")].append(pod)
        return {
            record.job_id: job_state(
                job,
                pods_by_job.get(record.job_id, []),
                unschedulable_timeout=self._unschedulable_timeout,
            )
            for record, job in zip(records, wanted, strict=True)
        }

    @staticmethod
    def _selector_for(records: Sequence[JobRecord]) -> str:
        """One LIST covers them all: by job id, by the batch's group, or every Kinetic job."""
        if len(records) == 1:
            return job_selector(records[0].job_id)
        groups = {record.group_id for record in records}
        if len(groups) == 1 and None not in groups:
            return group_selector(str(groups.pop()))
        return "app=kinetic"

    def _newest_pod(self, record: JobRecord) -> dict[str, Any] | None:
        pods = self.api.list_pods(job_selector(record.job_id))
        return max(pods, key=lambda p: p["metadata"].get("creationTimestamp") or "", default=None)

    def logs(self, record: JobRecord, *, tail: int | None = None) -> str:
        pod = self._newest_pod(record)
        if pod is None or pod.get("status", {}).get("phase", "Pending") == "Pending":
            return ""  # not started (or stuck pulling its image): nothing written yet
        return self.api.pod_log(pod["metadata"]["name"], tail=tail)

    def follow_logs(self, record: JobRecord) -> Iterator[str]:
        """Stream the pod's output, then return once the Job is terminal.

        The stream ends when the container exits, a moment before the Job records it; waiting
        for that keeps the promise that the job has ended when this returns.
        """
        low, high = self.poll_bounds
        delay = low
        streamed = False
        while True:
            pod = None if streamed else self._newest_pod(record)
            phase = (pod or {}).get("status", {}).get("phase")
            if pod is not None and phase in ("Running", "Succeeded", "Failed"):
                yield from self.api.follow_pod_log(pod["metadata"]["name"])
                streamed, delay = True, low
            if self.statuses([record])[record.job_id].status.is_terminal:
                return
            time.sleep(delay)
            delay = min(delay * 2, high)

    def delete(self, record: JobRecord, *, timeout: float, poll_interval: float) -> None:
        """Delete the Job and its pods (foreground) and confirm both are gone.

        A finished Job usually goes within a moment, so the confirmation polls start at the
        short poll bound and double, never more than ``poll_interval`` apart.
        """
        self.api.delete_job(record.k8s_name)
        deadline = time.monotonic() + timeout
        delay = min(self.poll_bounds[0], poll_interval)
        while self.api.get_job(record.k8s_name) is not None or self.api.list_pods(
            job_selector(record.job_id)
        ):
            if time.monotonic() >= deadline:
                raise BackendError(
                    f"Job {record.k8s_name} in namespace {self.api.namespace} was still present "
                    f"{timeout:g}s after its deletion; check it with `kubectl get job,pods "
                    f"-n {self.api.namespace} -l {job_selector(record.job_id)}`."
                )
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, poll_interval)

    def list_job_ids(self) -> list[str]:
        jobs = self.api.list_jobs("app=kinetic")
        live = [job for job in jobs if not job["metadata"].get("deletionTimestamp")]
        return sorted({job["metadata"].get("labels", {}).get(JOB_ID, "") for job in live} - {""})
