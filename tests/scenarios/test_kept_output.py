"""An attempt's output outlives the attempt: the runtime keeps its tail in the store, so it is
readable once the pod (or the local job directory) is gone, to a reader without cluster
credentials, for a retried batch child's first attempt, and for the failed inputs of a batch
that ``results()`` cleaned up, from a new process."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import batch_userfuncs as buf
import pytest
import scenario_funcs as uf
from scenario_support import ScenarioBackend

import kinetic
from kinetic import FailureCause, JobFailedError, JobStatus
from kinetic_protocol import KeptOutput, layout
from kinetic_protocol.records import decode_json

pytestmark = pytest.mark.backends("local", "gke", "pathways")


def _kinetic(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The ``kinetic`` CLI in a new process (this test's environment, changed by ``env``)."""
    done = subprocess.run(
        [sys.executable, "-m", "kinetic", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, f"kinetic {' '.join(args)}: {done.stdout}\n{done.stderr}"
    return done


def _kept(backend: ScenarioBackend, job_id: str) -> list[KeptOutput]:
    store = backend.store()
    return [
        decode_json(store.read(key), KeptOutput, what=key)
        for key in store.list(layout.kept_output_prefix(job_id))
    ]


def test_a_failed_attempts_output_is_readable_after_its_pod_or_directory_is_gone(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    job = kinetic_backend.decorate()(uf.exit_process).run_async(5)
    with pytest.raises(JobFailedError):
        job.result()
    job.cleanup(gcs=False)  # the pod (or the local job directory) and its log are gone
    assert job.status() is JobStatus.NOT_FOUND

    tail = job.tail(5)
    assert "leaving with status 5" in tail, tail
    assert "leaving with status 5" in (job.logs() or "")
    kept = [run for run in _kept(kinetic_backend, job.job_id) if run.host == 0]
    assert [(run.final, run.ended) for run in kept] == [(True, "exit 5")]

    # A new process with no cluster credentials at all reads it from the store.
    nowhere = {"KUBECONFIG": str(tmp_path / "no-kubeconfig")}
    shown = _kinetic("--backend", kinetic_backend.name, "jobs", "logs", job.job_id, env=nowhere)
    assert "leaving with status 5" in shown.stdout, shown.stdout + shown.stderr


def test_a_retried_batch_childs_first_attempt_keeps_its_output(
    kinetic_backend: ScenarioBackend,
) -> None:
    step = kinetic_backend.decorate()(buf.step)
    batch = step.run_async_map([{"value": "flaky", "fail_attempt_0": True}], retries=1)
    assert batch.results(cleanup=False) == ["flaky"]
    first = kinetic.attach(f"{batch.jobs[0].job_id.removesuffix('-r1')}")  # type: ignore[union-attr]
    assert first.record.attempt == 0
    first.delete_resource()  # whatever the backend kept of the retried attempt is gone

    shown = _kinetic("--backend", kinetic_backend.name, "batch", "logs", batch.group_id, "--failed")
    # The first attempt's own output (its traceback), not only the failure it stored; each
    # line names input 0 (and its host, on a multi-host backend).
    label = r"\[0(?: host 0)?\] "
    assert re.search(f"^{label}Traceback \\(most recent call last\\):$", shown.stdout, re.M)
    running = f"^{label}\\[kinetic\\] job {first.job_id}: running step$"
    assert re.search(running, shown.stdout, re.M), shown.stdout
    assert "attempt 0 for 'flaky' fails" in first.tail(20)


@pytest.mark.backends("local", "gke")
def test_the_kept_output_is_bounded_and_keeps_the_tail(
    kinetic_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_KEEP_OUTPUT_BYTES", "4000")
    remote = kinetic_backend.decorate(capture_env_vars=["KINETIC_KEEP_OUTPUT_BYTES"])(
        uf.print_lines
    )
    job = remote.run_async(2000)
    assert job.result(cleanup=False) == 2000
    job.cleanup(gcs=False)

    (kept,) = _kept(kinetic_backend, job.job_id)
    assert len(kept.text.encode()) <= 4000
    assert kept.dropped > 0 and kept.final and kept.ended == "exit 0"
    assert kept.text.startswith(("line ", "[kinetic]")), "the kept text starts on a whole line"
    text = job.logs() or ""
    assert "bytes of earlier output were not kept" in text.splitlines()[0]
    assert "line 1999\n" in text and "line 0\n" not in text
    assert "line 10\n" not in text


def test_a_cleaned_up_batch_still_shows_each_failed_inputs_cause_and_last_lines(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    end_by = kinetic_backend.decorate()(uf.end_by)
    batch = end_by.run_async_map([{"how": "raise"}, {"how": "exit"}, {"how": "fine"}])
    outcomes = batch.results(return_exceptions=True)  # cleanup=True: every child is deleted
    assert outcomes[2] == "fine"
    store = kinetic_backend.store()
    assert all(store.list(layout.job_prefix(job.job_id)) == [] for job in batch.jobs if job)

    shown = _kinetic(
        "--backend", kinetic_backend.name, "batch", "failures", batch.group_id, "--json"
    )
    document = json.loads(shown.stdout)
    entries = {entry["index"]: entry for entry in document["failures"]}
    assert {i: entry["cause"] for i, entry in entries.items()} == {0: "user", 1: "exit"}
    assert "ScenarioError: asked to fail (code 3)" in entries[0]["logs"]
    assert "leaving with status 5" in entries[1]["logs"]
    assert [gone["index"] for gone in document["cleaned_up"]] == [2]

    table = _kinetic("--backend", kinetic_backend.name, "batch", "failures", batch.group_id)
    assert "cause: exit" in table.stdout and "    leaving with status 5" in table.stdout

    attached = kinetic.attach_batch(batch.group_id, backend=kinetic_backend.name)
    failed = {job.group_index: job for job in attached.failures()}
    assert sorted(failed) == [0, 1]
    failure = failed[1].failure()
    assert failure is not None and failure.cause is FailureCause.EXIT
    # On a slice, the host that failed first stops the others: its lines, not the leader's.
    named = re.search(r"\bhost (\d+) of", failure.reason)
    assert "leaving with status 5" in failed[1].tail(5, host=int(named[1]) if named else None)
    assert attached.cause_counts() == {"user": 1, "exit": 1}
