"""What a client's polls of array Jobs have learned, so that a poll lists only the pods that
can still change, whatever the size of the batch.

An index the Job has settled (its completed and failed index sets) gets no new pod. So a poll
lists the pods of the indexes that were open at the poll before (any of them may have a new
or changed pod since), never those of indexes settled before it, and only pods that have not
succeeded: that an index succeeded is the Job's to say, while a failed pod says why a run
failed, or which attempt failed before the one that succeeded. The pods that ended are kept,
so the reasons for a failure are read once and outlive the pod (the cluster's garbage
collection of ended pods, a cleanup elsewhere). The first poll of a Job in a process lists
every pod of the batch that has not succeeded: the cost of its failures, not of its size.
"""

import threading
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from kinetic_gke.array_states import parse_indexes, pod_index
from kinetic_gke.arrays import CLEANED_INDEXES, INDEX_LABEL
from kinetic_gke.k8s.connection import Obj

__all__ = ["ArrayPollMemory", "KnownPods", "PodListing"]

LISTED_INDEXES = 1000
"""The most indexes a listing names in its label selector (some 7 KB of URL); past that a poll
lists every pod of the batch that has not succeeded."""
NOT_SUCCEEDED = "status.phase!=Succeeded"


@dataclass(frozen=True)
class PodListing:
    """The one LIST of pods a poll needs: of ``indexes`` (None: of every index) and, with
    ``not_succeeded``, only those that have not succeeded."""

    indexes: frozenset[int] | None
    not_succeeded: bool

    def selectors(self, batch: str) -> tuple[str, str | None]:
        """The label selector (``batch``'s, bounded to the indexes) and field selector."""
        label = batch
        if self.indexes is not None:
            label += f",{INDEX_LABEL} in ({','.join(map(str, sorted(self.indexes)))})"
        return label, NOT_SUCCEEDED if self.not_succeeded else None


@dataclass(frozen=True)
class KnownPods:
    """What a poll reads one Job's indexes from: its pods that may still change, with those
    that ended as polls saw them; its settled indexes whose pods were deleted; when the Job
    last changed, as far as polls saw."""

    pods: list[Obj]
    cleaned: frozenset[int]
    changed_at: str


@dataclass
class _Learned:
    uid: str
    open: frozenset[int] | None = None
    """The indexes not settled at the last poll; None before one."""
    ended: dict[str, Obj] = field(default_factory=dict)
    """Pods that succeeded or failed, by name."""
    cleaned: set[int] = field(default_factory=set)
    settled: int = -1
    changed_at: str = ""


def _settled(job: Obj) -> tuple[set[int], set[int]]:
    job_status = job.get("status", {})
    return (
        parse_indexes(job_status.get("completedIndexes")),
        parse_indexes(job_status.get("failedIndexes")),
    )


def _has_condition(job: Obj, *types: str) -> bool:
    return any(
        condition.get("type") in types and condition.get("status") == "True"
        for condition in job.get("status", {}).get("conditions") or []
    )


def _finished(job: Obj) -> bool:
    """The Job ended as a whole: no pod of it starts again, none of its states changes."""
    return _has_condition(job, "Complete", "Failed")


def _stopping(job: Obj) -> bool:
    """The Job stops every index (fail-fast): an index it did not record is read from its
    pod, succeeded or not."""
    return _has_condition(job, "Failed", "FailureTarget")


def _key(namespace: str, job: Obj) -> tuple[str, str]:
    return namespace, job["metadata"]["name"]


class ArrayPollMemory:
    """A backend's knowledge of the array Jobs it polled, by namespace and name (a Job made
    again under the same name starts afresh). Polls from several threads share it."""

    def __init__(self) -> None:
        self._jobs: dict[tuple[str, str], _Learned] = {}
        self._lock = threading.Lock()

    def _learned(self, namespace: str, job: Obj) -> _Learned:
        uid = job["metadata"].get("uid") or ""
        known = self._jobs.get(_key(namespace, job))
        if known is None or known.uid != uid:
            known = self._jobs[_key(namespace, job)] = _Learned(uid)
        return known

    def listing(self, namespace: str, jobs: Sequence[Obj]) -> PodListing | None:
        """The pods a poll of ``jobs`` (one batch's) needs listed; None when none."""
        indexes: set[int] = set()
        every = with_succeeded = False
        with self._lock:
            for job in jobs:
                if job["metadata"].get("deletionTimestamp"):
                    continue
                known = self._learned(namespace, job).open
                if known is None:
                    every = True
                else:
                    indexes |= known
                with_succeeded |= _stopping(job) and known != frozenset()
        if not every and not indexes:
            return None
        bounded = None if every or len(indexes) > LISTED_INDEXES else frozenset(indexes)
        return PodListing(bounded, not_succeeded=not with_succeeded)

    def learn(self, namespace: str, job: Obj, listed: Iterable[Obj], now: str) -> KnownPods:
        """Keep what a poll's listing says of ``job`` (``now``: when the poll read the Job);
        the pods its indexes are read from."""
        completed, failed = _settled(job)
        settled = len(completed) + len(failed)
        completions = int(job.get("spec", {}).get("completions") or 0)
        with self._lock:
            known = self._learned(namespace, job)
            live = []
            for pod in listed:
                if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
                    known.ended[pod["metadata"].get("name", "")] = pod
                else:
                    live.append(pod)
            if 0 <= known.settled < settled:
                known.changed_at = max(known.changed_at, now)
            known.settled = settled
            if _finished(job):
                known.open = frozenset()
            else:
                known.open = frozenset(range(completions)) - completed - failed
            annotations = job["metadata"].get("annotations") or {}
            cleaned = known.cleaned | parse_indexes(annotations.get(CLEANED_INDEXES))
            return KnownPods([*known.ended.values(), *live], frozenset(cleaned), known.changed_at)

    def cleaned(self, namespace: str, job: Obj, indexes: Collection[int]) -> None:
        """The pods of ``indexes`` of ``job`` were deleted once they settled."""
        with self._lock:
            known = self._learned(namespace, job)
            known.cleaned |= set(indexes)
            known.ended = {
                name: pod for name, pod in known.ended.items() if pod_index(pod) not in indexes
            }

    def forget_others(self, namespace: str, names: Collection[str], kept: Collection[str]) -> None:
        """Drop what is known of the Jobs ``names`` that are not among ``kept`` (gone)."""
        with self._lock:
            for name in set(names) - set(kept):
                self._jobs.pop((namespace, name), None)
