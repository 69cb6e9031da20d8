"""Claimed ports: no two live test processes hold the same one, and a dead process's claims
are taken over."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from kinetic_testing import ports


@pytest.fixture(autouse=True)
def own_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _ledger_files(tmp_path: Path) -> dict[int, int]:
    (ledger,) = tmp_path.glob("kinetic-test-ports-*")
    return {int(p.name): int(p.read_text()) for p in ledger.iterdir()}


def test_concurrent_processes_claim_disjoint_ports(own_ledger: Path) -> None:
    # One port a call, so each probe closes at once: the kernel alone hands a closed port out
    # again within a few hundred calls. Each child lives until all have answered (a dead
    # child's claims are free to take).
    script = (
        "import sys; from kinetic_testing.ports import claim_ports; "
        "print(*[claim_ports(1)[0] for _ in range(100)], flush=True); sys.stdin.read()"
    )
    env = {**os.environ, "TMPDIR": str(own_ledger)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    claimed = []
    for child in children:
        assert child.stdout is not None
        claimed += [int(port) for port in child.stdout.readline().split()]
    for child in children:
        child.communicate()
    assert len(claimed) == 400
    assert len(set(claimed)) == 400


def test_a_live_claim_is_skipped_and_a_dead_one_taken_over(own_ledger: Path) -> None:
    (port,) = ports.claim_ports(1)
    ledger = next(own_ledger.glob("kinetic-test-ports-*"))
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]) as other:
        (ledger / str(port)).write_text(str(other.pid))
        assert not ports._claim(ledger / str(port))
        ports.release_ports([port])  # not ours: it stays
        assert _ledger_files(own_ledger)[port] == other.pid
        other.kill()
    assert ports._claim(ledger / str(port))
    assert _ledger_files(own_ledger)[port] == os.getpid()
    ports.release_ports([port])
    assert port not in _ledger_files(own_ledger)
