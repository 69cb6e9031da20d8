"""``kinetic_runtime.outputs.outputs()``: files written in the block end up in
``KINETIC_OUTPUT_DIR``, a local directory as is, ``gs://`` uploaded when the block ends (also
when it raised)."""

from pathlib import Path

import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage

from kinetic_protocol import ConfigError
from kinetic_runtime.outputs import outputs


def _objects(bucket_uri: str) -> dict[str, bytes]:
    client = storage.Client(project="t", credentials=AnonymousCredentials())  # type: ignore[no-untyped-call]
    bucket = bucket_uri.removeprefix("gs://")
    return {blob.name: blob.download_as_bytes() for blob in client.list_blobs(bucket)}


def test_a_local_output_dir_is_written_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_OUTPUT_DIR", str(tmp_path / "out"))
    with outputs("ckpt") as out:
        assert out == tmp_path / "out" / "ckpt"
        (out / "step-1.bin").write_bytes(b"1")
    assert (tmp_path / "out" / "ckpt" / "step-1.bin").read_bytes() == b"1"


@pytest.mark.gcs
def test_a_gs_output_dir_gets_the_blocks_files_when_it_ends(
    gcs_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_OUTPUT_DIR", f"{gcs_bucket}/outputs/job-1/")
    with outputs() as out:
        (out / "metrics.json").write_text("{}")
        (out / "nested").mkdir()
        (out / "nested" / "model.bin").write_bytes(b"M")
        assert _objects(gcs_bucket) == {}, "nothing is uploaded before the block ends"
    assert _objects(gcs_bucket) == {
        "outputs/job-1/metrics.json": b"{}",
        "outputs/job-1/nested/model.bin": b"M",
    }
    assert not out.exists(), "the staging directory is removed"


@pytest.mark.gcs
def test_what_was_written_before_an_exception_is_kept(
    gcs_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINETIC_OUTPUT_DIR", f"{gcs_bucket}/run")

    def train() -> None:
        with outputs("ckpt") as out:
            (out / "last-good.bin").write_bytes(b"G")
            raise RuntimeError("diverged")

    with pytest.raises(RuntimeError, match="diverged"):
        train()
    assert _objects(gcs_bucket) == {"run/ckpt/last-good.bin": b"G"}


def test_outside_a_job_or_with_a_path_that_climbs_out_it_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("KINETIC_OUTPUT_DIR", raising=False)
    with pytest.raises(ConfigError, match="KINETIC_OUTPUT_DIR is not set"), outputs():
        pass
    monkeypatch.setenv("KINETIC_OUTPUT_DIR", str(tmp_path))
    with pytest.raises(ConfigError, match=r"without '\.\.'"), outputs("../elsewhere"):
        pass
