"""``run_async_map``: validate and pickle everything, store the batch, then submit the children.

The order is what makes a batch survive its submitter: the function and every input are stored
before the manifest, and the manifest (from then on the batch exists) before the first child,
so any machine can finish the batch (``resume``) from the store alone.

On a backend with array batches (``Capabilities.array_batches``) the children are one array
object, created right after the manifest: the batch is then complete, and the backend keeps
``max_concurrent`` running, retries and applies fail-fast with no client alive. Batches the
array cannot express (fail-fast that lets running children finish, inputs that could not be
pickled, more inputs than one array holds) take the per-child path.
"""

import contextlib
import secrets
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import msgspec

from kinetic import _log
from kinetic.backends import array_backend
from kinetic.batch.array import client_rule
from kinetic.batch.children import ChildJobs
from kinetic.batch.handle import BatchHandle
from kinetic.batch.inputs import to_call_arguments
from kinetic.batch.lease import LeaseHolder
from kinetic.batch.spending import SpendingMeter, check_priced
from kinetic.batch.state import BatchState
from kinetic.batch.stored_call import PickledBatch
from kinetic.batch.submitter import FailurePolicy, Submitter
from kinetic.bookkeeping.records import BatchRecords
from kinetic.bookkeeping.sealed import BatchSeal
from kinetic.options import MapOptions, RunOptions
from kinetic.submission import (
    captured_env,
    child_id_prefix,
    func_name_of,
    job_record,
    resolve_target,
)
from kinetic.usage import billed
from kinetic_protocol import (
    ArrayBackend,
    Backend,
    BatchManifest,
    KineticError,
    layout,
)

__all__ = ["new_group_id", "run_map"]

_UNBOUNDED_WARNING = 100


def new_group_id() -> str:
    return f"grp-{secrets.token_hex(4)}"


def run_map(
    fn: Callable[..., Any], run_options: RunOptions, inputs: Iterable[Any], options: MapOptions
) -> BatchHandle:
    """Fan ``fn``, decorated with ``run_options``, out over ``inputs``; see
    ``RemoteFunction.run_async_map``."""
    items = list(inputs)
    calls = to_call_arguments(items, options.input_mode)
    if options.max_concurrent is None and len(items) > _UNBOUNDED_WARNING:
        _log.say(
            f"Submitting {len(items)} jobs with max_concurrent=None; set a limit "
            "(e.g. max_concurrent=64) to bound how many run at once."
        )
    pickled = PickledBatch(fn, calls)  # every input pickled before anything is resolved
    if options.max_cost is not None:
        check_priced(run_options, options.max_cost, options.max_concurrent)
    target = resolve_target(run_options, fn, pickled.data)
    created_at = datetime.now(UTC).isoformat(timespec="seconds")
    func_name = func_name_of(fn)
    template = job_record(target, func_name, "", created_at=created_at)
    if options.max_cost is not None and not billed(template):
        _log.say(
            f"max_cost={options.max_cost:g}: the {template.backend} backend runs on this "
            "machine's hardware and bills nothing, so the cap never stops this batch."
        )
    data = pickled.plan(target)  # local data uploaded, once, before the batch is written
    group_id = new_group_id()
    prefix = child_id_prefix(getattr(fn, "__name__", "job"), group_id)
    array = None
    if not pickled.errors and options.max_cost is None:  # an array is submitted whole
        array = array_backend(
            target.backend,
            len(items),
            fail_fast=options.fail_fast,
            cancel_running_on_fail=options.cancel_running_on_fail,
        )
    manifest = BatchManifest(
        group_id=group_id,
        func_name=func_name,
        total_expected=len(items),
        job_id_prefix=prefix,
        job_template=msgspec.structs.replace(template, k8s_name="", mounts=data.mounts),
        created_at=created_at,
        name=options.name,
        tags=dict(options.tags),
        retries=options.retries,
        retry_on=options.retry_on,
        max_concurrent=options.max_concurrent,
        fail_fast=options.fail_fast,
        cancel_running_on_fail=options.cancel_running_on_fail,
        input_mode=options.input_mode,
        array_job=prefix if array is not None else "",
        array_part_size=_part_size(array, len(items)),
        max_cost=options.max_cost or 0.0,
        signed_records=True,
    )
    seal = BatchSeal.of_backend(target.backend)
    records = BatchRecords(target.store, group_id, seal, array=manifest)
    env = captured_env(target)
    try:
        pickled.write(target, data, group_id, func_name, env_names=list(env))
        lease = None if array is not None else LeaseHolder.first(records)
        records.write_manifest(manifest, target.backend.signing_keys(create=True))
        if array is not None:
            array.submit_array(manifest, env=env)
    except BaseException:
        # No manifest (or no array object), no batch: leave nothing of it behind.
        with contextlib.suppress(KineticError):
            target.store.delete_prefix(layout.group_prefix(group_id))
            target.store.delete(layout.manifest_key(group_id))
        raise
    if lease is None:  # an array batch: every child exists now
        return _array_handle(manifest, target.backend, records)
    jobs = ChildJobs(len(items), manifest)
    state = BatchState(total=len(items), rule=manifest.retry_rule, jobs=jobs)
    policy = FailurePolicy(
        state, fail_fast=options.fail_fast, cancel_running=options.cancel_running_on_fail
    )
    handle = BatchHandle(
        manifest=manifest, state=state, backend=target.backend, records=records, policy=policy
    )
    submitter = Submitter(
        state=state,
        backend=target.backend,
        manifest=manifest,
        records=records,
        policy=policy,
        lease=lease,
        unsubmittable=pickled.errors,
        env=env,
        meter=SpendingMeter(manifest, options.max_cost)
        if options.max_cost is not None and billed(template)
        else None,
    )
    if options.max_concurrent is None and options.retries == 0:
        submitter.run(watch=False)  # synchronous: everything is submitted when this returns
    else:
        submitter.start_background()
    return handle


def _array_handle(manifest: BatchManifest, backend: Backend, records: BatchRecords) -> BatchHandle:
    """The handle of a batch its backend holds as one array object: every child exists.

    The completion record says so to every reader (no lease, nothing to resume); a store that
    refuses it leaves the batch running, and ``resume`` writes it later.
    """
    total = manifest.total_expected
    try:
        records.mark_complete(total, cancelled=False)
    except KineticError as exc:
        _log.say(
            f"Batch {manifest.group_id} runs, but its completion record could not be written "
            f"({exc}); `batch.resume()` writes it."
        )
    state = BatchState(
        total=total,
        rule=client_rule(manifest),  # the backend retries: a failed child is final here
        jobs=ChildJobs.first_attempts(manifest),
    )
    state.submission_done.set()
    policy = FailurePolicy(state, fail_fast=False, cancel_running=False)  # the backend's too
    return BatchHandle(
        manifest=manifest, state=state, backend=backend, records=records, policy=policy
    )


def _part_size(array: ArrayBackend | None, inputs: int) -> int:
    """Inputs per array object when the batch needs more than one; 0 when one holds all."""
    if array is None or inputs <= array.capabilities.array_batches:
        return 0
    return array.capabilities.array_batches
