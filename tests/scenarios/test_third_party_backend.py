"""A backend Kinetic has never heard of, found only through its entry point, is a first-class
backend: its settings are listed, its preparation step runs, its capabilities are obeyed."""

import json
import re
from pathlib import Path

import pytest
import scenario_funcs
from click.testing import CliRunner

import kinetic
from kinetic.cli import cli as cli_main

pytestmark = pytest.mark.usefixtures("example_scenario_env")

_CLIENT = Path(__file__).resolve().parents[2] / "packages" / "kinetic" / "src" / "kinetic"


def test_its_settings_are_listed_by_config_show() -> None:
    result = CliRunner().invoke(cli_main, ["--backend", "example", "config", "show", "--json"])
    assert result.exit_code == 0, result.output
    listed = {entry["env"]: entry for entry in json.loads(result.output)["settings"].values()}
    assert listed["KINETIC_EXAMPLE_ROOT"]["owner"] == "example-backend (tests)"
    assert json.loads(result.output)["settings"]["backend"]["value"] == "example"


def test_its_preparation_runs_and_is_kept_with_the_job() -> None:
    job = kinetic.run(accelerator="cpu", backend="example")(scenario_funcs.add).run_async(2, 3)
    assert job.result(timeout=60, cleanup=False) == 5
    record = kinetic.attach(job.job_id, backend="example")._record  # as the store holds it
    assert record.backend == "example"
    assert record.backend_data == {"prepared-by": "example"}


def test_volumes_are_refused_by_capability_before_anything_is_written(tmp_path: Path) -> None:
    remote = kinetic.run(
        accelerator="cpu", backend="example", volumes={"/data": kinetic.Data(str(tmp_path))}
    )(scenario_funcs.add)
    with pytest.raises(kinetic.ConfigError, match="volumes are not supported on the 'example'"):
        remote.run_async(1, 2)


def test_the_client_never_asks_for_a_backend_by_name() -> None:
    """Branching on names is what capabilities replace; only the settings default names one."""
    compared = re.compile(r"""(==|!=|\bin\b)\s*\(?["'](local|gke|pathways)["']""")
    offenders = [
        f"{path.relative_to(_CLIENT)}:{number}: {line.strip()}"
        for path in sorted(_CLIENT.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if compared.search(line)
    ]
    assert offenders == []
