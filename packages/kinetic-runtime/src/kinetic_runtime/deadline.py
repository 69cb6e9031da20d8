"""An attempt's ``timeout=``, kept by the runtime itself where the platform cannot keep it.

A LeaderWorkerSet's pods restart, and a pod failed by its own ``activeDeadlineSeconds`` is
replaced, which reads as a lost host; so on pathways each host's runtime ends its own run
when the time is up, with an exit status that says so (:data:`EXIT_TIMEOUT`). The output so
far stays in the pod's log, as for any other exit.
"""

import os
import sys
import threading

from kinetic_protocol.slices import TIMEOUT_EXIT
from kinetic_runtime import settings

__all__ = ["EXIT_TIMEOUT", "arm_deadline"]

EXIT_TIMEOUT = TIMEOUT_EXIT
"""The runtime's exit status when it ended its run at the attempt's timeout (a slice's reader
in ``kinetic_protocol.slices`` knows it by this number)."""


def arm_deadline(job_id: str) -> threading.Timer | None:
    """End this process ``KINETIC_ATTEMPT_TIMEOUT`` seconds from now, if that is set."""
    raw = settings.ATTEMPT_TIMEOUT.from_env()
    if not raw:
        return None
    seconds = float(raw)

    def expire() -> None:
        print(
            f"[kinetic] job {job_id}: ran past its timeout of {seconds:g}s; stopping it",
            file=sys.stderr,
            flush=True,
        )
        sys.stdout.flush()
        os._exit(EXIT_TIMEOUT)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer
