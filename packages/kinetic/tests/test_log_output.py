"""What Kinetic prints through logging in a script that configured none: notices for the user as
plain sentences, and no structured event (those reach only an application that asked)."""

import subprocess
import sys
import textwrap

_SCRIPT = """
import logging, sys
if sys.argv[1] == "configured":
    logging.basicConfig(format="%(name)s %(message)s", level=logging.WARNING)
from kinetic import _log

_log.get_logger("kinetic.batch.submitter").warning("batch.fail_fast", cancelling_running=False)
_log.say("Submitting 1000 jobs with max_concurrent=None; set a limit.")
"""


def _stderr(mode: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_SCRIPT), mode],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stderr


def test_an_unconfigured_script_sees_notices_as_sentences_and_no_structured_events() -> None:
    assert _stderr("bare") == "Submitting 1000 jobs with max_concurrent=None; set a limit.\n"


def test_an_application_that_configured_logging_receives_both() -> None:
    assert _stderr("configured").splitlines() == [
        "kinetic.batch.submitter event='batch.fail_fast' cancelling_running=False",
        "kinetic Submitting 1000 jobs with max_concurrent=None; set a limit.",
    ]
