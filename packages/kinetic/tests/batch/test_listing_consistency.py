"""A batch listing never claims completion while missing children counted by that completion."""

from collections.abc import Callable
from pathlib import Path

from kinetic.bookkeeping.records import BatchRecords
from kinetic.bookkeeping.sealed import BatchSeal
from kinetic_protocol import layout
from kinetic_runtime.stores import LocalStore


class _LateWrites(LocalStore):
    """Runs ``after_children`` right after the first listing of the children, as a submitter
    finishing in that instant would."""

    def __init__(self, root: Path, group_id: str, after_children: Callable[[], None]) -> None:
        super().__init__(root)
        self._children = layout.children_prefix(group_id)
        self._after = after_children

    def list(self, prefix: str) -> list[str]:
        keys = super().list(prefix)
        if prefix == self._children and self._after is not None:
            after, self._after = self._after, None  # type: ignore[assignment]
            after()
        return keys


def test_the_last_child_and_the_completion_landing_mid_listing_are_not_half_seen(
    tmp_path: Path, seal: BatchSeal
) -> None:
    group_id = "grp-0000abcd"
    writer = BatchRecords(LocalStore(tmp_path), group_id, seal)
    writer.add_child(0, 0, "job-0")

    def submitter_finishes() -> None:
        writer.add_child(1, 0, "job-1")
        writer.mark_complete(2, cancelled=False)

    reader = BatchRecords(_LateWrites(tmp_path, group_id, submitter_finishes), group_id, seal)
    listing = reader.listing()
    if listing.complete is not None:
        assert len(listing.latest_attempts) == listing.complete.submitted
    else:
        assert reader.listing().latest_attempts == {0: 0, 1: 0}
