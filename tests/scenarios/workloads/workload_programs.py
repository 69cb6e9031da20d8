"""User programs of the workload suite. Each imports its frameworks inside the function, the
usual style, and returns plain values the tests compare with what the same code computes in
the test's own process."""

import os
from typing import Any

__all__ = [
    "cross_host_sum",
    "jax_linear_regression",
    "keras_backend_in_job",
    "keras_fit",
    "optax_fit",
    "train_with_checkpoints",
]


def _regression_data() -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype("float32")
    y = x @ np.array([1.5, -2.0, 0.5], dtype="float32") + 0.25
    return x, y


def keras_fit(epochs: int) -> dict[str, Any]:
    """Fit a tiny Keras 3 model; say which backend Keras chose and how the loss went."""
    import keras

    keras.utils.set_random_seed(0)
    x, y = _regression_data()
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
    history = model.fit(x, y, epochs=epochs, batch_size=16, verbose=0)
    print(f"keras backend {keras.backend.backend()}: {epochs} epochs", flush=True)
    return {
        "backend": keras.backend.backend(),
        "env": os.environ.get("KERAS_BACKEND"),
        "losses": [float(v) for v in history.history["loss"]],
    }


def keras_backend_in_job() -> tuple[str, str | None]:
    import keras

    return keras.backend.backend(), os.environ.get("KERAS_BACKEND")


def jax_linear_regression(steps: int) -> tuple[Any, list[float]]:
    """Plain JAX: a jitted gradient step; returns the learned weights (an array) and losses."""
    import jax
    import jax.numpy as jnp

    x, y = _regression_data()

    def loss(w: Any) -> Any:
        return jnp.mean((x @ w[:3] + w[3] - y) ** 2)

    @jax.jit
    def step(w: Any) -> tuple[Any, Any]:
        value, grad = jax.value_and_grad(loss)(w)
        return w - 0.1 * grad, value

    w = jnp.zeros(4)
    losses = []
    for _ in range(steps):
        w, value = step(w)
        losses.append(float(value))
    return jax.device_get(w), losses


def optax_fit(steps: int) -> tuple[str, list[float]]:
    """Adam from optax, the user's own requirement."""
    import jax
    import jax.numpy as jnp
    import optax

    x, y = _regression_data()
    optimiser = optax.adam(0.1)
    w = jnp.zeros(4)
    state = optimiser.init(w)

    def loss(w: Any) -> Any:
        return jnp.mean((x @ w[:3] + w[3] - y) ** 2)

    losses = []
    for _ in range(steps):
        value, grad = jax.value_and_grad(loss)(w)
        updates, state = optimiser.update(grad, state)
        w = optax.apply_updates(w, updates)
        losses.append(float(value))
    return optax.__version__, losses


def train_with_checkpoints(total_steps: int, fail_after: int) -> dict[str, Any]:
    """Save an Orbax checkpoint under KINETIC_OUTPUT_DIR each step; the first attempt fails
    after ``fail_after`` steps (a preemption), and a later one resumes from the latest."""
    import jax.numpy as jnp
    import numpy as np
    import orbax.checkpoint as ocp

    directory = os.path.join(os.environ["KINETIC_OUTPUT_DIR"], "checkpoints")
    manager = ocp.CheckpointManager(directory)
    resumed_from = manager.latest_step() or 0
    state = {"w": jnp.zeros(3)}
    if resumed_from:
        state = manager.restore(resumed_from, args=ocp.args.StandardRestore(state))
    print(f"starting at step {resumed_from}", flush=True)
    for step in range(resumed_from + 1, total_steps + 1):
        state = {"w": state["w"] + step}
        manager.save(step, args=ocp.args.StandardSave(state))
        manager.wait_until_finished()
        print(f"saved step {step}", flush=True)
        if step == fail_after and resumed_from == 0:
            manager.close()
            raise RuntimeError(f"preempted after step {step}")
    manager.close()
    return {"resumed_from": resumed_from, "w": np.asarray(state["w"]).tolist()}


def cross_host_sum() -> tuple[float, int, int]:
    """Each host contributes ``index + 1``; the gathered sum needs every host's process."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils

    mine = jnp.array(float(jax.process_index() + 1))
    gathered = multihost_utils.process_allgather(mine)
    print(f"host {jax.process_index()} of {jax.process_count()} gathered", flush=True)
    return float(gathered.sum()), jax.process_count(), jax.process_index()
