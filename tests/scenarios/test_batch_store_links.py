"""A store writer who swaps a batch child's directory for a link cannot make the batch's owner
delete what the link points to: collecting with cleanup and ``kinetic batch cleanup`` leave a
stand-in home untouched (issue 32)."""

from pathlib import Path

import batch_userfuncs as uf
import pytest
from click.testing import CliRunner
from scenario_support import ScenarioBackend

from kinetic.batch.errors import BatchError
from kinetic.cli import cli
from kinetic_protocol.errors import StoreError


def test_cleanup_never_follows_a_child_directory_swapped_for_a_link(
    local_backend: ScenarioBackend, store_root: Path, tmp_path: Path
) -> None:
    victim = tmp_path / "home"
    (victim / ".ssh").mkdir(parents=True)
    (victim / ".ssh" / "id_rsa").write_bytes(b"PRIVATE KEY")
    (victim / "thesis.tex").write_bytes(b"years of work")
    before = sorted(p.relative_to(victim).as_posix() for p in victim.rglob("*"))

    square = local_backend.decorate()(uf.square)
    batch = square.run_async_map([1, 2, 3])
    batch.wait(timeout=120)
    child = batch.jobs[1]
    assert child is not None
    swapped = store_root / "jobs" / child.job_id
    for path in sorted(swapped.rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    swapped.rmdir()
    swapped.symlink_to(victim, target_is_directory=True)

    with pytest.raises(BatchError) as raised:
        batch.results()  # default cleanup
    assert raised.value.partial_results == [1, None, 9]  # the others are collected
    refused = batch.results(return_exceptions=True)[1]  # read once: the same outcome
    outcome = CliRunner().invoke(cli, ["--backend", "local", "batch", "cleanup", batch.group_id])

    assert sorted(p.relative_to(victim).as_posix() for p in victim.rglob("*")) == before
    assert (victim / ".ssh" / "id_rsa").read_bytes() == b"PRIVATE KEY"
    assert isinstance(refused, StoreError) and "symbolic link" in str(refused), refused
    assert outcome.exit_code == 0, outcome.output
    assert not swapped.is_symlink(), "the cleanup removes the link itself"
