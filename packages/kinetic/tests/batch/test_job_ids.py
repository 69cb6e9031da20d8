"""Child job ids: DNS-1123 labels of at most 63 characters, whatever the function is called."""

import re

import pytest

from kinetic.batch.fanout import new_group_id
from kinetic.submission import child_id_prefix
from kinetic_protocol import BatchManifest, JobRecord

DNS_1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
NAMES = [
    "f",
    "train",
    "Train_Model",
    "x" * 63,
    "train_" * 40,
    "_private",
    "__",
    "",
    "123abc",
    "9" * 100,
    "9_" * 50,
    "ünïcödé_fünction",
    "a-" * 50,
    "<lambda>",
]


def _manifest(prefix: str, group_id: str) -> BatchManifest:
    template = JobRecord(
        job_id="",
        backend="local",
        project="",
        cluster_name="",
        zone="",
        namespace="",
        bucket_name="file:///s",
        k8s_name="",
        image_uri="",
        accelerator="cpu",
        func_name="f",
        display_name="f",
        created_at="2026-01-01T00:00:00+00:00",
    )
    return BatchManifest(
        group_id=group_id,
        func_name="f",
        total_expected=1,
        job_id_prefix=prefix,
        job_template=template,
        created_at="2026-01-01T00:00:00+00:00",
    )


@pytest.mark.parametrize("name", NAMES, ids=repr)
def test_every_child_id_is_a_dns_label_within_63_characters(name: str) -> None:
    group_id = new_group_id()
    manifest = _manifest(child_id_prefix(name, group_id), group_id)
    for index in (0, 7, 999_999):
        for attempt in (0, 1, 99):
            job_id = manifest.child_job_id(index, attempt)
            assert len(job_id) <= 63, job_id
            assert DNS_1123_LABEL.fullmatch(job_id), job_id


@pytest.mark.parametrize("name", NAMES, ids=repr)
def test_the_prefix_names_the_group(name: str) -> None:
    group_id = new_group_id()
    assert child_id_prefix(name, group_id).endswith("-" + group_id.removeprefix("grp-"))


def test_ids_of_different_indices_and_attempts_differ() -> None:
    group_id = new_group_id()
    manifest = _manifest(child_id_prefix("train_" * 40, group_id), group_id)
    ids = {manifest.child_job_id(i, a) for i in (0, 1, 10, 11, 110) for a in (0, 1, 10)}
    assert len(ids) == 15


def test_a_readable_function_name_is_kept() -> None:
    assert child_id_prefix("Train_Model", "grp-0123abcd") == "train-model-0123abcd"
