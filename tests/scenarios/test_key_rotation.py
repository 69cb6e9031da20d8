"""Rotating the signing keys from the CLI keeps older jobs readable; retiring a key makes what
it signed unreadable (a key believed leaked)."""

from typing import Any

import pytest
import scenario_funcs as uf
from click.testing import CliRunner, Result
from scenario_support import ScenarioBackend

import kinetic
from kinetic import IntegrityError, JobStatus

pytestmark = pytest.mark.backends("local", "gke")


def _keys(backend: ScenarioBackend, *args: str) -> Result:
    from kinetic.cli import cli

    result = CliRunner().invoke(
        cli, ["keys", *args, "--backend", backend.name], prog_name="kinetic"
    )
    assert result.exit_code == 0, result.output
    return result


def test_rotation_keeps_old_results_and_retiring_the_old_key_refuses_them(
    kinetic_backend: ScenarioBackend,
) -> None:
    add = kinetic_backend.decorate()(uf.add)
    before = add.run_async(1)
    assert before.wait(timeout=120).status is JobStatus.SUCCEEDED
    old_key = _keys(kinetic_backend, "show", "--json").output.split('"current": "')[1][:16]

    _keys(kinetic_backend, "rotate")
    assert before.result(cleanup=False) == 1, "a rotation must not lose older results"
    after = add.run_async(2)
    assert after.result(timeout=120) == 2

    _keys(kinetic_backend, "retire", old_key, "--yes")
    with pytest.raises(IntegrityError, match=f"signed with key {old_key}"):
        before.result()


def test_a_rotation_made_elsewhere_is_picked_up_when_a_result_names_the_new_key(
    kinetic_backend: ScenarioBackend,
) -> None:
    """This process read the keys before another machine rotated them: the job signs its
    result with the new key, which this process reads again rather than refusing it."""
    from kinetic.backends import load_factory
    from kinetic.config import resolve_settings

    add = kinetic_backend.decorate()(uf.add)
    assert add(1) == 1  # this process has now read (and may keep) the keyring
    factory: Any = load_factory(kinetic_backend.name)  # a new object: no keys read yet
    elsewhere = factory(
        resolve_settings(backend=kinetic_backend.name, quiet=True).backend_settings()
    )
    rotated = elsewhere.signing_keys(create=False).rotated()
    elsewhere.replace_signing_keys(rotated)
    job = add.run_async(2)
    assert job.result(timeout=120) == 2


def _cli(backend: ScenarioBackend, *args: str) -> Result:
    from kinetic.cli import cli

    return CliRunner().invoke(cli, [*args, "--backend", backend.name], prog_name="kinetic")


def test_what_a_retired_key_signed_is_still_cleaned_up(kinetic_backend: ScenarioBackend) -> None:
    """Retiring a key makes what it signed unreadable, not undeletable: ``kinetic jobs
    cleanup``, ``kinetic batch cleanup`` and a handle held from before remove it all."""
    from kinetic_protocol import layout

    add = kinetic_backend.decorate()(uf.add)
    job = add.run_async(1)
    assert job.wait(timeout=120).status is JobStatus.SUCCEEDED
    batch = add.run_async_map([1, 2], max_concurrent=None)
    held = add.run_async_map([3], max_concurrent=None)
    for handle in (batch, held):
        handle.wait(timeout=120)
    children = [child.job_id for b in (batch, held) for child in b.jobs if child is not None]
    old_key = _keys(kinetic_backend, "show", "--json").output.split('"current": "')[1][:16]
    _keys(kinetic_backend, "rotate")
    _keys(kinetic_backend, "retire", old_key, "--yes")
    with pytest.raises(IntegrityError):
        kinetic.attach_batch(batch.group_id, backend=kinetic_backend.name)

    cleaned = _cli(kinetic_backend, "jobs", "cleanup", job.job_id)
    assert cleaned.exit_code == 0, cleaned.output
    cleaned = _cli(kinetic_backend, "batch", "cleanup", batch.group_id)
    assert cleaned.exit_code == 0, cleaned.output
    held.cleanup()

    store = kinetic_backend.store()
    for group_id in (batch.group_id, held.group_id):
        assert not store.exists(layout.manifest_key(group_id))
        assert store.list(layout.group_prefix(group_id)) == []
    for job_id in [job.job_id, *children]:
        assert store.list(layout.job_prefix(job_id)) == [], job_id


def test_cleanup_of_an_unverifiable_record_never_reaches_another_jobs_resource(
    kinetic_backend: ScenarioBackend,
) -> None:
    """Cleanup reads a record it cannot verify (a retired key's) as stored, so such a record
    may name only the job the user gave: a forged one that names another job's resource (on
    gke, its Kubernetes Job) is refused and that job stays."""
    import msgspec

    from kinetic_protocol import Keyring, layout
    from kinetic_protocol.signing import seal_json

    victim = kinetic_backend.decorate()(uf.add).run_async(1, 2)
    assert victim.wait(timeout=120).status is JobStatus.SUCCEEDED
    forged_id = f"{victim.job_id}-forged"
    forged = msgspec.structs.replace(victim.record, job_id=forged_id, k8s_name=victim.k8s_name)
    stranger = Keyring.generate(source="a store writer")
    kinetic_backend.store().write(
        layout.job_record_key(forged_id), seal_json(stranger, "job", forged_id, forged)
    )

    refused = _cli(kinetic_backend, "jobs", "cleanup", forged_id)
    assert refused.exit_code != 0, refused.output
    assert f"resource {victim.k8s_name!r}" in refused.output, refused.output
    assert "Nothing was deleted" in refused.output, refused.output
    assert victim.status() is JobStatus.SUCCEEDED
    assert victim.result(timeout=60) == 3
