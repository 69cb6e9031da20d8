"""Kinetic quickstart: a detached job and a small sweep, on the local backend.

With no GCP project configured, Kinetic runs jobs as detached processes on this machine;
the same code runs on GKE once a project and cluster are configured (see the README).

    python -m pip install uv && python -m uv run examples/quickstart.py
"""

import os

import kinetic


@kinetic.run(accelerator="cpu", capture_env_vars=["QUICKSTART_*"])
def train(lr: float, steps: int = 5) -> dict[str, float]:
    """A stand-in for training: prints progress and writes a checkpoint."""
    loss = 1.0
    for step in range(steps):
        loss *= 1 - lr
        print(f"step {step}: loss={loss:.4f}", flush=True)
    with open(os.path.join(os.environ["KINETIC_OUTPUT_DIR"], "checkpoint.txt"), "w") as f:
        f.write(f"{loss}\n")
    return {"lr": lr, "final_loss": round(loss, 4), "greeting": os.environ["QUICKSTART_GREETING"]}


def main() -> None:
    os.environ["QUICKSTART_GREETING"] = "hello from the caller's environment"

    # 1. A detached job: run_async() returns a durable handle at once.
    job = train.run_async(0.1)
    print(f"submitted {job.job_id} ({job.backend} backend), status {job.status().value}")
    print(f"reattach from anywhere with: kinetic.attach({job.job_id!r})")

    # Anyone holding the id can rebuild the handle, even from another process.
    same_job = kinetic.attach(job.job_id)
    result = same_job.result(cleanup=False, on_status_change=lambda s: print("  ->", s.value))
    # tail(n) counts the log's lines as they are: what the function printed, then Kinetic's
    # own line saying how the run ended.
    print("the last 3 lines of its log:")
    for line in same_job.tail(3).splitlines():
        print(f"  | {line}")
    print(f"result: {result}")
    same_job.cleanup()
    print(f"after cleanup the job is {same_job.status().value}")

    # 2. A small sweep: one job per input, results in input order.
    batch = train.run_async_map([0.01, 0.05, 0.1, 0.2], max_concurrent=2, name="lr-sweep")
    print(f"batch {batch.group_id}: {len(batch.jobs)} inputs, at most 2 running at once")
    losses = [r["final_loss"] for r in batch.results()]
    print(f"sweep losses: {losses}")
    print("done")


if __name__ == "__main__":
    main()
