"""The runtime records a stopped slice's outcome under the names the pathways backend reads."""

from kinetic_pathways import status
from kinetic_runtime import release


def test_the_runtime_and_the_backend_agree_on_the_recorded_names() -> None:
    assert release.FINAL_STATE == status.FINAL_STATE
    assert release.FINAL_DETAIL == status.FINAL_DETAIL
    assert release.FINAL_EXIT_CODE == status.FINAL_EXIT_CODE
    assert release.log_tail_key(3) == status.log_tail_key(3)
    assert (release.LOG_TAIL_LINES, release.LOG_TAIL_BYTES) == (
        status.LOG_TAIL_LINES,
        status.LOG_TAIL_BYTES,
    )
    assert release.WORKER_INDEX == status.WORKER_INDEX
