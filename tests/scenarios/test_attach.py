"""A job outlives the process that submitted it and can be picked up from another one."""

from pathlib import Path

from scenario_support import ScenarioBackend, client_only, run_script, wait_until

import kinetic
from kinetic import JobStatus


def test_attach_from_another_process_after_the_submitter_exited(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    done = run_script(
        f"""
        import os
        import time
        import kinetic

        @kinetic.run(**{kinetic_backend.options!r})
        def train(steps, gate):
            for step in range(steps):
                print(f"step {{step}}", flush=True)
            while not os.path.exists(gate):
                time.sleep(0.005)
            return {{"final_loss": 0.125, "steps": steps}}

        job = train.run_async(3, {str(gate)!r})
        print("JOB", job.job_id)
        """,
        tmp_path / "submitter",
    )
    job_id = done.stdout.split("JOB ", 1)[1].split()[0]

    job = kinetic.attach(job_id, backend=kinetic_backend.name)
    assert job.job_id == job_id
    assert job.func_name == "train"
    # A slice is RUNNING once every host runs: its first host may print before the last starts.
    wait_until(lambda: job.status() is JobStatus.RUNNING, "the attached job to run")
    wait_until(lambda: "step 2" in (job.logs() or ""), "the attached job's logs")
    assert job.status() is JobStatus.RUNNING
    assert job_id in {j.job_id for j in kinetic.list_jobs(backend=kinetic_backend.name)}

    gate.touch()
    assert job.result() == {"final_loss": 0.125, "steps": 3}
    assert job.status() is JobStatus.NOT_FOUND


@client_only
def test_a_handle_rebuilt_from_its_dict_observes_the_same_job(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    import scenario_funcs as uf

    gate = tmp_path / "gate"
    job = kinetic_backend.decorate()(uf.hold).run_async(str(gate), "same")
    copy = kinetic.JobHandle.from_dict(job.to_dict())
    wait_until(lambda: copy.status() is JobStatus.RUNNING, "the job to run")
    gate.touch()
    assert copy.result() == "same"
    assert job.status() is JobStatus.NOT_FOUND
