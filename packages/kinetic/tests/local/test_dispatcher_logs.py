"""The log a dispatcher process (the launcher, the line's keeper) writes its errors to is
private from its first byte, whatever the client's umask: it lives in the Kinetic home, where
everything is 0600 (issue 53)."""

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kinetic.local.environment import start_dispatcher


@pytest.fixture
def open_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def test_a_dispatchers_error_log_is_private_under_an_open_umask(
    tmp_path: Path, open_umask: None
) -> None:
    log = tmp_path / "keeper.log"
    start_dispatcher([sys.executable, "-c", "pass"], log)
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
