"""Batches that survive their submitter (local backend, real processes): the submitting
process is SIGKILLed at random points, then another process resumes the batch. Every input
must end with exactly one successful result, nothing may run twice except as a counted retry,
no job may exist without a record, and collecting never hangs.

The suite kills 4 submitters: the seeded kill points come after 1, 71, 4 and 23 of the 74
child records (at the start, near the end, early, midway). ``KINETIC_DURABILITY_KILLS=20`` is
the soak run; the counts are printed either way.
"""

import json
import random
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from batch_support import private_project, rounds_from_env, start_script
from scenario_support import ScenarioBackend, run_script, wait_until

import kinetic
from kinetic.trust import open_manifest
from kinetic_protocol import layout

pytestmark = pytest.mark.slow

INPUTS, RETRIES = 60, 1
KILLS = rounds_from_env("KINETIC_DURABILITY_KILLS", 4)
FAILING = {i for i in range(INPUTS) if i % 7 == 3}
"""Inputs whose first run fails: they need their retry."""

SUBMITTER = f"""
    import sys
    sys.path.insert(0, sys.argv[2])
    import kinetic
    import durability_userfuncs as uf

    traced = kinetic.run(accelerator="cpu", backend="local")(uf.traced)
    inputs = [
        {{"index": i, "runs": sys.argv[1], "fail_first": i in {sorted(FAILING)!r},
          "seconds": 0.01}}
        for i in range({INPUTS})
    ]
    batch = traced.run_async_map(inputs, max_concurrent=8, retries={RETRIES})
    print(batch.group_id, flush=True)
    batch.wait(timeout=300)
"""

RESUMER = """
    import json, sys, time
    import kinetic

    batch = kinetic.attach_batch(sys.argv[1], backend="local", poll_interval=0.1)
    deadline = time.monotonic() + 60
    while batch.submission_status().state == "submitting":  # until the dead lease runs out
        assert time.monotonic() < deadline, "the killed submitter still looks alive"
        time.sleep(0.05)
    print(batch.resume(), file=sys.stderr)
    values = batch.results(timeout=120, cleanup=False, return_exceptions=True)
    print(json.dumps([v if isinstance(v, int) else repr(v) for v in values]))
"""


@pytest.fixture
def quick_leases(monkeypatch: pytest.MonkeyPatch) -> None:
    """A killed submitter counts as gone after a second, so a round does not wait 30 s."""
    monkeypatch.setenv("KINETIC_BATCH_HEARTBEAT", "0.1")
    monkeypatch.setenv("KINETIC_BATCH_LEASE", "1")


def _batch_children(store: Any, group_id: str) -> int:
    return len(store.list(layout.children_prefix(group_id)))


def _new_batches(store: Any, known: set[str]) -> list[str]:
    fresh = set(store.list(layout.MANIFESTS_PREFIX)) - known
    return sorted(key.removeprefix(layout.MANIFESTS_PREFIX).removesuffix(".json") for key in fresh)


def _kill_at_a_random_point(
    process: "subprocess.Popen[str]", rng: random.Random, store: Any, known: set[str]
) -> None:
    """Kill once the batch has a random number of child records (0: perhaps before the
    batch exists), a random few milliseconds later, so kills land between any two steps."""
    after_children = rng.randrange(0, INPUTS + len(FAILING) + 5)
    jitter = rng.uniform(0, 0.03)

    def progressed() -> bool:
        if process.poll() is not None:
            return True
        fresh = _new_batches(store, known)
        return bool(fresh) and _batch_children(store, fresh[0]) >= after_children

    wait_until(progressed, f"{after_children} child records", timeout=120)
    kill_at = time.monotonic() + jitter
    while time.monotonic() < kill_at and process.poll() is None:
        pass  # a few milliseconds' busy wait: this is the kill point, not synchronisation
    process.kill()
    process.communicate(timeout=30)


def _runs(runs: Path, index: int) -> list[str]:
    """The job ids that ran input ``index``, one per run."""
    trace = runs / str(index)
    return trace.read_text().split() if trace.exists() else []


def _one_round(
    round_dir: Path, rng: random.Random, backend: ScenarioBackend, jobs_dir: Path
) -> dict[str, int]:
    """Kill a submitter at a random point, resume from another process, count what is wrong."""
    runs = round_dir / "runs"
    runs.mkdir(parents=True)
    store = backend.store()
    known = set(store.list(layout.MANIFESTS_PREFIX))
    project = private_project(round_dir.parent, "durability_userfuncs")
    process = start_script(round_dir, SUBMITTER, str(runs), str(project))
    try:
        _kill_at_a_random_point(process, rng, store, known)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=30)
    fresh = _new_batches(store, known)
    if not fresh:  # killed before the batch existed: nothing of it may run
        assert not any(runs.iterdir()), "a job ran for a batch that was never created"
        return {"lost": 0, "duplicated": 0, "orphaned": 0, "resumed": 0}
    [group_id] = fresh

    done = run_script(RESUMER, round_dir, timeout=150, args=(group_id,))
    values = json.loads(done.stdout.strip().splitlines()[-1])
    lost = sum(1 for i, value in enumerate(values) if value != i * i)
    # One run per attempt: the failing inputs' retry is the only second run allowed.
    duplicated = 0
    for index in range(INPUTS):
        ran = _runs(runs, index)
        duplicated += max(0, len(ran) - (2 if index in FAILING else 1))
        duplicated += len(ran) - len(set(ran))  # the same attempt run twice
    manifest = open_manifest(
        store.read(layout.manifest_key(group_id)), group_id=group_id, key="manifest"
    )
    recorded = {
        manifest.child_job_id(*layout.parse_child_key(key))
        for key in store.list(layout.children_prefix(group_id))
    }
    existing = {
        entry.name for entry in jobs_dir.iterdir() if entry.name.startswith(manifest.job_id_prefix)
    }
    orphaned = len(existing - recorded)
    # Collecting from yet another handle returns at once, and cleans up.
    attached = kinetic.attach_batch(group_id, backend="local")
    assert attached.results(timeout=60) == [i * i for i in range(INPUTS)]
    return {"lost": lost, "duplicated": duplicated, "orphaned": orphaned, "resumed": 1}


def test_a_batch_killed_at_random_points_is_resumed_with_nothing_lost_or_doubled(
    local_backend: ScenarioBackend,
    tmp_path: Path,
    isolated_kinetic: Path,
    quick_leases: None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rng = random.Random(20261125)
    totals = {"lost": 0, "duplicated": 0, "orphaned": 0, "resumed": 0}
    jobs_dir = isolated_kinetic / "local" / "jobs"
    jobs_dir.mkdir(parents=True, exist_ok=True)
    for round_number in range(KILLS):
        counts = _one_round(tmp_path / f"round-{round_number}", rng, local_backend, jobs_dir)
        for name, count in counts.items():
            totals[name] += count
    with capsys.disabled():
        print(f"\n{KILLS} kills of a {INPUTS}-input batch: {json.dumps(totals)}")
    assert (totals["lost"], totals["duplicated"], totals["orphaned"]) == (0, 0, 0)
