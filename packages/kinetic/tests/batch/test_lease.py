"""Taking over a dead submitter's lease: of two resumers that both saw it dead, exactly one
takes the next epoch, whichever order their reads and writes interleave in."""

from collections.abc import Callable
from pathlib import Path

import pytest

from kinetic.batch import SubmitterAliveError
from kinetic.batch.lease import LeaseHolder, latest_lease
from kinetic_protocol import SubmitterLease, layout
from kinetic_protocol.records import encode_json
from kinetic_runtime.stores.local import LocalStore

GROUP = "grp-0000beef"
LONG_AGO = "2026-01-01T00:00:00+00:00"


class _LateWriter(LocalStore):
    """The same store, but ``before_write`` runs just before this handle's first write: another
    process acting between this one's read of the lease and its write of the next."""

    def __init__(self, root: Path, before_write: Callable[[], None]) -> None:
        super().__init__(root)
        self._before_write: Callable[[], None] | None = before_write

    def write(self, key: str, data: bytes, *, if_absent: bool = False) -> None:
        before, self._before_write = self._before_write, None
        if before is not None:
            before()
        super().write(key, data, if_absent=if_absent)


@pytest.fixture
def dead_submitter(store: LocalStore) -> None:
    """Epoch 0 of ``GROUP``, whose holder stopped beating long ago."""
    lease = SubmitterLease(
        group_id=GROUP, epoch=0, owner="dead", host="laptop", pid=1, started_at=LONG_AGO,
        heartbeat_at=LONG_AGO, lease_seconds=30.0,
    )  # fmt: skip
    store.write(layout.lease_key(GROUP, 0), encode_json(lease))


def test_a_resumer_beaten_between_its_read_and_its_write_is_refused(
    store: LocalStore, dead_submitter: None
) -> None:
    winners: list[LeaseHolder] = []
    late = _LateWriter(store.root, lambda: winners.append(LeaseHolder.take_over(store, GROUP)))
    with pytest.raises(SubmitterAliveError, match=r"resumed batch .* at the same moment"):
        LeaseHolder.take_over(late, GROUP)

    [winner] = winners
    assert winner.epoch == 1
    held = latest_lease(store, GROUP)
    assert held is not None and (held.epoch, held.owner) == (1, winner.lease.owner), (
        "the refused resumer overwrote the winner's lease"
    )


def test_a_resumer_alone_takes_the_next_epoch(store: LocalStore, dead_submitter: None) -> None:
    holder = LeaseHolder.take_over(store, GROUP)
    held = latest_lease(store, GROUP)
    assert held is not None and (held.epoch, held.owner) == (1, holder.lease.owner)
    with pytest.raises(SubmitterAliveError, match="is being submitted by"):
        LeaseHolder.take_over(store, GROUP)
