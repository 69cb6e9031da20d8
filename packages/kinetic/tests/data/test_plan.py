"""Planning a call's data refuses a plan it cannot mount before it uploads anything: local
data bound for a backend that cannot read this machine goes to the store only once every
check of the plan has passed (here: a GCS store on a fake-gcs-server, as gke uses)."""

from pathlib import Path

import pytest

from kinetic.data import Data
from kinetic.data.plan import plan_call_data
from kinetic_protocol import Capabilities, ConfigError
from kinetic_runtime.stores import open_store

pytestmark = pytest.mark.usefixtures("clean_kinetic_env")

MOUNTING = Capabilities(local_data=False, volumes=True, fuse=True)
"""A Kubernetes-like backend: its jobs cannot see this machine's files (they are uploaded
first) and it mounts FUSE data lazily."""


def test_two_fuse_files_of_different_data_in_one_directory_upload_nothing(
    tmp_path: Path, gcs_bucket: str
) -> None:
    (tmp_path / "a.csv").write_text("a\n")
    (tmp_path / "b.csv").write_text("b\n")
    store = open_store(gcs_bucket)
    volumes = [
        ("/data/a.csv", Data(str(tmp_path / "a.csv"), fuse=True)),
        ("/data/b.csv", Data(str(tmp_path / "b.csv"), fuse=True)),
    ]
    with pytest.raises(ConfigError, match="needs /data mounted with other data"):
        plan_call_data([], volumes, capabilities=MOUNTING, store=store, backend="gke")
    assert store.list("") == []


def test_a_plan_that_passes_its_checks_uploads_its_data(tmp_path: Path, gcs_bucket: str) -> None:
    (tmp_path / "a.csv").write_text("a\n")
    store = open_store(gcs_bucket)
    volumes = [("/data/a.csv", Data(str(tmp_path / "a.csv"), fuse=True))]
    planned = plan_call_data([], volumes, capabilities=MOUNTING, store=store, backend="gke")
    [spec] = planned.specs
    assert (spec.source, spec.fuse) == ("stored", True)
    assert store.read(spec.uri + spec.name) == b"a\n"
    assert [mount.path for mount in planned.mounts] == ["/data"]
