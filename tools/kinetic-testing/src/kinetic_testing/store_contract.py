"""The behaviour every :class:`~kinetic_protocol.store.ObjectStore` must show, as tests.

Mix :class:`StoreContract` into a test class that provides a ``store`` fixture returning a
fresh, empty store::

    class TestLocalStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path: Path) -> ObjectStore:
            return LocalStore(tmp_path)

Every store then passes the very same tests, so code written against one works on all.
"""

import random
import threading

import pytest

from kinetic_protocol.errors import ConfigError, ObjectNotFoundError, PreconditionFailedError
from kinetic_protocol.store import ObjectStore

__all__ = ["StoreContract"]

_WRITERS = 8


class StoreContract:
    """Contract tests; the subclass supplies the ``store`` fixture."""

    def test_written_bytes_read_back_unchanged(self, store: ObjectStore) -> None:
        store.write("jobs/a/handle.json", b'{"job": "a"}')
        assert store.read("jobs/a/handle.json") == b'{"job": "a"}'

    def test_create_only_write_of_existing_key_fails_and_keeps_original(
        self, store: ObjectStore
    ) -> None:
        store.write("bundles/x.zip", b"original", if_absent=True)
        with pytest.raises(PreconditionFailedError, match=r"bundles/x\.zip"):
            store.write("bundles/x.zip", b"intruder", if_absent=True)
        assert store.read("bundles/x.zip") == b"original"

    def test_plain_write_overwrites_existing_object(self, store: ObjectStore) -> None:
        store.write("k/v", b"first")
        store.write("k/v", b"second, longer than the first")
        assert store.read("k/v") == b"second, longer than the first"

    def test_reading_missing_key_raises_not_found_naming_the_key(self, store: ObjectStore) -> None:
        with pytest.raises(ObjectNotFoundError) as info:
            store.read("jobs/missing-job/result.msgpack")
        assert "jobs/missing-job/result.msgpack" in str(info.value)

    def test_exists_reports_presence_of_exact_key_only(self, store: ObjectStore) -> None:
        assert not store.exists("a/b")
        store.write("a/b", b"1")
        assert store.exists("a/b")
        assert not store.exists("a")
        assert not store.exists("a/b/c")

    def test_list_returns_sorted_nested_keys_under_prefix_only(self, store: ObjectStore) -> None:
        keys = ["jobs/b/x", "jobs/a/sub/z", "jobs/a/y", "groups/g/manifest.json", "top"]
        for key in keys:
            store.write(key, key.encode())
        assert store.list("jobs/") == ["jobs/a/sub/z", "jobs/a/y", "jobs/b/x"]
        assert store.list("jobs/a/") == ["jobs/a/sub/z", "jobs/a/y"]
        assert store.list("") == sorted(keys)
        assert store.list("nothing/") == []

    def test_list_prefix_matches_as_a_plain_string(self, store: ObjectStore) -> None:
        store.write("jobs/1/x", b"")
        store.write("jobs/10/y", b"")
        assert store.list("jobs/1") == ["jobs/1/x", "jobs/10/y"]
        assert store.list("jobs/1/") == ["jobs/1/x"]

    def test_delete_removes_object_and_tolerates_absence(self, store: ObjectStore) -> None:
        store.write("d/k", b"x")
        store.delete("d/k")
        assert not store.exists("d/k")
        store.delete("d/k")  # a second delete is not an error
        store.delete("never/written")

    def test_delete_prefix_removes_only_that_prefix_and_counts(self, store: ObjectStore) -> None:
        for key in ["jobs/j1/a", "jobs/j1/b", "jobs/j1/nested/c", "jobs/j2/a"]:
            store.write(key, b"x")
        assert store.delete_prefix("jobs/j1/") == 3
        assert store.list("") == ["jobs/j2/a"]
        assert store.delete_prefix("jobs/j1/") == 0
        # The emptied "directory" can be written into again.
        store.write("jobs/j1/again", b"y")
        assert store.read("jobs/j1/again") == b"y"

    def test_every_byte_value_survives(self, store: ObjectStore) -> None:
        data = bytes(range(256)) * 4
        store.write("bin/all-bytes", data)
        assert store.read("bin/all-bytes") == data

    def test_empty_object_is_stored_and_listed(self, store: ObjectStore) -> None:
        store.write("empty/obj", b"")
        assert store.read("empty/obj") == b""
        assert store.exists("empty/obj")
        assert store.list("empty/") == ["empty/obj"]

    def test_object_of_three_megabytes_round_trips(self, store: ObjectStore) -> None:
        data = random.Random(7).randbytes(3 * 1024 * 1024 + 17)
        store.write("big/blob", data, if_absent=True)
        assert store.read("big/blob") == data

    def test_concurrent_create_only_writers_exactly_one_wins(self, store: ObjectStore) -> None:
        barrier = threading.Barrier(_WRITERS)
        outcomes: dict[int, str] = {}

        def writer(index: int) -> None:
            barrier.wait(timeout=30)
            try:
                store.write("race/key", f"writer-{index}".encode(), if_absent=True)
            except PreconditionFailedError:
                outcomes[index] = "lost"
            else:
                outcomes[index] = "won"

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(_WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert len(outcomes) == _WRITERS, "a writer raised something other than a precondition"
        winners = [index for index, outcome in outcomes.items() if outcome == "won"]
        assert len(winners) == 1
        assert store.read("race/key") == f"writer-{winners[0]}".encode()

    def test_url_names_the_key(self, store: ObjectStore) -> None:
        store.write("outputs/j/model.bin", b"m")
        assert store.url("outputs/j/model.bin").endswith("outputs/j/model.bin")

    @pytest.mark.parametrize("key", ["", "/abs/key", "../escape", "a/../../b", "a//b", "a/./b"])
    def test_keys_that_could_escape_the_root_are_refused(
        self, store: ObjectStore, key: str
    ) -> None:
        with pytest.raises(ConfigError):
            store.write(key, b"x")
        with pytest.raises(ConfigError):
            store.read(key)
