"""What a Ctrl-C while waiting on remote work says: it keeps running, and how to reattach.

Jobs and batches are durable; the waiting process is not their owner. The message goes to
stderr (a user pressing Ctrl-C reads the terminal, not a log) and the ``KeyboardInterrupt``
goes on, so the script stops as the user asked.
"""

import sys

__all__ = ["say_batch_left_running", "say_job_left_running"]


def say_job_left_running(job_id: str, backend: str) -> None:
    sys.stderr.write(
        f"\nInterrupted: job {job_id} keeps running. Reattach from any process with "
        f"kinetic.attach({job_id!r}, backend={backend!r}).result(), or from a shell with "
        f"`kinetic jobs result {job_id}`; `kinetic jobs cancel {job_id}` stops it.\n"
    )
    sys.stderr.flush()


def say_batch_left_running(group_id: str, backend: str, submitted: int, total: int) -> None:
    rest = (
        f" The {total - submitted} inputs not submitted yet were not: batch.resume() submits them."
        if submitted < total
        else ""
    )
    sys.stderr.write(
        f"\nInterrupted: batch {group_id} stopped submitting here; its {submitted} submitted "
        f"job(s) keep running.{rest} Reattach from any process with "
        f"kinetic.attach_batch({group_id!r}, backend={backend!r}), or from a shell with "
        f"`kinetic batch status {group_id}`; `kinetic batch cancel {group_id}` stops them.\n"
    )
    sys.stderr.flush()
