"""Rounds of the faults a batch's submitter meets, each followed by ``resume`` and a collection
(local backend, real processes): a ``kill -9`` of the submitter, a submitter frozen
(SIGSTOP) past its lease, resumed elsewhere and then thawed, and a disk that is full for a
moment. Over every round: no input lost, none run twice, none skipped, nothing hung.

The suite runs a few rounds; ``KINETIC_FAULT_ROUNDS=20`` runs more (the counts are printed
with ``-s``). The full disk is the store's ``os`` made to fail in the submitter's process
(``kinetic_testing.full_disk``), for two writes of child records.
"""

import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from batch_support import private_project, rounds_from_env, start_script
from scenario_support import ScenarioBackend, wait_until

import kinetic
from kinetic.batch import SkippedInputError
from kinetic_protocol import layout

ROUNDS = rounds_from_env("KINETIC_FAULT_ROUNDS", 3)
INPUTS = 6
FAULTS = ["kill -9", "frozen past its lease", "full disk for a moment"]

SUBMITTER = """
    import sys
    from pathlib import Path
    runs, project, fault, store, count = sys.argv[1:6]
    sys.path.insert(0, project)
    import kinetic
    import durability_userfuncs as uf

    traced = kinetic.run(accelerator="cpu", backend="local")(uf.traced)
    inputs = [{"index": i, "runs": runs, "seconds": 0.3} for i in range(int(count))]
    if fault == "full disk for a moment":
        from kinetic_testing.full_disk import full_disk
        refused = []

        def full(directory):  # after two child records, the next two are refused
            if not directory.endswith("/children"):
                return False
            refused.append(directory)
            return 3 <= len(refused) <= 4

        with full_disk(Path(store), full):
            batch = traced.run_async_map(inputs, max_concurrent=2)
            print(batch.group_id, flush=True)
            batch.wait_submitted(timeout=120)
    else:
        batch = traced.run_async_map(inputs, max_concurrent=2)
        print(batch.group_id, flush=True)
        batch.wait_submitted(timeout=120)
"""


@dataclass
class Tally:
    lost: list[str] = field(default_factory=list)
    twice: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    hung: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    """Rounds whose fault landed after the submitter had finished (nothing to resume)."""

    def __str__(self) -> str:
        return (
            f"{len(self.lost)} lost, {len(self.twice)} run twice, {len(self.skipped)} skipped, "
            f"{len(self.hung)} hung ({len(self.missed)} faults missed)"
        )


def _children(backend: ScenarioBackend, group_id: str) -> int:
    return len(backend.store().list(layout.children_prefix(group_id)))


def _gone(group_id: str) -> bool:
    return kinetic.attach_batch(group_id, backend="local").submission_status().gone


def _round(
    number: int, fault: str, backend: ScenarioBackend, root: Path, store: Path, tally: Tally
) -> None:
    here = root / f"round-{number}"
    runs = here / "runs"
    runs.mkdir(parents=True)
    project = private_project(root, "durability_userfuncs")
    args = (str(runs), str(project), fault, str(store), str(INPUTS))
    process = start_script(here, SUBMITTER, *args)
    assert process.stdout is not None
    group_id = process.stdout.readline().strip()
    assert group_id.startswith("grp-"), process.communicate(timeout=60)
    where = f"round {number} ({fault}, {group_id})"
    if fault != "full disk for a moment":
        wait_until(lambda: _children(backend, group_id) >= 2, f"{where}: two children")
        os.kill(process.pid, signal.SIGKILL if fault == "kill -9" else signal.SIGSTOP)
    if fault == "frozen past its lease":
        wait_until(lambda: _gone(group_id), f"{where}: the frozen submitter's lease to end")
    else:
        _ended(process, where, tally)  # it stops on the error and says so in its completion
    attached = kinetic.attach_batch(group_id, backend="local")
    said = attached.resume()
    if not said.startswith("Resumed batch"):
        tally.missed.append(f"{where}: {said}")
    if fault == "frozen past its lease":
        os.kill(process.pid, signal.SIGCONT)  # it must write nothing more, and end
    if fault != "full disk for a moment":
        _ended(process, where, tally)
    attached.wait_submitted(timeout=120)
    try:
        outcomes = attached.results(timeout=120, return_exceptions=True)
    except TimeoutError as exc:
        tally.hung.append(f"{where}: {exc}")
        return
    for index, outcome in enumerate(outcomes):
        if isinstance(outcome, SkippedInputError):
            tally.skipped.append(f"{where}: input {index}: {outcome}")
        elif outcome != index * index:
            tally.lost.append(f"{where}: input {index}: {outcome!r}")
        ran = (runs / str(index)).read_text().split() if (runs / str(index)).exists() else []
        if len(ran) > 1:
            tally.twice.append(f"{where}: input {index} ran as {ran}")


def _ended(process: "subprocess.Popen[str]", where: str, tally: Tally) -> None:
    """The submitter ends on its own (a killed one has); else it hung."""
    try:
        process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        tally.hung.append(f"{where}: the submitter did not end")
        process.kill()
        process.communicate()


def test_rounds_of_kills_freezes_and_a_full_disk_lose_nothing_and_run_nothing_twice(
    local_backend: ScenarioBackend,
    isolated_kinetic: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KINETIC_BATCH_HEARTBEAT", "0.1")
    monkeypatch.setenv("KINETIC_BATCH_LEASE", "1")
    tally = Tally()
    for number in range(ROUNDS):
        fault = FAULTS[number % len(FAULTS)]
        _round(number, fault, local_backend, tmp_path, isolated_kinetic / "store", tally)
    print(f"{ROUNDS} rounds: {tally}")
    assert (tally.lost, tally.twice, tally.skipped, tally.hung) == ([], [], [], []), str(tally)
    assert tally.missed == [], "a fault landed after its submitter had finished"
