"""The array half of the gke backend (``kinetic_protocol.ArrayBackend``): a batch's one Indexed
Job created, each of its attempts read, one index's pods removed, its indexes listed as jobs.

What an Indexed Job is and how each index's state is read off it is :mod:`kinetic_gke.arrays`
and :mod:`kinetic_gke.array_states`; which pods a poll lists is :mod:`kinetic_gke.array_polls`;
this is the cluster traffic around it, a few API calls per batch whatever its size.
"""

import contextlib
import functools
import gc
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from kinetic_gke import array_states, arrays
from kinetic_gke.array_polls import ArrayPollMemory, KnownPods
from kinetic_gke.k8s import ClusterConnection, Obj
from kinetic_gke.k8s.env_secrets import create_with_env
from kinetic_gke.k8s.errors import Conflict, NotFound
from kinetic_gke.k8s.pod_states import list_pod_states
from kinetic_gke.labels import APP, group_selector, pod_selector
from kinetic_gke.manifests import PodOptions
from kinetic_gke.queueing.states import Completion
from kinetic_protocol import Accelerator, BatchManifest, JobRecord, JobState

__all__ = ["ArrayBatches", "AwaitGone"]

AwaitGone = Callable[[Callable[[], bool], str, str], None]
"""Polls ``present()`` until it is False (``what`` and a pod selector name it in the error
when it is not, in time): the backend's confirmation of a deletion."""


_NOTHING_KNOWN = KnownPods([], frozenset(), "")


def _annotations(obj: Obj) -> dict[str, str]:
    return obj["metadata"].get("annotations") or {}


def _local_index(record: JobRecord) -> int:
    """The index of ``record``'s input in its own array Job."""
    return int(record.group_index or 0) - record.array_offset


def _part_job(
    manifest: BatchManifest,
    part: int,
    accelerator: Accelerator,
    options: PodOptions,
    command: tuple[str, ...],
) -> Callable[[str | None], Obj]:
    """Job ``part`` of the batch, given the name of the Secret of captured values (if any)."""
    return lambda secret: arrays.array_job_manifest(
        manifest,
        part,
        accelerator=accelerator,
        options=options,
        command=command,
        env_secret=secret,
    )


def _delete_index_pods(connection: ClusterConnection, selector: str) -> list[Obj]:
    """Delete the pods ``selector`` finds (one index's: a cleanup of that child); returns the
    ones that were still there."""
    left = []
    for pod in connection.list_pods(selector):
        left.append(pod)
        with contextlib.suppress(NotFound):
            connection.send(
                f"deleting pod {pod['metadata']['name']}",
                connection.core.delete_namespaced_pod,
                pod["metadata"]["name"],
                connection.namespace,
            )
    return left


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector paused while a poll decodes a batch's pods and reads their
    states: 10,000 pods are some 20,000 tracked dicts, none in a cycle and all freed by
    reference counting when the poll returns, yet enough new objects to have the collector
    walk the whole heap during the poll (0.1 to 0.2 s of a 10,000-child poll, measured). A
    collector the caller had turned off stays off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@dataclass(frozen=True)
class ArrayBatches:
    """A backend's array batches in one cluster connection, for its ``app`` label."""

    connection: ClusterConnection
    app: str
    memory: ArrayPollMemory = field(default_factory=ArrayPollMemory)
    """What earlier polls learned: the backend's own, kept between polls."""

    def create(
        self,
        manifest: BatchManifest,
        *,
        accelerator: Accelerator,
        options: PodOptions,
        command: tuple[str, ...],
        env: Mapping[str, str],
    ) -> None:
        """Create the batch's Indexed Jobs (one, unless the batch holds more inputs than a
        Job) on ``accelerator`` (the batch's, parsed); with captured ``env``, first the
        Secret each Job's indexes read the values from. "Already exists" is success (a
        resumed submission)."""
        for part in range(manifest.array_parts):
            create_with_env(
                self.connection,
                arrays.JOBS,
                manifest.array_part_name(part),
                _part_job(manifest, part, accelerator, options, command),
                labels=arrays.array_labels(manifest, self.app),
                env=env,
            )

    def statuses(
        self,
        records: Sequence[JobRecord],
        *,
        unschedulable_timeout: float,
        queued: Completion = lambda seen: {},
    ) -> dict[str, JobState]:
        """Attempts of array Jobs' indexes: one LIST of the batch's Jobs and at most one of
        its pods per batch, however many of its children (and Jobs) are asked about; the
        pods listed are those that can still change (:mod:`kinetic_gke.array_polls`).
        ``queued`` completes the states of Jobs a queue admits (``queueing.states``)."""
        with _collector_paused():
            return self._statuses(records, unschedulable_timeout, queued)

    def _statuses(
        self, records: Sequence[JobRecord], unschedulable_timeout: float, queued: Completion
    ) -> dict[str, JobState]:
        by_group: dict[str, list[JobRecord]] = defaultdict(list)
        for record in records:
            by_group[str(record.group_id)].append(record)
        found: dict[str, JobState] = {}
        refusals = functools.cache(self._refusals)
        for group_id, members in by_group.items():
            by_job: dict[str, list[JobRecord]] = defaultdict(list)
            for record in members:
                by_job[record.k8s_name].append(record)
            known = self._read_group(group_id, by_job)
            for name, wanted in by_job.items():
                job, pods = known.get(name, (None, _NOTHING_KNOWN))
                states = array_states.attempt_states(
                    job,
                    pods.pods,
                    [(_local_index(record), record.attempt) for record in wanted],
                    unschedulable_timeout=unschedulable_timeout,
                    refusals=refusals,
                    cleaned=pods.cleaned,
                    changed_at=pods.changed_at,
                )
                seen = [
                    (record, job, states[_local_index(record), record.attempt]) for record in wanted
                ]
                found |= {record.job_id: state for record, _, state in seen}
                found |= queued(seen)
        return found

    def _read_group(
        self, group_id: str, asked: Mapping[str, object]
    ) -> dict[str, tuple[Obj, KnownPods]]:
        """One batch's Jobs, each with the pods its indexes are read from: one LIST of the
        Jobs, and one of the pods that can have changed since the last poll, if any can."""
        selector = group_selector(group_id, self.app)
        namespace = self.connection.namespace
        jobs = arrays.JOBS.list_matching(self.connection, selector)
        read_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        listing = self.memory.listing(namespace, jobs)
        listed: dict[str, list[Obj]] = {}
        if listing is not None:
            labels, fields = listing.selectors(selector)
            listed = array_states.pods_by_job(list_pod_states(self.connection, labels, fields))
        names = [job["metadata"]["name"] for job in jobs]
        self.memory.forget_others(namespace, asked, names)
        return {
            name: (job, self.memory.learn(namespace, job, listed.get(name, []), read_at))
            for name, job in zip(names, jobs, strict=True)
        }

    def _refusals(self) -> list[Obj]:
        """Every Job's ``FailedCreate`` events in the namespace: one LIST, only in a poll that
        finds an index with no pod in a Job that could run it now."""
        return self.connection.failed_create_events(arrays.JOBS.pod_owner_kind)

    def delete_index(self, record: JobRecord, await_gone: AwaitGone) -> None:
        """Delete an index's pods (every attempt's), and confirm the Job has recorded the
        index's outcome: until it has, an index without pods would read as one waiting for
        its pod. The Job, which the index's siblings share, stays."""
        connection, selector = self.connection, pod_selector(record, self.app)
        index = _local_index(record)
        seen: list[Obj] = []

        def present() -> bool:
            if _delete_index_pods(connection, selector):
                return True
            job = arrays.JOBS.get(connection, record.k8s_name)
            seen[:] = [job] if job is not None else []
            return job is not None and not array_states.index_settled(job, index)

        await_gone(present, f"the pods of index {index} of Job {record.k8s_name}", selector)
        for job in seen:  # a later poll reads the index as gone, not as its Job recorded it
            self.memory.cleaned(connection.namespace, job, [index])
            _record_cleaned(connection, job, index)

    def job_ids(self, objects: Sequence[Obj]) -> set[str]:
        """The job ids of the attempts of every array Job among ``objects`` that have a pod
        (one more LIST, only when there is an array Job)."""
        live = [obj for obj in objects if arrays.JOB_ID_PREFIX in _annotations(obj)]
        if not live:
            return set()
        pods = self.connection.list_pods(f"{APP}={self.app},{arrays.INDEX_LABEL}")
        return {job_id for obj in live for job_id in array_states.index_job_ids(obj, pods)}


_RECORD_ATTEMPTS = 20


def _record_cleaned(connection: ClusterConnection, job: Obj, index: int) -> None:
    """Add ``index`` to the Job's cleaned indexes, for polls in every process. A patch carries
    the ``resourceVersion`` it was computed from, so two cleanups at once cannot drop each
    other's index: the later one is refused, reads the Job again and adds to what it finds."""
    name = job["metadata"]["name"]
    for _ in range(_RECORD_ATTEMPTS):
        annotations = job["metadata"].get("annotations") or {}
        cleaned = array_states.parse_indexes(annotations.get(arrays.CLEANED_INDEXES))
        if index in cleaned:
            return
        patch = {
            "metadata": {
                "resourceVersion": job["metadata"]["resourceVersion"],
                "annotations": {
                    arrays.CLEANED_INDEXES: array_states.format_indexes(cleaned | {index})
                },
            }
        }
        try:
            connection.send(
                f"recording index {index} of Job {name} as cleaned up",
                connection.batch.patch_namespaced_job,
                name,
                connection.namespace,
                patch,
            )
            return
        except Conflict:
            pass
        except NotFound:
            return
        latest = arrays.JOBS.get(connection, name)
        if latest is None:
            return
        job = latest
    raise Conflict(f"recording index {index} of Job {name} as cleaned up: kept changing")
