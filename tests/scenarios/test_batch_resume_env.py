"""A batch resumed in another process passes on the captured variables it names, taking their
values from the resuming process's own environment (the store holds names only)."""

import logging
from pathlib import Path

import pytest
from batch_support import died_submitting
from scenario_support import ScenarioBackend, wait_until

import kinetic

VARIABLE = "SCN_BATCH_SECRET"

DIES_AFTER_FIRST_CHILD = """
    import os
    import sys
    sys.path.insert(0, sys.argv[2])
    import kinetic
    import durability_userfuncs as uf
    from kinetic.batch import submitter

    def record_then_die(backend, records, record, **kw):
        if record.group_index == 1:
            os._exit(9)  # input 0 was submitted with the captured value; nothing else was
        return real(backend, records, record, **kw)

    real, submitter.submit_child = submitter.submit_child, record_then_die
    traced = kinetic.run(accelerator="cpu", backend="local", capture_env_vars=["SCN_BATCH_*"])(
        uf.traced_env
    )
    batch = traced.run_async_map(
        [{"index": i, "runs": sys.argv[1], "name": "SCN_BATCH_SECRET"} for i in range(3)],
        max_concurrent=1,
    )
    print(batch.group_id, flush=True)
    batch.wait(timeout=60)
"""


@pytest.fixture
def died_batch(
    local_backend: ScenarioBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, Path]:
    """A batch of 3 captured ``SCN_BATCH_*`` (value ``from-submitter``) whose submitter died
    after input 0; its lease has run out."""
    monkeypatch.setenv("KINETIC_BATCH_HEARTBEAT", "0.1")
    monkeypatch.setenv("KINETIC_BATCH_LEASE", "1")
    monkeypatch.setenv(VARIABLE, "from-submitter")
    group_id, runs = died_submitting(tmp_path, DIES_AFTER_FIRST_CHILD)
    wait_until(
        lambda: kinetic.attach_batch(group_id, backend="local").submission_status().gone,
        "the dead submitter's lease to run out",
    )
    return group_id, runs


def test_a_resumed_batch_passes_on_the_resuming_processes_values(
    died_batch: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    group_id, runs = died_batch
    monkeypatch.setenv(VARIABLE, "from-resumer")
    attached = kinetic.attach_batch(group_id, backend="local")
    attached.resume()
    assert attached.results(timeout=60, cleanup=False) == [0, 1, 2]
    seen = [(runs / f"{i}.env").read_text() for i in range(3)]
    assert seen == ["from-submitter", "from-resumer", "from-resumer"]


def test_a_resumed_batch_missing_a_captured_variable_says_so_and_runs_without_it(
    died_batch: tuple[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    group_id, runs = died_batch
    monkeypatch.delenv(VARIABLE)
    caplog.set_level(logging.WARNING)
    attached = kinetic.attach_batch(group_id, backend="local")
    attached.resume()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(VARIABLE in w and group_id in w for w in warnings), warnings
    assert attached.results(timeout=60, cleanup=False) == [0, 1, 2]
    assert [(runs / f"{i}.env").read_text() for i in range(3)] == [
        "from-submitter",
        "<unset>",
        "<unset>",
    ]
    job = attached.jobs[1]
    assert job is not None
    assert f"captured variable(s) {VARIABLE} were not passed to this job" in (job.logs() or "")
