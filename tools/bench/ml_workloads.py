"""Two ordinary ML programs through the local backend, against the same code run in-process.

A JAX training loop (``jax.jit``, an MLP on random data) and a Keras 3 ``fit`` of a small
model, each called as a user would: ``@kinetic.run(accelerator=...)`` and a blocking call.
The job does not set ``KERAS_BACKEND``: Kinetic's default (``jax``) must apply. Each program
measures itself (first step, which includes compilation, and the steady steps that follow),
so the report separates what Kinetic adds (``call_s - program_s``) from what the program
costs. On a machine with a GPU and CUDA JAX, ``platform`` says ``gpu``.

Prints one JSON object (times in seconds)::

    {"accelerator": "cpu", "jax": {"in_process": {...}, "kinetic": {...}},
     "keras": {"in_process": {...}, "kinetic": {...}}}

where each run holds ``call_s`` (wall time of the call), ``program_s``, ``first_step_s``,
``steps_per_s``, ``platform``, ``device_kind`` and ``final_loss``. With ``--suite``, ``suite``
holds the workload suite's programs run through Kinetic, each with the largest difference
between its numbers and the same program's in-process (0 on CPU; a GPU's kernels may differ
in the last bits), and a two-host ``cross_host_sum`` (``process_count`` must be 2).

    python -m uv run tools/bench/ml_workloads.py --width 64 --steps 20      # a smoke run
    python tools/bench/ml_workloads.py --width 4096 --steps 200            # on a GPU machine
"""

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from typing import Any


def jax_train(width: int, steps: int) -> dict[str, Any]:
    """An MLP regression trained with plain ``jax.jit`` SGD; reports its own timings."""
    import jax
    import jax.numpy as jnp

    start = time.perf_counter()
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    x = jax.random.normal(keys[0], (1024, width))
    y = jnp.sum(x[:, :8], axis=1, keepdims=True)
    params = {
        "w1": jax.random.normal(keys[1], (width, width)) / jnp.sqrt(width),
        "w2": jax.random.normal(keys[2], (width, 1)) / jnp.sqrt(width),
    }

    def loss(p: dict[str, Any]) -> Any:
        return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)

    @jax.jit
    def step(p: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        value, grads = jax.value_and_grad(loss)(p)
        return jax.tree_util.tree_map(lambda a, g: a - 0.05 * g, p, grads), value

    params, value = step(params)
    value.block_until_ready()
    first = time.perf_counter()
    for _ in range(steps):
        params, value = step(params)
    value.block_until_ready()
    end = time.perf_counter()
    device = jax.devices()[0]
    return {
        "program_s": end - start,
        "first_step_s": first - start,
        "steps_per_s": steps / (end - first),
        "platform": device.platform,
        "device_kind": device.device_kind,
        "final_loss": float(value),
    }


def keras_fit(width: int, steps: int) -> dict[str, Any]:
    """A small Keras 3 model fitted for ``steps`` batches; reports its own timings."""
    import keras
    import numpy as np

    start = time.perf_counter()
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64 * (steps + 1), width)).astype("float32")
    y = x[:, :8].sum(axis=1, keepdims=True)
    model = keras.Sequential(
        [keras.Input((width,)), keras.layers.Dense(width, activation="tanh"), keras.layers.Dense(1)]
    )
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    model.fit(x[:64], y[:64], batch_size=64, epochs=1, verbose=0)
    first = time.perf_counter()
    history = model.fit(x[64:], y[64:], batch_size=64, epochs=1, verbose=0)
    end = time.perf_counter()
    import jax

    device = jax.devices()[0]
    return {
        "backend": keras.backend.backend(),
        "program_s": end - start,
        "first_step_s": first - start,
        "steps_per_s": steps / (end - first),
        "platform": device.platform,
        "device_kind": device.device_kind,
        "final_loss": float(history.history["loss"][-1]),
    }


def _timed(call: Any, *args: Any) -> dict[str, Any]:
    start = time.perf_counter()
    report = dict(call(*args))
    report["call_s"] = time.perf_counter() - start
    return {name: round(v, 4) if isinstance(v, float) else v for name, v in report.items()}


def _in_fresh_process(program: str, width: int, steps: int) -> dict[str, Any]:
    """``program`` run in a fresh interpreter, as a script of the user's would run it."""
    import subprocess

    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import ml_workloads as m; "
        f"print(json.dumps(m._timed(m.{program}, {width}, {steps})))"
    )
    env = dict(os.environ, KERAS_BACKEND="jax")
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(
        [sys.executable, "-c", code, here], capture_output=True, text=True, check=True, env=env
    )
    return dict(json.loads(out.stdout.splitlines()[-1]))


def _suite_programs(remote_options: dict[str, Any]) -> dict[str, Any]:
    """The workload suite's programs (``tests/scenarios/workloads``) through Kinetic: whether
    each gives what the same code gives in this process, and how long each call took."""
    from pathlib import Path

    import kinetic

    suite = Path(__file__).parents[2] / "tests" / "scenarios" / "workloads"
    sys.path.insert(0, str(suite))
    import workload_programs as programs

    report: dict[str, Any] = {}
    os.environ["KERAS_BACKEND"] = "jax"  # for the in-process runs; jobs never see it
    for name, args in (("keras_fit", (5,)), ("jax_linear_regression", (20,))):
        program = getattr(programs, name)
        expected = _numbers(program(*args))
        start = time.perf_counter()
        got = _numbers(kinetic.run(**remote_options)(program)(*args))
        report[name] = {
            "max_abs_difference": max(abs(a - b) for a, b in zip(got, expected, strict=True)),
            "call_s": _round(start),
        }
    # Two hosts of one slice. The local backend gives each host its own GPUs, or puts both on
    # the CPU (saying so in their logs) when this machine has fewer GPUs than hosts.
    slice_options = {**remote_options, "accelerator": "tpu-v5litepod-2x4"}
    start = time.perf_counter()
    job = kinetic.run(**slice_options)(programs.cross_host_sum).run_async()
    total, count, _ = job.result(cleanup=False)
    log = job.logs(host=1) or ""
    report["cross_host_sum"] = {
        "sum": total,
        "process_count": count,
        "call_s": _round(start),
        "host_devices": next((line for line in log.splitlines() if "GPU" in line), ""),
    }
    job.cleanup()
    return report


def _numbers(value: Any) -> list[float]:
    """Every number in a program's result, in order (arrays, lists, tuples and dicts)."""
    import numpy as np

    if isinstance(value, dict):
        return [n for key in sorted(value) for n in _numbers(value[key])]
    if isinstance(value, list | tuple):
        return [n for item in value for n in _numbers(item)]
    if isinstance(value, str) or value is None:
        return []
    return [float(n) for n in np.ravel(np.asarray(value))]


def _round(start: float) -> float:
    return round(time.perf_counter() - start, 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--accelerator", default="cpu", help="the decorator's accelerator")
    parser.add_argument(
        "--suite", action="store_true", help="also run the workload suite's programs"
    )
    options = parser.parse_args()
    os.environ.pop("KERAS_BACKEND", None)  # the job must get Kinetic's default
    report: dict[str, Any] = {"accelerator": options.accelerator}
    # A blocking call copies the job's output to this process's stdout: keep it for the JSON.
    with (
        tempfile.TemporaryDirectory(prefix="kinetic-bench-") as tmp,
        contextlib.redirect_stdout(sys.stderr),
    ):
        os.environ.setdefault("KINETIC_HOME", tmp)
        import kinetic

        for name, program in (("jax", jax_train), ("keras", keras_fit)):
            remote = kinetic.run(accelerator=options.accelerator, backend="local")(program)
            report[name] = {
                "in_process": _in_fresh_process(program.__name__, options.width, options.steps),
                "kinetic": _timed(remote, options.width, options.steps),
            }
        if options.suite:
            report["suite"] = _suite_programs(
                {"accelerator": options.accelerator, "backend": "local"}
            )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
