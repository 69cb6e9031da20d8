"""Which host's kept output a multi-host job shows by default, once its pods are gone."""

from pathlib import Path

import pytest

from kinetic.kept_output import stored_text
from kinetic_protocol import KeptOutput, layout
from kinetic_protocol.records import encode_json
from kinetic_runtime.stores.local import LocalStore

JOB = "train-20261126-120000-abcdef0"


def _keep(
    store: LocalStore, host: int, text: str, ended: str, at: str, run_number: int = 1
) -> None:
    run = f"20261126T12000{run_number}Z-{100 * run_number + host}"
    kept = KeptOutput(
        job_id=JOB, host=host, run=run, text=text, final=bool(ended), ended=ended, updated_at=at
    )
    store.write(layout.kept_output_key(JOB, host, run), encode_json(kept))


def test_the_leader_is_shown_when_it_failed_first_or_nothing_failed(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    _keep(store, 0, "leader says\n", "exit 0", "2026-11-26T12:00:02Z")
    _keep(store, 1, "worker says\n", "exit 0", "2026-11-26T12:00:01Z")
    assert stored_text(store, JOB) == "leader says\n"
    _keep(store, 0, "leader fails\n", "exit 2", "2026-11-26T12:00:02Z")
    _keep(store, 1, "worker is stopped\n", "killed by SIGTERM", "2026-11-26T12:00:03Z")
    assert stored_text(store, JOB) == "leader fails\n"


def test_the_host_whose_failure_stopped_the_slice_is_shown_by_default(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    _keep(store, 0, "", "killed by SIGTERM", "2026-11-26T12:00:05Z")  # stopped before a word
    _keep(store, 1, "leaving with status 5\n", "exit 5", "2026-11-26T12:00:04Z")
    assert stored_text(store, JOB) == "leaving with status 5\n"
    assert stored_text(store, JOB, host=0) == ""  # asked for by number, the leader still
    assert stored_text(store, JOB, host="all") == "[host 1] leaving with status 5\n"


RUNS = {
    "all succeeded": [
        (1, "worker, run 1\n", "killed by SIGTERM", "2026-11-26T12:00:01Z", 1),
        (0, "leader, run 1\n", "killed by SIGTERM", "2026-11-26T12:00:02Z", 1),
        (0, "leader, run 2\n", "exit 0", "2026-11-26T12:00:09Z", 2),
        (1, "worker, run 2\n", "exit 0", "2026-11-26T12:00:08Z", 2),
    ],
    "the worker failed": [
        (0, "leader, run 1\n", "killed by SIGTERM", "2026-11-26T12:00:01Z", 1),
        (1, "worker, run 1\n", "killed by SIGTERM", "2026-11-26T12:00:02Z", 1),
        (1, "leaving with status 3\n", "exit 3", "2026-11-26T12:00:08Z", 2),
        (0, "", "killed by SIGTERM", "2026-11-26T12:00:09Z", 2),
    ],
}
SHOWN = {
    "all succeeded": ("leader, run 1\n", "leader, run 2\n"),
    "the worker failed": ("worker, run 1\n", "leaving with status 3\n"),
}


@pytest.mark.parametrize("case", RUNS)
def test_each_host_is_judged_by_its_last_run_when_it_kept_several(
    tmp_path: Path, case: str
) -> None:
    """A preempted local multi-host job runs every host again: a run the preemption ended
    decides nothing once the host ran again."""
    store = LocalStore(tmp_path)
    for host, text, ended, at, run_number in RUNS[case]:
        _keep(store, host, text, ended, at, run_number=run_number)
    shown = stored_text(store, JOB)
    first, last = SHOWN[case]
    assert shown is not None and shown.startswith(first)
    assert shown.endswith(last)
