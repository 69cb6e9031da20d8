"""A thread waiting on a batch polls for at most a fifth of its time, however many children a
poll covers and however often one settles (issue 53): on a two-core laptop, polling the local
backend back to back while its children settled one by one took half a core from them."""

import itertools
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from kinetic.decorator import RemoteFunction
from kinetic_protocol import JobRecord, JobState
from kinetic_protocol import JobStatus as S

FakeBackend = Any  # conftest.FakeBackend
_POLL_COST = 0.02
"""What each poll costs here: a stand-in for reading many children's states."""


@pytest.mark.parametrize(
    "max_concurrent",
    [None, 2],  # submitted in the caller: one poller; in a thread that watches: two
)
def test_polls_keep_their_share_of_the_time_while_children_settle_one_by_one(
    remote: RemoteFunction[[Any], Any],
    fake_backend: FakeBackend,
    monkeypatch: pytest.MonkeyPatch,
    max_concurrent: int | None,
) -> None:
    polls: dict[str, list[tuple[float, float]]] = {}

    def one_more_settled_each_poll(records: Sequence[JobRecord]) -> dict[str, JobState]:
        began = time.monotonic()
        time.sleep(_POLL_COST)
        polls.setdefault(threading.current_thread().name, []).append((began, time.monotonic()))
        done = sum(map(len, polls.values()))
        return {
            record.job_id: JobState(
                status=S.SUCCEEDED if (record.group_index or 0) < done else S.RUNNING
            )
            for record in records
        }

    monkeypatch.setattr(fake_backend, "statuses", one_more_settled_each_poll)
    batch = remote.run_async_map(range(6), max_concurrent=max_concurrent)
    assert batch.results() == list(range(6))

    assert sum(map(len, polls.values())) >= 6
    for thread, own in polls.items():
        for (began, ended), (next_began, _) in itertools.pairwise(own):
            assert next_began - ended >= 4 * (ended - began), (thread, own)
