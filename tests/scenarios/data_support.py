"""Helpers of the data scenarios: what a backend can do, objects in a fake GCS bucket, the
store's uploaded data, a locally built Hugging Face dataset."""

from pathlib import Path

from google.auth.credentials import AnonymousCredentials
from google.cloud import storage
from scenario_support import ScenarioBackend

from kinetic.backends import load_factory
from kinetic_protocol import Capabilities, layout

__all__ = [
    "build_hf_repo",
    "capabilities",
    "gcs_client",
    "hf_environment",
    "put_objects",
    "uploaded_hashes",
]


def capabilities(backend: ScenarioBackend) -> Capabilities:
    """What ``backend`` declares, read from its class as the client reads it."""
    declared: Capabilities = getattr(load_factory(backend.name), "capabilities")  # noqa: B009
    return declared


def gcs_client() -> storage.Client:
    """A real client of the fake GCS server (``STORAGE_EMULATOR_HOST``)."""
    return storage.Client(project="test", credentials=AnonymousCredentials())  # type: ignore[no-untyped-call]


def put_objects(bucket_uri: str, objects: dict[str, str]) -> None:
    bucket = gcs_client().bucket(bucket_uri.removeprefix("gs://"))
    for name, text in objects.items():
        bucket.blob(name).upload_from_string(text)


def uploaded_hashes(backend: ScenarioBackend) -> set[str]:
    """Content hashes whose upload is complete (a marker) in the backend's store."""
    keys = backend.store().list("data/")
    return {key.split("/")[1] for key in keys if key == layout.data_marker_key(key.split("/")[1])}


def build_hf_repo(root: Path, repo: str) -> Path:
    """A dataset repository built with the real ``datasets`` library, laid out as on the hub:
    parquet files per config and split, and a README whose YAML declares the configs."""
    import datasets

    directory = root / repo
    (directory / "plain").mkdir(parents=True)
    (directory / "shout").mkdir()
    datasets.disable_progress_bars()
    train = datasets.Dataset.from_dict({"text": ["alpha", "beta", "gamma"], "label": [0, 1, 0]})
    train.to_parquet(str(directory / "plain" / "train-00000.parquet"))
    train.select([1]).to_parquet(str(directory / "plain" / "test-00000.parquet"))
    loud = datasets.Dataset.from_dict({"text": ["ALPHA", "BETA"], "label": [0, 1]})
    loud.to_parquet(str(directory / "shout" / "train-00000.parquet"))
    (directory / "README.md").write_text(
        "---\nconfigs:\n"
        "- config_name: plain\n  default: true\n  data_files:\n"
        "  - split: train\n    path: plain/train-*.parquet\n"
        "  - split: test\n    path: plain/test-*.parquet\n"
        "- config_name: shout\n  data_files:\n"
        "  - split: train\n    path: shout/train-*.parquet\n---\n"
    )
    return directory


def hf_environment(mirror: Path, cache: Path) -> dict[str, str]:
    """What a job needs to load hf:// data from ``mirror``, never from the network."""
    return {
        "KINETIC_HF_MIRROR": str(mirror),
        "HF_HOME": str(cache),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }
