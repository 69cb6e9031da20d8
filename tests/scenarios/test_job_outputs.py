"""What a job writes to ``KINETIC_OUTPUT_DIR`` with the runtime's ``outputs()`` helper (a local
directory, or ``gs://`` uploaded when the block ends) is listed and downloaded from the client,
in Python and with ``kinetic jobs outputs``, also after the job was cleaned up."""

import json
from pathlib import Path

import data_userfuncs as uf
import pytest
from click.testing import CliRunner
from scenario_support import ScenarioBackend, client_only

import kinetic
from kinetic import ConfigError
from kinetic.cli import cli
from kinetic.outputs import OutputFile

pytestmark = [pytest.mark.gcs, client_only]

NAMES = ["a.txt", "deep/b.txt"]
EXPECTED = {f"results/{name}": f"content of {name}" for name in NAMES}


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}


def test_outputs_written_by_the_job_are_listed_and_downloaded(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    job = kinetic_backend.decorate()(uf.write_outputs).run_async(NAMES)
    where = job.result(timeout=120)  # cleans up the job: outputs stay
    assert where == job.output_location
    assert job.list_outputs() == [
        OutputFile(name, len(text)) for name, text in sorted(EXPECTED.items())
    ]
    written = job.download_outputs(tmp_path / "downloaded")
    assert sorted(written) == sorted(tmp_path / "downloaded" / name for name in EXPECTED)
    assert _tree(tmp_path / "downloaded") == EXPECTED
    with pytest.raises(ConfigError, match="already exist"):
        job.download_outputs(tmp_path / "downloaded")
    assert len(job.download_outputs(tmp_path / "downloaded", overwrite=True)) == 2
    with pytest.raises(ConfigError, match="'' is an empty path"):
        job.download_outputs("")


def test_kinetic_jobs_outputs_lists_and_downloads_after_cleanup(
    kinetic_backend: ScenarioBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = kinetic_backend.decorate()(uf.write_outputs).run_async(NAMES)
    job.result(timeout=120)
    with pytest.raises(kinetic.JobNotFoundError):
        kinetic.attach(job.job_id, backend=kinetic_backend.name)  # its record is gone
    runner = CliRunner()
    base = ["--backend", kinetic_backend.name, "jobs", "outputs", job.job_id]
    listed = runner.invoke(cli, [*base, "--json"])
    assert listed.exit_code == 0, listed.output
    document = json.loads(listed.stdout)
    assert [f["name"] for f in document["files"]] == sorted(EXPECTED)
    assert document["output_dir"] == job.output_location
    target = tmp_path / "cli-download"
    fetched = runner.invoke(cli, [*base, "--download", str(target)])
    assert fetched.exit_code == 0, fetched.output
    assert _tree(target) == EXPECTED
    again = runner.invoke(cli, [*base, "--download", str(target)])
    assert again.exit_code == 2 and "already exist" in again.output
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    empty = runner.invoke(cli, [*base, "--download", ""])
    assert empty.exit_code == 2 and "'' is an empty path" in empty.output
    assert list(here.iterdir()) == []


def test_a_job_that_wrote_nothing_has_no_outputs(local_backend: ScenarioBackend) -> None:
    job = local_backend.decorate()(uf.read_paths).run_async()
    job.result(timeout=60, cleanup=False)
    assert job.list_outputs() == []
    result = CliRunner().invoke(cli, ["--backend", "local", "jobs", "outputs", job.job_id])
    assert result.exit_code == 0
    assert "No outputs (yet)." in result.output


@pytest.mark.parametrize("download", [False, True], ids=["list", "download"])
def test_outputs_of_an_unknown_job_is_an_error(
    local_backend: ScenarioBackend, tmp_path: Path, download: bool
) -> None:
    """An id that names no job and no outputs fails (exit 1) instead of 'Downloaded 0 files'."""
    target = tmp_path / "downloaded"
    extra = ["--download", str(target)] if download else []
    result = CliRunner().invoke(
        cli, ["--backend", "local", "jobs", "outputs", "no-such-job-0", *extra]
    )
    assert result.exit_code == 1, result.output
    assert "No job 'no-such-job-0'" in result.stderr and "no outputs at" in result.stderr
    assert not target.exists()
