"""The job runs the user's code as the user wrote it: from ``__main__``, from their project's
modules, as closures, with the environment and output directory the spec promises."""

import json
from pathlib import Path

import pytest
import scenario_funcs as uf
from scenario_support import ScenarioBackend, client_only, run_script

from kinetic.packaging.bundle import bundle_root
from kinetic_testing.signed import read_call


def _result_line(stdout: str) -> object:
    """Scripts print ``RESULT <json>``; job logs streamed by a blocking call may surround it."""
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line.removeprefix("RESULT "))
    raise AssertionError(f"no RESULT line in:\n{stdout}")


@client_only
def test_functions_and_closures_defined_in_a_scripts_main_run_remotely(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    done = run_script(
        f"""
        import json
        import kinetic

        BACKEND = {kinetic_backend.name!r}
        ACCELERATOR = {kinetic_backend.accelerator!r}
        OFFSET = 100

        def helper(x):
            return x * 2

        @kinetic.run(accelerator=ACCELERATOR, backend=BACKEND)
        def shifted(x):
            return helper(x) + OFFSET

        def make_scaler(k):
            @kinetic.run(accelerator=ACCELERATOR, backend=BACKEND)
            def scale(x):
                return x * k
            return scale

        if __name__ == "__main__":
            print("RESULT", json.dumps([shifted(1), make_scaler(3)(4)]))
        """,
        tmp_path / "project",
    )
    assert _result_line(done.stdout) == [102, 12]


@client_only
def test_a_function_from_the_users_project_is_imported_from_the_bundle(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    project = tmp_path / "userproj"
    (project / "mypkg").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "userproj"\nversion = "0"\n')
    (project / "mypkg" / "__init__.py").write_text("GREETING = 'hello from mypkg'\n")
    (project / "mypkg" / "shapes.py").write_text(
        "from pathlib import Path\n"
        "import mypkg\n\n"
        "def area(width, height):\n"
        "    return {\n"
        "        'area': width * height,\n"
        "        'greeting': mypkg.GREETING,\n"
        "        'package_file': mypkg.__file__,\n"
        "        'data': Path('data.txt').read_text(),\n"
        "    }\n"
    )
    (project / "data.txt").write_text("relative to the working directory")
    done = run_script(
        f"""
        import json
        import kinetic
        from mypkg.shapes import area

        remote_area = kinetic.run(**{kinetic_backend.options!r})(area)
        print("RESULT", json.dumps(remote_area.run_async(3, 4).result()))
        """,
        project,
        name="run.py",
    )
    result = _result_line(done.stdout)
    assert isinstance(result, dict)
    assert result["area"] == 12
    assert result["greeting"] == "hello from mypkg"
    assert result["data"] == "relative to the working directory"
    package_file = Path(result["package_file"]).resolve()
    assert package_file.name == "__init__.py"
    assert not package_file.is_relative_to(project.resolve()), (
        f"mypkg was imported from the user's checkout ({package_file}), not from the bundle"
    )


@client_only
def test_closures_over_local_values_run_remotely(kinetic_backend: ScenarioBackend) -> None:
    def make_counter(start: int, step: int):  # type: ignore[no-untyped-def]
        def count(n: int) -> list[int]:
            return [start + step * i for i in range(n)]

        return count

    remote = kinetic_backend.decorate()(make_counter(10, 5))
    assert remote.run_async(3).result() == [10, 15, 20]


def test_captured_environment_variables_are_visible_inside(
    kinetic_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "SCN_NAME": "alpha",
        "SCN_PREFIX_ONE": "1",
        "SCN_PREFIX_TWO": "2",
        "SCN_NOT_CAPTURED": "x",
    }.items():
        monkeypatch.setenv(name, value)
    remote = kinetic_backend.decorate(capture_env_vars=["SCN_NAME", "SCN_PREFIX_*"])(
        uf.env_snapshot
    )
    job = remote.run_async("SCN_")
    # Exactly the named and matching variables travel with the call (their names only) ...
    call = read_call(kinetic_backend.store(), job.job_id)
    assert call.env_names == ["SCN_NAME", "SCN_PREFIX_ONE", "SCN_PREFIX_TWO"]
    # ... and the function sees them.
    seen = job.result()
    assert {k: seen.get(k) for k in call.env_names} == {
        "SCN_NAME": "alpha",
        "SCN_PREFIX_ONE": "1",
        "SCN_PREFIX_TWO": "2",
    }


@client_only
def test_the_output_dir_is_set_writable_and_kept_after_cleanup(
    local_backend: ScenarioBackend, store_root: Path
) -> None:
    job = local_backend.decorate()(uf.write_output).run_async("metrics.txt", "loss=0.1")
    where = job.result()
    assert where["job_id"] == job.job_id
    assert Path(where["output_dir"]) == store_root / "outputs" / job.job_id
    # result() cleaned up the job's artifacts, but not what the job wrote as output.
    assert not (store_root / "jobs" / job.job_id).exists()
    assert Path(where["path"]).read_text() == "loss=0.1"


@client_only
def test_an_explicit_output_dir_is_passed_to_the_job(
    kinetic_backend: ScenarioBackend, tmp_path: Path
) -> None:
    out = tmp_path / "my-outputs"
    remote = kinetic_backend.decorate(output_dir=str(out))(uf.write_output)
    where = remote.run_async("a.txt", "A").result()
    assert where["output_dir"] == str(out)
    assert (out / "a.txt").read_text() == "A"


def test_the_scenario_jobs_ship_the_scenarios_directory_not_the_whole_repository() -> None:
    """Every scenario job unpacks its bundle: the repository's 500-odd files cost each job
    about 0.4 s of CPU, for nothing the scenarios use (``setup.cfg`` here marks the root)."""
    here = Path(__file__).resolve().parent
    assert bundle_root(Path(uf.__file__).resolve().parent) == here
