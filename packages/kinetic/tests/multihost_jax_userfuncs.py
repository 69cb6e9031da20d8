"""User code for the JAX test of ``test_local_multihost``. JAX is imported at module level, so
unpickling the call imports it and the runtime joins the hosts' JAX processes first."""

import jax
import jax.experimental.multihost_utils
import jax.numpy as jnp

__all__ = ["gathered_sum"]


def gathered_sum() -> tuple[float, int]:
    """Every host contributes ``index + 1``; the gathered sum needs all hosts' processes."""
    mine = jnp.array(float(jax.process_index() + 1))
    gathered = jax.experimental.multihost_utils.process_allgather(mine)
    return float(gathered.sum()), jax.process_count()
