"""The workload suite: ordinary ML programs (Keras, JAX, Orbax, optax, multi-host JAX) run
through ``@kinetic.run``, ``run_async``, ``run_async_map`` and ``result()``; each test compares
the job's values and printed lines with what the same code gives in this process."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import workload_programs as wp
from scenario_support import ScenarioBackend, backend_params, run_script


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


_MISSING = [name for name in ("keras", "optax", "orbax.checkpoint") if not _installed(name)]
if _MISSING:  # keras is not imported here: without KERAS_BACKEND it would look for TensorFlow
    pytest.skip(f"the workload suite needs the dev group ({_MISSING})", allow_module_level=True)

pytestmark = pytest.mark.slow
RESULT_TIMEOUT_S = 240


def _project(tmp_path: Path) -> Path:
    """A user's project directory: a script beside a ``pyproject.toml``."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "user"\nversion = "0"\n')
    return project


# --- Keras ------------------------------------------------------------------------------------


@pytest.mark.backends("local", "gke")
def test_keras_fit_runs_on_jax_when_the_job_is_given_no_keras_backend(
    kinetic_backend: ScenarioBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    fit = kinetic_backend.decorate()(wp.keras_fit)
    job = fit.run_async(3)
    out = job.result(timeout=RESULT_TIMEOUT_S, cleanup=False)
    assert (out["backend"], out["env"]) == ("jax", "jax")
    assert len(out["losses"]) == 3
    assert out["losses"][-1] < out["losses"][0], out["losses"]
    assert "keras backend jax: 3 epochs" in (job.logs() or "")
    job.cleanup()


def test_keras_backend_set_only_in_the_callers_script(tmp_path: Path) -> None:
    """The issue's reproduction: the script sets KERAS_BACKEND for itself, which a job does not
    inherit; the job's Keras must still run on JAX, not fall back to TensorFlow."""
    done = run_script(
        """
        import json, os
        os.environ["KERAS_BACKEND"] = "jax"
        import kinetic

        @kinetic.run(accelerator="cpu", backend="local")
        def train():
            import keras
            keras.utils.set_random_seed(0)
            model = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1)])
            model.compile(optimizer="sgd", loss="mse")
            x = keras.ops.ones((8, 2))
            history = model.fit(x, keras.ops.zeros((8, 1)), epochs=2, verbose=0)
            return keras.backend.backend(), len(history.history["loss"])

        print(json.dumps(train()))
        """,
        _project(tmp_path),
        name="train.py",
        timeout=RESULT_TIMEOUT_S,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["jax", 2]


def test_a_captured_keras_backend_wins_over_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERAS_BACKEND", "numpy")
    which = ScenarioBackend("local").decorate(capture_env_vars=["KERAS_BACKEND"])(
        wp.keras_backend_in_job
    )
    assert which() == ("numpy", "numpy")


# --- JAX --------------------------------------------------------------------------------------


@pytest.mark.backends("local", "gke")
def test_a_jitted_jax_training_loop_returns_its_arrays(kinetic_backend: ScenarioBackend) -> None:
    weights, losses = kinetic_backend.decorate()(wp.jax_linear_regression)(60)
    expected_weights, expected_losses = wp.jax_linear_regression(60)
    assert isinstance(weights, np.ndarray)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(weights, [1.5, -2.0, 0.5, 0.25], atol=0.05)


# --- Orbax: a failed attempt's checkpoint resumes the retry -----------------------------------


def test_a_retry_resumes_from_the_checkpoint_the_failed_attempt_wrote(tmp_path: Path) -> None:
    """``run_async_map(..., retries=1)`` with a fixed ``output_dir``: every attempt writes to
    the same KINETIC_OUTPUT_DIR, so the retry finds the first attempt's checkpoint."""
    outputs = tmp_path / "outputs"
    train = ScenarioBackend("local").decorate(output_dir=str(outputs))(wp.train_with_checkpoints)
    batch = train.run_async_map([(5, 3)], retries=1)
    [result] = batch.results(timeout=RESULT_TIMEOUT_S, cleanup=False)
    assert result == {"resumed_from": 3, "w": [15.0, 15.0, 15.0]}
    [job] = batch.jobs
    assert job.status().name == "SUCCEEDED"
    log = job.logs() or ""
    assert "starting at step 3" in log
    assert [line for line in log.splitlines() if line.startswith("saved step")] == [
        "saved step 4",
        "saved step 5",
    ]
    assert (
        sorted(int(p.name) for p in (outputs / "checkpoints").iterdir() if p.name.isdigit())[-1]
        == 5
    )


# --- a framework that is the user's own requirement -------------------------------------------


def test_optax_from_the_users_requirements_in_an_isolated_environment(tmp_path: Path) -> None:
    """``isolate=True``: Kinetic installs the project's requirements (optax, jax) in a venv of
    their own; the job imports optax from there."""
    project = _project(tmp_path)
    (project / "pyproject.toml").unlink()
    (project / "requirements.txt").write_text("jax[cpu]\noptax\n")
    (project / "programs.py").write_text(Path(wp.__file__).read_text())
    done = run_script(
        """
        import json, sys
        import kinetic
        import programs

        fit = kinetic.run(accelerator="cpu", backend="local", isolate=True)(programs.optax_fit)
        version, losses = fit(40)
        print(json.dumps([version, losses]))
        """,
        project,
        name="train.py",
        timeout=RESULT_TIMEOUT_S,
    )
    version, losses = json.loads(done.stdout.strip().splitlines()[-1])
    _, expected_losses = wp.optax_fit(40)
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-4, atol=1e-5)
    assert version, "optax imported in the job"
    assert losses[-1] < losses[0] / 10


# --- multi-host JAX: the function imports JAX in its body ------------------------------------


@pytest.fixture(params=backend_params("local", "pathways"))
def multihost_backend(request: pytest.FixtureRequest) -> ScenarioBackend:
    request.getfixturevalue(f"{request.param}_scenario_env")
    return ScenarioBackend(request.param)


def test_a_function_importing_jax_in_its_body_runs_as_one_slice(
    multihost_backend: ScenarioBackend,
) -> None:
    assert "jax" not in dir(wp), "the program must import JAX only when it runs"
    gather = multihost_backend.decorate(accelerator="tpu-v5litepod-2x4")(wp.cross_host_sum)
    job = gather.run_async()
    assert job.result(timeout=RESULT_TIMEOUT_S, cleanup=False) == (3.0, 2, 0)
    for host in (0, 1):
        log = job.logs(host=host) or ""
        assert f"jax.distributed initialised (host {host} of 2)" in log
        assert f"host {host} of 2 gathered" in log
    job.cleanup()
