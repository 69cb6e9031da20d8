"""``@kinetic.run(...)``: the decorator and the remote function it returns."""

import copy
import functools
import types
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar

from kinetic.data import Data
from kinetic.options import MapOptions, RunOptions
from kinetic_protocol.records import DEFAULT_PREEMPTION_RETRIES

if TYPE_CHECKING:
    from kinetic.batch import BatchHandle
    from kinetic.jobs import JobHandle

__all__ = ["RemoteFunction", "run"]

P = ParamSpec("P")
R = TypeVar("R")


class RemoteFunction(Generic[P, R]):
    """A function that runs remotely: call it to block for the value, or submit it detached."""

    def __init__(self, fn: Callable[P, R], options: RunOptions) -> None:
        self.__wrapped__ = fn
        self.options = options
        functools.update_wrapper(self, fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run remotely and block: return the value or raise the remote exception."""
        if self.options.debug:
            from kinetic._debug_call import result_with_debugger
            from kinetic.submission.debugging import debug_port

            port = debug_port()  # a malformed setting is refused before the job is submitted
            debugged: R = result_with_debugger(self.run_async(*args, **kwargs), port)
            return debugged
        job = self.run_async(*args, **kwargs)
        value: R = job.result(stream_logs=True)
        return value

    def run_async(self, *args: P.args, **kwargs: P.kwargs) -> "JobHandle":
        """Submit the call and return its durable :class:`~kinetic.JobHandle` at once."""
        from kinetic.packaging import serialize_call
        from kinetic.submission import resolve_target, submit_call

        serialized = serialize_call(self.__wrapped__, args, kwargs)
        target = resolve_target(self.options, self.__wrapped__, serialized.data)
        return submit_call(target, self.__wrapped__, args, kwargs, serialized=serialized)

    def submit(self, *args: P.args, **kwargs: P.kwargs) -> "JobHandle":
        """Alias of :meth:`run_async`, the name the FAQ uses for a detached submission."""
        return self.run_async(*args, **kwargs)

    def run_async_map(
        self,
        inputs: Iterable[Any],
        *,
        input_mode: str = "auto",
        max_concurrent: int | None = 64,
        retries: int = 0,
        fail_fast: bool = False,
        cancel_running_on_fail: bool = False,
        name: str | None = None,
        tags: dict[str, str] | None = None,
        retry_on: "Iterable[str] | None" = None,
        queue: str | None = None,
        priority: str | None = None,
        max_cost: float | None = None,
    ) -> "BatchHandle":
        """Submit one job per input and return a :class:`~kinetic.BatchHandle` at once.

        ``retry_on`` names the causes (``FailureCause`` values, e.g. ``["oom", "exit"]``) that
        ``retries`` apply to; by default every cause but ``unschedulable``, ``image`` and
        ``cancelled``. Preempted attempts are run again within ``preemption_retries`` of the
        decorator first, without spending ``retries``.

        ``queue`` and ``priority`` override the decorator's for this batch's children (see
        :func:`kinetic.run`).

        ``max_cost`` caps the batch's list cost in US dollars (``kinetic accelerators`` shows
        the prices): once what its attempts used reaches it, no new input is submitted, the
        rest are reported as not run because of it, and ``resume(max_cost=...)`` with a
        higher cap runs them. Inputs running then run to their end. It needs a
        ``max_concurrent`` and priced accelerators; the local backend bills nothing, so there
        it never stops a batch.
        """
        from kinetic.batch import run_map

        options = MapOptions.build(
            input_mode=input_mode,
            max_concurrent=max_concurrent,
            retries=retries,
            fail_fast=fail_fast,
            cancel_running_on_fail=cancel_running_on_fail,
            name=name,
            tags=tags,
            retry_on=retry_on,
            max_cost=max_cost,
        )
        run_options = self.options.overridden(queue=queue, priority=priority)
        return run_map(self.__wrapped__, run_options, inputs, options)

    def with_options(
        self, *, queue: str | None = None, priority: str | None = None
    ) -> "RemoteFunction[P, R]":
        """This remote function with another ``queue`` or ``priority`` (None keeps the
        decorator's), for one call or many: ``train.with_options(priority="high")(x)``,
        ``train.with_options(queue="team-a").run_async(x)``.

        They are options of their own, not keywords of :meth:`run_async`, whose keywords all
        go to the function (which may well have a parameter called ``queue``). The names are
        checked here; whether they exist, when the call is submitted.
        """
        return RemoteFunction(
            self.__wrapped__, self.options.overridden(queue=queue, priority=priority)
        )

    def __get__(self, instance: object, owner: type | None = None) -> "RemoteFunction[..., R]":
        """Bind like a plain function, so a decorated method works on an instance.

        ``obj.method`` is a remote function of the bound method: ``obj.method(x)``,
        ``.run_async(x)`` and ``.run_async_map(...)`` call it with ``obj`` first, and ``obj``
        is pickled with each call (so its state is the state at submission).
        """
        if instance is None:
            return self
        return RemoteFunction(types.MethodType(self.__wrapped__, instance), self.options)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the plain function: inside a job, a call to another remote function runs
        inline, and the job needs only ``kinetic-runtime``, not ``kinetic``, to load it."""
        return (copy.copy, (self.__wrapped__,))

    def __repr__(self) -> str:
        name = getattr(self.__wrapped__, "__qualname__", repr(self.__wrapped__))
        return f"<kinetic remote function {name} on {self.options.accelerator.name}>"


def run(
    accelerator: str | Sequence[str] = "tpu-v5e-1",
    container_image: str | None = None,
    base_image_repo: str | None = None,
    zone: str | None = None,
    project: str | None = None,
    capture_env_vars: list[str] | None = None,
    cluster: str | None = None,
    backend: str | None = None,
    namespace: str | None = None,
    volumes: dict[str, Data] | None = None,
    spot: bool = False,
    output_dir: str | None = None,
    debug: bool = False,
    *,
    isolate: bool = False,
    timeout: float | None = None,
    preemption_retries: int = DEFAULT_PREEMPTION_RETRIES,
    queue: str | None = None,
    priority: str | None = None,
    nodes: int = 1,
    slices: int = 1,
    capacity: str | Sequence[str] | None = None,
    max_run_duration: float | None = None,
) -> Callable[[Callable[P, R]], RemoteFunction[P, R]]:
    """Run the decorated function remotely on ``accelerator``.

    Options are checked here, at decoration time, so a bad accelerator name fails before
    anything is submitted. Settings not given fall back to ``KINETIC_*`` variables, the
    active profile, then defaults; with no GCP project configured, jobs run locally.

    ``capture_env_vars`` names variables of this process to pass to the job: exact names, or
    patterns ending in ``*`` (``"WANDB_*"``, ``"*"``). Only their names are stored; the values
    reach the job privately (a Kubernetes Secret, a local 0600 file). Variables that describe
    this machine or point at its credentials are never captured (``kinetic.env_capture``).

    ``isolate=True`` (local backend) runs jobs in a cached virtual environment of the project's
    requirements instead of the caller's interpreter, so missing dependencies show up locally
    before a cloud image is built.

    ``timeout`` (seconds, a positive number up to ten years) bounds each attempt of a job or batch
    child: past it the backend stops the attempt, which fails with cause ``timeout`` and
    keeps its output (``logs()``). Locally the supervisor enforces it from the moment the job
    starts running; on ``gke`` the pod's ``activeDeadlineSeconds`` does, from when the pod
    starts on its node (image pull included); on ``pathways`` the runtime on each host does.

    ``preemption_retries`` (a non-negative int, default 3) is how many times an attempt that
    was preempted (spot capacity taken back, evicted, its node lost) is run again as the same
    job, with the same ``KINETIC_OUTPUT_DIR``, so a job that checkpoints there resumes from its
    last checkpoint. The backend does it where the job runs (on ``gke``, Kubernetes itself),
    so no client needs to be alive; a batch's ``retries`` are not spent on it.

    ``queue`` names the queue jobs wait in for capacity (on GKE with Kueue, a LocalQueue of
    the namespace; locally it is only recorded), and ``priority`` a priority class: ``low``,
    ``normal`` and ``high`` exist everywhere, a cluster may declare more. A job of a higher
    class is admitted before those of lower ones (locally: started first when every slot is
    taken) and, on Kueue, may preempt them. Not given, they come from ``KINETIC_QUEUE`` and
    ``KINETIC_PRIORITY``, then the profile; else the backend's default queue and no class.
    A malformed name is refused here; one the backend does not have, when a call is submitted,
    before anything is uploaded. :meth:`RemoteFunction.with_options` and ``run_async_map``
    override them per call.

    ``nodes`` runs the function on that many hosts of a GPU or CPU ``accelerator``
    (``accelerator="gpu-h100-x8", nodes=4``: 4 hosts of 8 GPUs), and ``slices`` on that many
    TPU slices of a TPU shape, joined by the data-centre network (``"tpu-v5e-16",
    slices=2``: 2 slices of 4 hosts). Each host runs the function with the variables that
    ``jax.distributed.initialize()``, PyTorch's ``env://`` rendezvous and JAX multislice
    read (docs/guides/multi-node.md); host 0's return value is the result, and one host
    failing fails the job. Both are checked here with the accelerator (a count of at least
    1; ``slices`` only with a TPU shape, ``nodes`` only without one); a backend that cannot
    run several hosts per job refuses it when a call is submitted, before anything is
    uploaded. Like the accelerator they belong to the function: every call, and every input
    of ``run_async_map``, runs on the whole group.

    ``accelerator`` may be a list in order of preference within one family (GPU shapes with
    the same number of GPUs, or TPU shapes with the same hosts and chips per host), and
    ``capacity`` names the kind of capacity: ``"on-demand"`` (the default), ``"spot"``,
    ``"reservation:<name>"`` or ``"flex-start"``, or a list of them in order (``["spot",
    "on-demand"]``); ``spot=True`` means ``capacity="spot"``. A job tries each kind of
    capacity in turn on each accelerator in turn; on GKE, Kueue gives it the first with free
    quota (docs/guides/capacity.md), and ``job.status_detail().placement`` says which it got.
    The ``local`` backend runs the first. Both are checked here; a backend that cannot give
    them refuses them when a call is submitted, before anything is uploaded.
    ``max_run_duration`` (seconds, at most 7 days) bounds how long a flex-start run holds its
    nodes; it is given only with ``"flex-start"``.
    """
    given: object = accelerator
    if callable(given):  # ``@kinetic.run`` above a def: the function came as accelerator
        name = getattr(given, "__name__", repr(given))
        raise TypeError(
            f"@kinetic.run needs parentheses: write @kinetic.run() (or "
            f'@kinetic.run(accelerator="...")) above def {name}; without them the function '
            "itself was taken for the accelerator."
        )
    options = RunOptions.build(
        accelerator=accelerator,
        capture_env_vars=capture_env_vars,
        volumes=volumes,
        container_image=container_image,
        base_image_repo=base_image_repo,
        zone=zone,
        project=project,
        cluster=cluster,
        backend=backend,
        namespace=namespace,
        spot=spot,
        output_dir=output_dir,
        debug=debug,
        isolate=isolate,
        timeout=timeout,
        preemption_retries=preemption_retries,
        queue=queue,
        priority=priority,
        nodes=nodes,
        slices=slices,
        capacity=capacity,
        max_run_duration=max_run_duration,
    )

    def decorate(fn: Callable[P, R]) -> RemoteFunction[P, R]:
        if not callable(fn):
            raise TypeError(f"@kinetic.run(...) decorates a function, got {fn!r}.")
        return RemoteFunction(fn, options)

    return decorate
