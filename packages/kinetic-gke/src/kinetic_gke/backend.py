"""``GKEBackend``: each Kinetic job is one Kubernetes Job (one JobSet on several hosts, see
:mod:`kinetic_gke.jobset_jobs`); its artifacts live in a GCS bucket.

What is Job-specific is the workload (:class:`kinetic_gke.k8s.JobWorkload`) and the manifest;
polling, logs, deletion with confirmation and listing by label work for any workload, so a
LeaderWorkerSet backend reuses them with its own workload.
"""

import functools
import os
import re
from collections.abc import Mapping, Sequence
from typing import ClassVar

from kinetic_gke import arrays, backend_settings
from kinetic_gke import settings as declared
from kinetic_gke.array_batches import ArrayBatches
from kinetic_gke.array_polls import ArrayPollMemory
from kinetic_gke.cluster_checks import ClusterChecks
from kinetic_gke.deletion import await_gone, delete_confirmed
from kinetic_gke.job_polls import poll_jobs
from kinetic_gke.jobset_jobs import JobSets, host_group
from kinetic_gke.jobsets import HostGroup
from kinetic_gke.k8s import (
    ClusterConnection,
    JobWorkload,
    Obj,
    Workload,
    get_credentials_command,
    kube_context_name,
)
from kinetic_gke.k8s.env_secrets import create_with_env
from kinetic_gke.labels import (
    APP,
    JOB_ID,
    group_selector,
    job_labels,
    job_selector,
)
from kinetic_gke.manifests import RUNTIME_COMMAND, PodOptions, job_manifest
from kinetic_gke.pod_logs import PodReads
from kinetic_gke.queueing.flavor_order import check_placeable
from kinetic_gke.queueing.kueue_view import KueueView
from kinetic_gke.queueing.states import queued_states
from kinetic_protocol import (
    NO_ENV,
    Accelerator,
    BackendSettings,
    BatchManifest,
    Capabilities,
    ConfigError,
    JobRecord,
    JobState,
    Keyring,
    Preparation,
    PrepareRequest,
    parse_accelerator,
)
from kinetic_protocol.settings import SettingSpec

__all__ = ["GKEBackend", "check_single_host", "default_bucket_name"]


def default_bucket_name(project: str, cluster: str) -> str:
    """The jobs bucket of a cluster: ``<project>-kinetic-<cluster>``, a valid bucket name."""
    name = re.sub(r"[^a-z0-9-]+", "-", f"{project}-kinetic-{cluster}".lower()).strip("-")
    return name[:63].rstrip("-")


def check_single_host(accelerator: Accelerator) -> None:
    """Refuse a slice that spans hosts: one pod holds one host's share of it."""
    if accelerator.multi_host:
        raise ConfigError(
            f"Accelerator {accelerator.name!r} spans {accelerator.hosts} TPU hosts, and "
            "the gke backend runs single-host jobs. Use backend='pathways' for a "
            "multi-host slice, or a single-host size (`kinetic accelerators` lists them)."
        )


class GKEBackend(ClusterChecks, PodReads):
    """Runs prepared jobs as Kubernetes Jobs on a GKE cluster.

    Credentials come from the user's kubeconfig (``KUBECONFIG`` or ``~/.kube/config``), context
    ``gke_<project>_<zone>_<cluster>`` unless ``KINETIC_KUBE_CONTEXT`` names another; the file is
    only read. Pass ``connection`` to use an already configured one.
    """

    name = "gke"
    capabilities: ClassVar[Capabilities] = Capabilities(
        container_image=True,
        volumes=True,
        fuse=True,
        debug_port_forward=True,
        per_host_logs=True,
        host_groups=True,
        capacity_choices=True,
        array_batches=arrays.MAX_INDEXES,
    )
    declared_settings: ClassVar[tuple[SettingSpec, ...]] = declared.SETTINGS
    related_backends: ClassVar[tuple[str, ...]] = ("pathways",)
    """Backends whose jobs share this cluster and store: ``list_jobs`` lists theirs too."""
    workload: Workload = JobWorkload()
    app: ClassVar[str] = "kinetic"
    """The ``app`` label of this backend's objects and pods."""

    def __init__(
        self,
        settings: BackendSettings,
        *,
        connection: ClusterConnection | None = None,
        pod_options: PodOptions | None = None,
        unschedulable_timeout: float | None = None,
        command: tuple[str, ...] = RUNTIME_COMMAND,
    ) -> None:
        if not settings.project and settings.store_uri is None:
            raise ConfigError(
                "The gke backend needs a GCP project: pass project= to @kinetic.run, set "
                "KINETIC_PROJECT, or create a profile with `kinetic profile create`."
            )
        self._settings = settings
        self._environ = settings.environ(declared.SETTINGS)
        """The backend's variables as they were when it was built: it reads no other."""
        self._given_connection = connection
        self._connections: dict[tuple[str, str], ClusterConnection] = {}
        self.pod_options = pod_options or backend_settings.pod_options(self._environ)
        """What every pod gets."""
        self._terminal: dict[str, JobState] = {}
        """The first terminal state seen per object uid: a later read, after Kubernetes removed
        the pod that explained it, must not replace a specific reason with a vague one."""
        self._unschedulable_timeout = backend_settings.unschedulable_timeout(
            unschedulable_timeout, self._environ
        )
        self._command = command
        self._fuse_checked: set[str] = set()
        self.poll_bounds = backend_settings.poll_bounds(declared.POLL.value(self._environ) or "")
        self._keyrings: dict[int, Keyring] = {}
        self._kueue = KueueView(lambda: self.connection)
        self._array_polls = ArrayPollMemory()
        """What polls of array batches learned: the next lists only pods that can change."""

    @property
    def kueue(self) -> KueueView:
        """Kueue on this backend's cluster (whether it serves it is read once, when first
        needed)."""
        return self._kueue

    @property
    def store_uri(self) -> str:
        if self._settings.store_uri:
            return self._settings.store_uri
        return f"gs://{default_bucket_name(self._settings.project, self._settings.cluster)}"

    @property
    def connection(self) -> ClusterConnection:
        """The cluster connection, rebuilt if ``KUBECONFIG``/``KINETIC_KUBE_CONTEXT`` changed."""
        if self._given_connection is not None:
            return self._given_connection
        settings = self._settings
        context = self._context_name()
        key = (os.environ.get("KUBECONFIG", ""), context)
        if key not in self._connections:
            self._connections[key] = ClusterConnection.from_kubeconfig(
                context=context,
                namespace=settings.namespace,
                get_credentials=get_credentials_command(
                    settings.project, settings.zone, settings.cluster
                ),
            )
        return self._connections[key]

    @property
    def _arrays(self) -> ArrayBatches:
        return ArrayBatches(self.connection, self.app, self._array_polls)

    def _context_name(self) -> str:
        settings = self._settings
        return declared.KUBE_CONTEXT.from_env() or kube_context_name(
            settings.project, settings.zone, settings.cluster
        )

    # -- the Backend protocol ----------------------------------------------------------------

    def check_accelerator(self, accelerator: Accelerator) -> None:
        """Refuse an accelerator this backend cannot run (before anything is written)."""
        check_single_host(accelerator)

    def _check_shape(self, accelerator: Accelerator, nodes: int, slices: int) -> None:
        """Refuse what cannot run here: one host, or a group of them (a JobSet)."""
        if nodes == 1 and slices == 1:
            self.check_accelerator(accelerator)
        else:
            HostGroup.of(accelerator, nodes=nodes, slices=slices)

    def check_host_groups(self, nodes: int, slices: int) -> None:
        """Any counts run (as a JobSet); their fit with the accelerator: ``_check_shape``."""

    def prepare(self, request: PrepareRequest) -> Preparation:
        """Refuse what cannot run here, then resolve the jobs' image (built when missing)."""
        self.check_host_groups(request.nodes, request.slices)
        self._check_shape(request.accelerator, request.nodes, request.slices)
        cluster = self._settings.cluster or self._context_name()
        queue = self.kueue.resolve(request.queue, request.priority, cluster)
        check_placeable(request, self.kueue, self.capacity, queue=queue, cluster=cluster)
        if request.fuse:
            self.check_fuse_driver()
        from kinetic_gke.images import resolve_image

        image = resolve_image(
            container_image=(
                request.container_image or declared.CONTAINER_IMAGE.from_env(self._environ)
            ),
            base_image_repo=request.base_image_repo
            or declared.BASE_IMAGE_REPO.value(self._environ),
            accelerator=request.accelerator,
            project_root=request.project_root,
            project=self._settings.project,
            zone=self._settings.zone,
            # Builds run as the account `kinetic up` made only for a bucket it can write logs
            # to; otherwise Cloud Build's default account keeps its default logs.
            build_service_account=(
                self._settings.build_service_account if self.store_uri.startswith("gs://") else ""
            ),
            logs_bucket=f"{self.store_uri.rstrip('/')}/build-logs",
            runtime_extras=request.runtime_extras,
        )
        return Preparation(image=image.uri, requirements=tuple(image.requirements), queue=queue)

    def signing_keys(self, *, create: bool, refresh: bool = False) -> Keyring:
        """The namespace's keyring, read from its Secret once per connection (and again on
        ``refresh``)."""
        from kinetic_gke.k8s.signing import namespace_keyring

        connection = self.connection
        keyring = None if refresh else self._keyrings.get(id(connection))
        if keyring is None:
            keyring = namespace_keyring(connection, create=create)
            self._keyrings[id(connection)] = keyring
        return keyring

    def replace_signing_keys(self, keyring: Keyring) -> None:
        from kinetic_gke.k8s.signing import replace_namespace_keyring

        replace_namespace_keyring(self.connection, keyring)
        self._keyrings[id(self.connection)] = keyring

    def manifest(
        self,
        record: JobRecord,
        *,
        env_secret: str | None = None,
        accelerator: Accelerator | None = None,
    ) -> Obj:
        """The object that runs ``record``; ``accelerator``: the record's, parsed once where
        the job entered (``submit``)."""
        return job_manifest(
            record,
            accelerator=accelerator,
            options=self.pod_options,
            command=self._command,
            env_secret=env_secret,
        )

    def submit(self, record: JobRecord, *, env: Mapping[str, str] = NO_ENV) -> None:
        """Create the job's object; with captured ``env``, first the Secret its pods read the
        values from, owned by the object once it exists (see ``k8s.env_secrets``)."""
        if not record.image_uri:
            raise ConfigError(f"Job {record.job_id} has no container image to run on GKE.")
        accelerator = parse_accelerator(record.accelerator)  # once, on its way to the pod
        self._check_shape(accelerator, record.nodes, record.slices)
        if any(mount.kind == "gcsfuse" for mount in record.mounts):
            self.check_fuse_driver()
        self.signing_keys(create=True)  # its pods mount them: never create one without them
        group = host_group(record, accelerator)
        if group is not None:
            JobSets(self.connection, self.app).create(
                record,
                group,
                accelerator=accelerator,
                options=self.pod_options,
                command=self._command,
                env=env,
            )
            return
        create_with_env(
            self.connection,
            self.workload,
            record.k8s_name,
            lambda secret: self.manifest(record, env_secret=secret, accelerator=accelerator),
            labels=job_labels(record, self.app),
            env=env,
        )

    def submit_array(self, manifest: BatchManifest, *, env: Mapping[str, str] = NO_ENV) -> None:
        """Create the batch's Indexed Job (see :mod:`kinetic_gke.arrays`), or Jobs when it
        holds more inputs than one may; with captured ``env``, first the Secret every index
        reads the values from."""
        record = manifest.child_record(0, 0)
        if not record.image_uri:
            raise ConfigError(f"Batch {manifest.group_id} has no container image to run on GKE.")
        if not arrays.expressible(manifest):
            raise ConfigError(
                f"Batch {manifest.group_id} cannot be Indexed Jobs (fail_fast that lets "
                f"running children finish, fail_fast over {manifest.array_parts} Jobs, or "
                f"{manifest.array_part_size} inputs per Job, more than {arrays.MAX_INDEXES}); "
                "submit it one job per input."
            )
        accelerator = parse_accelerator(record.accelerator)  # once, for every Job of the batch
        self.check_accelerator(accelerator)
        if any(mount.kind == "gcsfuse" for mount in record.mounts):
            self.check_fuse_driver()
        self.signing_keys(create=True)
        self._arrays.create(
            manifest,
            accelerator=accelerator,
            options=self.pod_options,
            command=self._command,
            env=env,
        )

    def delete_array(
        self, manifest: BatchManifest, *, timeout: float, poll_interval: float
    ) -> None:
        """Delete the batch's Indexed Jobs and every pod of them; confirm they are gone."""
        names = [manifest.array_part_name(part) for part in range(manifest.array_parts)]
        self._delete_confirmed(
            names,
            group_selector(manifest.group_id, self.app),
            workload=arrays.JOBS,
            timeout=timeout,
            poll_interval=poll_interval,
        )

    def statuses(self, records: Sequence[JobRecord]) -> dict[str, JobState]:
        in_arrays = [record for record in records if record.in_array]
        found = (
            self._arrays.statuses(
                in_arrays,
                unschedulable_timeout=self._unschedulable_timeout,
                queued=lambda seen: queued_states(self.kueue, seen, "Job"),
            )
            if in_arrays
            else {}
        )
        groups = [record for record in records if host_group(record) is not None]
        queued = functools.partial(queued_states, self.kueue, kind="JobSet")
        jobsets = JobSets(self.connection, self.app)
        for record, obj, state in jobsets.poll(groups, self._unschedulable_timeout, queued):
            found[record.job_id] = self._remember(obj, state)
        if len(in_arrays) + len(groups) < len(records):
            singles = [r for r in records if not r.in_array and host_group(r) is None]
            found |= self._job_statuses(singles)
        return found

    def _job_statuses(self, records: Sequence[JobRecord]) -> dict[str, JobState]:
        if not records:
            return {}
        workload = self.workload
        poll = poll_jobs(
            self.connection,
            workload,
            records,
            app=self.app,
            unschedulable_timeout=self._unschedulable_timeout,
        )
        queued = queued_states(self.kueue, poll.seen, workload.kind)
        return {
            record.job_id: self._remember(
                obj,
                self._settle(
                    record, obj, poll.pods.get(record.job_id, []), queued.get(record.job_id, state)
                ),
            )
            for record, obj, state in poll.seen
        }

    def _settle(
        self, record: JobRecord, obj: Obj | None, pods: list[Obj], state: JobState
    ) -> JobState:
        """What to do on seeing ``state``; the state to report. A subclass may stop what is
        still running, or defer to an outcome another reader recorded first."""
        return state

    def _remember(self, obj: Obj | None, state: JobState) -> JobState:
        uid = (obj or {}).get("metadata", {}).get("uid")
        if uid is None or not state.status.is_terminal:
            return state
        return self._terminal.setdefault(uid, state)

    def delete(self, record: JobRecord, *, timeout: float, poll_interval: float) -> None:
        """Delete the job's object and its pods (foreground) and confirm both are gone.

        One index of an array Job loses only its pods: the Job, which its siblings share,
        keeps the index's outcome (a running index is started again by the job controller;
        ``docs/batches.md`` says what that means for cancelling one child).
        """
        if record.in_array:
            namespace, shortest = self.connection.namespace, self.poll_bounds[0]
            self._arrays.delete_index(
                record,
                lambda present, what, pods: await_gone(
                    present,
                    what,
                    pods,
                    namespace=namespace,
                    timeout=timeout,
                    poll_interval=poll_interval,
                    shortest=shortest,
                ),
            )
            return
        if host_group(record) is not None:
            JobSets(self.connection, self.app).delete(
                record, timeout=timeout, poll_interval=poll_interval, shortest=self.poll_bounds[0]
            )
            return
        self._delete_confirmed(
            [record.k8s_name],
            job_selector(record.job_id, self.app),
            workload=self.workload,
            timeout=timeout,
            poll_interval=poll_interval,
        )

    def _delete_confirmed(
        self,
        names: Sequence[str],
        pods: str,
        *,
        workload: Workload,
        timeout: float,
        poll_interval: float,
    ) -> None:
        delete_confirmed(
            self.connection,
            names,
            pods,
            workload=workload,
            timeout=timeout,
            poll_interval=poll_interval,
            shortest=self.poll_bounds[0],
        )

    def list_job_ids(self) -> list[str]:
        """Every job with an object: its own, or an index of a batch's array Job."""
        objects = self.workload.list_matching(self.connection, f"{APP}={self.app}")
        live = [obj for obj in objects if not obj["metadata"].get("deletionTimestamp")]
        ids = {obj["metadata"].get("labels", {}).get(JOB_ID, "") for obj in live}
        ids |= self._arrays.job_ids(live)  # an index is listed while it has a pod
        ids |= JobSets(self.connection, self.app).job_ids()
        return sorted(ids - {""})
