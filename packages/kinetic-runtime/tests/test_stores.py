"""LocalStore and GCSStore pass the shared store contract; open_store parses URIs strictly."""

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from kinetic_protocol.errors import ConfigError, ObjectNotFoundError, StorageError
from kinetic_protocol.store import ObjectStore
from kinetic_runtime.stores import (
    GCSStore,
    LocalStore,
    default_local_store_uri,
    open_store,
)
from kinetic_testing.fake_gcs import FakeGcsServer
from kinetic_testing.store_contract import StoreContract


class TestLocalStore(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> ObjectStore:
        return LocalStore(tmp_path / "store")


@pytest.mark.gcs
class TestGCSStore(StoreContract):
    @pytest.fixture
    def store(self, gcs_bucket: str) -> ObjectStore:
        return open_store(gcs_bucket)


@pytest.mark.gcs
class TestGCSStoreWithPrefix(StoreContract):
    """The same contract holds when the store is rooted below a bucket's top level."""

    @pytest.fixture
    def store(self, gcs_bucket: str) -> ObjectStore:
        return open_store(f"{gcs_bucket}/team/kinetic")


# --- LocalStore specifics -------------------------------------------------------------------


def test_local_url_is_the_absolute_file_path_user_code_can_open(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.write("outputs/j1/metrics.txt", b"loss=0.1")
    path = store.url("outputs/j1/metrics.txt")
    assert Path(path) == tmp_path / "outputs" / "j1" / "metrics.txt"
    assert Path(path).read_bytes() == b"loss=0.1"


def test_local_list_hides_temporary_files_of_unfinished_writes(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.write("jobs/j/handle.json", b"{}")
    (tmp_path / "jobs" / "j" / ".kinetic-tmp-0123456789abcdef").write_bytes(b"partial")
    assert store.list("") == ["jobs/j/handle.json"]


def test_local_writes_leave_no_temporary_files(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.write("a/b", b"1")
    store.write("a/b", b"2")
    with pytest.raises(Exception, match="already exists"):
        store.write("a/b", b"3", if_absent=True)
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["b"]


def test_local_delete_prefix_removes_emptied_directories(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.write("jobs/j1/deep/x", b"1")
    store.write("jobs/j2/y", b"2")
    assert store.delete_prefix("jobs/j1/") == 1
    assert not (tmp_path / "jobs" / "j1").exists()
    assert (tmp_path / "jobs" / "j2" / "y").exists()


def test_local_key_under_an_existing_object_is_a_storage_error(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    store.write("a", b"file")
    with pytest.raises(StorageError, match="'a/b'"):
        store.write("a/b", b"x")
    with pytest.raises(ObjectNotFoundError):
        store.read("a/b")


def test_local_store_refuses_a_relative_root() -> None:
    with pytest.raises(ConfigError, match="not an absolute path"):
        LocalStore("relative/dir")


def test_local_reserved_temporary_names_are_refused_as_keys(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="reserved"):
        LocalStore(tmp_path).write("a/.kinetic-tmp-x", b"")


# --- open_store -----------------------------------------------------------------------------


def test_open_store_file_uri_and_plain_path_give_local_stores(tmp_path: Path) -> None:
    by_uri = open_store(tmp_path.as_uri())
    by_path = open_store(str(tmp_path))
    assert isinstance(by_uri, LocalStore)
    assert isinstance(by_path, LocalStore)
    assert by_uri.root == by_path.root == tmp_path


def test_open_store_reopens_a_local_store_from_its_own_uri(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "with space %")
    store.write("k", b"v")
    again = open_store(store.uri)
    assert again.uri == store.uri
    assert again.read("k") == b"v"


def test_open_store_gs_uri_gives_gcs_store_without_network() -> None:
    store = open_store("gs://my-bucket/some/prefix/")
    assert isinstance(store, GCSStore)
    assert store.bucket_name == "my-bucket"
    assert store.prefix == "some/prefix/"
    assert store.uri == "gs://my-bucket/some/prefix"
    assert store.url("jobs/j/x") == "gs://my-bucket/some/prefix/jobs/j/x"
    assert open_store("gs://my-bucket").uri == "gs://my-bucket"


@pytest.mark.parametrize(
    "uri",
    [
        "",
        "relative/path",
        "~/store",
        "s3://bucket/x",
        "gs://",
        "gs:///prefix-without-bucket",
        "gs://Bad_Bucket!",
        "gs://bucket/a/../b",
        "file://relative/path",
        "file:relative",
        "gs://bucket/x?generation=1",
        "memory://",
    ],
)
def test_open_store_rejects_malformed_uris_naming_value_and_accepted_forms(uri: str) -> None:
    with pytest.raises(ConfigError) as info:
        open_store(uri)
    message = str(info.value)
    assert repr(uri) in message
    assert "gs://BUCKET" in message
    assert "file:///" in message


def test_default_local_store_uri_follows_kinetic_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_HOME", str(tmp_path / "home"))
    assert default_local_store_uri() == (tmp_path / "home" / "store").as_uri()
    monkeypatch.delenv("KINETIC_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    assert default_local_store_uri() == (tmp_path / "user" / ".kinetic" / "store").as_uri()


# --- GCSStore specifics ---------------------------------------------------------------------


@pytest.mark.gcs
def test_gcs_missing_bucket_says_which_and_how_to_create_it(fake_gcs: FakeGcsServer) -> None:
    store = open_store("gs://kinetic-no-such-bucket")
    with pytest.raises(StorageError) as write_info:
        store.write("k", b"v")
    with pytest.raises(StorageError) as read_info:
        store.read("k")
    for info in (write_info, read_info):
        assert "kinetic-no-such-bucket" in str(info.value)
        assert "gcloud storage buckets create gs://kinetic-no-such-bucket" in str(info.value)
        assert not isinstance(info.value, ObjectNotFoundError)


@pytest.mark.gcs
def test_gcs_prefixed_store_keeps_keys_inside_its_prefix(gcs_bucket: str) -> None:
    outer = open_store(gcs_bucket)
    inner = open_store(f"{gcs_bucket}/team")
    inner.write("jobs/j/handle.json", b"{}")
    outer.write("jobs/other", b"{}")
    assert outer.list("") == ["jobs/other", "team/jobs/j/handle.json"]
    assert inner.list("") == ["jobs/j/handle.json"]
    assert inner.delete_prefix("") == 1
    assert outer.list("") == ["jobs/other"]


# --- import hygiene -------------------------------------------------------------------------


def test_importing_stores_does_not_import_google_cloud_storage() -> None:
    code = (
        "import sys, kinetic_runtime.stores\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('google'))\n"
        "print(','.join(loaded))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert result.stdout.strip() == ""


@pytest.mark.gcs
def test_fake_gcs_server_answers_inside_its_block_and_is_gone_after() -> None:
    with FakeGcsServer() as server:
        server.create_bucket("kinetic-lifecycle")
        with urllib.request.urlopen(f"{server.endpoint}/storage/v1/b/kinetic-lifecycle") as resp:
            assert json.load(resp)["name"] == "kinetic-lifecycle"
        process = server._process
        assert process is not None
    assert process.poll() is not None
