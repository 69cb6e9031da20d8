"""The runtime's ``data`` phase, on hand-staged jobs: the payload's data references become the
staged paths, and data that cannot be staged fails the job in that phase, before it runs."""

from pathlib import Path

import pytest
from runtime_jobs import JobStage, pickled_call

from kinetic_protocol import DataSpec, Failed, Succeeded, layout
from kinetic_protocol.data import PERSISTENT_ID_TAG


class _Ref:
    """Pickles as a persistent id, as the client's pickler writes each kinetic.Data."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __reduce__(self) -> tuple[object, ...]:
        raise AssertionError("pickled through persistent_id only")


def _payload_with_refs(fn: object, *indexes: int) -> bytes:
    import io

    import cloudpickle

    class Pickler(cloudpickle.Pickler):  # type: ignore[misc]
        def persistent_id(self, obj: object) -> tuple[str, int] | None:
            return (PERSISTENT_ID_TAG, obj.index) if isinstance(obj, _Ref) else None

    buffer = io.BytesIO()
    Pickler(buffer).dump((fn, tuple(_Ref(i) for i in indexes), {}))
    return buffer.getvalue()


def _lister() -> object:
    """A function pickled by value (a closure), as a user's ``__main__`` function would be."""

    def listing(*paths: str) -> list[object]:
        import os

        return [
            (type(p).__name__, p, sorted(os.listdir(p)) if os.path.isdir(p) else open(p).read())
            for p in paths
        ]

    return listing


def _value(envelope: object) -> object:
    import cloudpickle

    assert isinstance(envelope, Succeeded)
    return cloudpickle.loads(envelope.value)


def test_local_data_is_handed_over_in_place(jobs: JobStage, tmp_path: Path) -> None:
    source = tmp_path / "set"
    source.mkdir()
    (source / "a.txt").write_text("A")
    spec = DataSpec(source="local", uri=str(source), is_dir=True)
    jobs.stage("j1", _payload_with_refs(_lister(), 0, 0), data=[spec])
    run = jobs.run("j1")
    assert _value(run.envelope) == [("str", str(source), ["a.txt"])] * 2, run.output


def test_data_uploaded_to_a_file_store_is_read_from_it(jobs: JobStage) -> None:
    prefix = layout.data_files_prefix("f" * 64)
    jobs.store.write(prefix + "config.json", b"{}")
    spec = DataSpec(source="stored", uri=prefix, is_dir=False, name="config.json")
    jobs.stage("j2", _payload_with_refs(_lister(), 0), data=[spec])
    run = jobs.run("j2")
    assert _value(run.envelope) == [("str", jobs.store.url(prefix + "config.json"), "{}")]


def test_an_upload_gone_from_the_store_fails_in_the_data_phase(jobs: JobStage) -> None:
    spec = DataSpec(
        source="stored", uri=layout.data_files_prefix("e" * 64), is_dir=True, label="/home/me/set"
    )
    jobs.stage("j3", _payload_with_refs(_lister(), 0), data=[spec])
    run = jobs.run("j3")
    assert run.exit_code == 2
    assert isinstance(run.envelope, Failed) and run.envelope.phase == "data"
    assert "/home/me/set is gone from the jobs store" in run.envelope.message
    assert run.envelope.exc_type.endswith("DataUnavailableError")


def test_a_payload_that_names_data_the_call_does_not_list_is_corrupt(jobs: JobStage) -> None:
    jobs.stage("j4", _payload_with_refs(_lister(), 3))
    run = jobs.run("j4")
    assert isinstance(run.envelope, Failed) and run.envelope.phase == "deserialize"
    assert "does not list for it (0 entries)" in run.envelope.message


def test_a_plain_payload_needs_no_data(jobs: JobStage) -> None:
    jobs.stage("j5", pickled_call(len, [1, 2]))
    run = jobs.run("j5")
    assert isinstance(run.envelope, Succeeded), run.output


@pytest.mark.gcs
def test_the_same_gs_data_named_twice_is_downloaded_once(jobs: JobStage, gcs_bucket: str) -> None:
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    client = storage.Client(project="t", credentials=AnonymousCredentials())  # type: ignore[no-untyped-call]
    client.bucket(gcs_bucket.removeprefix("gs://")).blob("sets/a.txt").upload_from_string("A")
    uri = f"{gcs_bucket}/sets/"
    specs = [
        DataSpec(source="gcs", uri=uri, is_dir=True, label="first"),
        DataSpec(source="gcs", uri=uri, is_dir=True, label="second"),
    ]
    jobs.stage("j6", _payload_with_refs(_lister(), 0, 1), data=specs)
    run = jobs.run("j6")
    listed = _value(run.envelope)
    assert listed[0] == listed[1] and listed[0][2] == ["a.txt"], run.output
    assert run.output.count("data: first -> ") == 1 and "data: second" not in run.output


@pytest.mark.gcs
def test_data_downloaded_beside_the_runtimes_own_workdir_is_removed_with_it(
    jobs: JobStage, gcs_bucket: str, tmp_path: Path
) -> None:
    """A pod's runtime (no ``--workdir``) stages ``gs://`` data in ``<workdir>-data`` and
    removes that too when the job ends."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    client = storage.Client(project="t", credentials=AnonymousCredentials())  # type: ignore[no-untyped-call]
    client.bucket(gcs_bucket.removeprefix("gs://")).blob("kept/a.txt").upload_from_string("A")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    spec = DataSpec(source="gcs", uri=f"{gcs_bucket}/kept/", is_dir=True)
    jobs.stage("j7", _payload_with_refs(_lister(), 0), data=[spec])
    run = jobs.run("j7", env={"TMPDIR": str(tmp)}, own_workdir=True)
    [(_, staged, files)] = _value(run.envelope)  # type: ignore[misc]
    assert files == ["a.txt"], run.output
    assert Path(staged).relative_to(tmp).parts[0].endswith("-data"), staged
    assert list(tmp.iterdir()) == []


def test_data_in_a_file_store_holding_a_link_is_refused(jobs: JobStage, tmp_path: Path) -> None:
    """Data uploaded to a ``file://`` store is read in place: a link a store writer put among
    its files would have the job read whatever it points at."""
    secret = tmp_path / "id_ed25519"
    secret.write_text("PRIVATE KEY")
    prefix = layout.data_files_prefix("d" * 64)
    jobs.store.write(prefix + "train.csv", b"x,y\n")
    Path(jobs.store.url(prefix + "train.csv")).with_name("more.csv").symlink_to(secret)
    spec = DataSpec(source="stored", uri=prefix, is_dir=True, label="/home/me/set")
    jobs.stage("j6", _payload_with_refs(_lister(), 0), data=[spec])
    run = jobs.run("j6")
    assert isinstance(run.envelope, Failed) and run.envelope.phase == "data", run.output
    assert f"symbolic links ({prefix}more.csv)" in run.envelope.message
    assert "PRIVATE KEY" not in run.output
