"""A line has one keeper, however many submitters look for one at once (issue 53): the client
takes the keeper lock before it starts the keeper, which inherits it, so a second look in the
moment the keeper's interpreter takes to start finds it running. Real keeper process."""

import fcntl
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kinetic.local.line import ensure_keeper, start_waiting
from kinetic_runtime.local import slot_queue
from kinetic_runtime.local.dispatch import DISPATCH_LOCK
from kinetic_runtime.local.line_keeper import keeper_running

WaitUntil = Callable[[str, Callable[[], bool]], None]


@pytest.fixture
def held_line(tmp_path: Path, one_slot: None, wait_until: WaitUntil) -> Iterator[Path]:
    """A line with a ticket whose job is gone, and its one slot held: a keeper stays until the
    slot is let go, then drops the ticket and ends."""
    slots_dir = tmp_path / "slots"
    ticket = slot_queue.ticket_name(0, 0, "gone")
    slot_queue.join_line(slots_dir, ticket)
    slot = slot_queue.take_free_slot(slots_dir, 1)
    assert slot is not None
    try:
        yield slots_dir
    finally:
        os.close(slot)
        wait_until("the keeper to end", lambda: not keeper_running(slots_dir))


def test_a_keeper_just_started_is_seen_running_before_its_interpreter_is_up(
    held_line: Path,
) -> None:
    ensure_keeper(held_line)
    assert keeper_running(held_line), "a second submitter would start a second keeper"


def test_a_client_without_a_launcher_leaves_the_dispatch_to_the_keeper(
    tmp_path: Path, one_slot: None, wait_until: WaitUntil
) -> None:
    """A client never dispatches (it could be stopped with Ctrl-Z while it held the dispatch
    lock, and no job of the machine would start until it was resumed): with the dispatch lock
    held by someone else, it still returns at once, having started the keeper."""
    slots_dir = tmp_path / "slots"
    slot_queue.join_line(slots_dir, slot_queue.ticket_name(0, 0, "gone"))
    held = os.open(slots_dir / DISPATCH_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        # Another interpreter's job: no launcher serves it.
        client = threading.Thread(target=start_waiting, args=(slots_dir, "/elsewhere/python"))
        client.start()
        client.join(timeout=60)  # a deadlock guard, not a time goal
        assert not client.is_alive(), "the client waited on the dispatch lock"
        assert keeper_running(slots_dir)
    finally:
        os.close(held)
    wait_until("the keeper to drop the ticket and end", lambda: not keeper_running(slots_dir))
    assert slot_queue.line_empty(slots_dir)
