"""Fixtures for the local backend's tests: one slot for this machine, and waiting on what the
jobs show (never on time passing)."""

import time
from collections.abc import Callable

import pytest

DEADLINE_S = 60.0


@pytest.fixture
def one_slot(clean_kinetic_env: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Local jobs run one at a time; the others wait in line."""
    monkeypatch.setenv("KINETIC_LOCAL_SLOTS", "1")


@pytest.fixture
def wait_until() -> Callable[[str, Callable[[], bool]], None]:
    """``wait_until("what", condition)``: poll until true; fail naming ``what`` past a deadline."""

    def wait(what: str, done: Callable[[], bool]) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while not done():
            assert time.monotonic() < deadline, f"gave up waiting for {what}"
            time.sleep(0.01)

    return wait
