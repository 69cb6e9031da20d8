"""What Kinetic prints through logging in a script that configured none: notices for the user as
plain sentences, and no structured event (those reach only an application that asked)."""

import logging
import subprocess
import sys
import textwrap

import pytest

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


_FAILURES = """
import errno, logging, os
logging.basicConfig(format="%(name)s %(message)s", level=logging.WARNING)
from kinetic import _log
from kinetic_protocol import StoreError

log = _log.get_logger("kinetic.batch.lease")
for error in (
    StoreError("Could not write 'x' in store file:///s: [Errno 28] No space left on device."),
    OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)),
    RuntimeError("a bug"),
):
    try:
        raise error
    except Exception:
        log.warning("batch heartbeat failed", group_id="grp-1", exc_info=True)
"""


def test_an_expected_error_is_one_line_and_a_bug_keeps_its_traceback_after_it() -> None:
    """A full disk made every heartbeat and collection warning carry a traceback squeezed into
    the line (``exception='Traceback ...\\n  File ...'``); the error's message says it all."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_FAILURES)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = done.stderr.splitlines()
    prefix = "kinetic.batch.lease event='batch heartbeat failed' group_id='grp-1' error="
    assert lines[:2] == [
        prefix + "\"StoreError: Could not write 'x' in store file:///s: [Errno 28] No space "
        'left on device."',
        prefix + "'OSError: [Errno 28] No space left on device'",
    ]
    assert lines[2] == "kinetic.batch.lease event='batch heartbeat failed' group_id='grp-1'"
    assert lines[3] == "Traceback (most recent call last):"
    assert lines[-1] == "RuntimeError: a bug"


def test_a_notice_shows_control_characters_as_escapes(caplog: pytest.LogCaptureFixture) -> None:
    """A notice names store keys, which whoever writes the store chooses: a script that
    configured no logging prints it to the terminal as it is."""
    from kinetic import _log

    with caplog.at_level(logging.WARNING, logger="kinetic"):
        _log.say("Ignoring groups/g/lease/\x1b]0;pwned\x07.json:\tnot a lease.\nSee above.")
    escaped = r"Ignoring groups/g/lease/\x1b]0;pwned\x07.json:"
    assert caplog.messages == [escaped + "\tnot a lease.\nSee above."]
