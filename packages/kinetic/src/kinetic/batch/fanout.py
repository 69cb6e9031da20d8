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
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from kinetic import _log
from kinetic.backends import array_backend
from kinetic.batch.handle import BatchHandle
from kinetic.batch.inputs import to_call_arguments
from kinetic.batch.lease import LeaseHolder
from kinetic.batch.records import BatchRecords
from kinetic.batch.sealed import BatchSeal
from kinetic.batch.state import BatchState
from kinetic.batch.stored_call import PickledBatch
from kinetic.batch.submitter import FailurePolicy, Submitter
from kinetic.handle import JobHandle
from kinetic.submission import (
    captured_env,
    child_id_prefix,
    func_name_of,
    job_record,
    resolve_target,
)
from kinetic_protocol import (
    Backend,
    BatchManifest,
    ConfigError,
    KineticError,
    layout,
)
from kinetic_protocol.causes import RETRYABLE, retry_causes

if TYPE_CHECKING:
    from kinetic.decorator import RemoteFunction

__all__ = ["new_group_id", "run_map"]

_UNBOUNDED_WARNING = 100


def new_group_id() -> str:
    return f"grp-{secrets.token_hex(4)}"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_arguments(
    max_concurrent: int | None, retries: int, tags: dict[str, str] | None, name: str | None
) -> dict[str, str]:
    """Refuse bad arguments before anything is resolved or stored; return the tags.

    The rule of ``docs/architecture.md`` ("Errors"): a wrong type is a TypeError, a wrong
    value of the right type a ConfigError (which is a ValueError, as the spec promises).
    """
    if max_concurrent is not None and not _is_int(max_concurrent):
        raise TypeError(
            "max_concurrent must be a positive int or None (no limit); got "
            f"{type(max_concurrent).__name__} {max_concurrent!r}."
        )
    if max_concurrent is not None and max_concurrent < 1:
        raise ConfigError(
            f"max_concurrent must be a positive int or None (no limit); got {max_concurrent!r}."
        )
    if not _is_int(retries):
        raise TypeError(
            f"retries must be a non-negative int; got {type(retries).__name__} {retries!r}."
        )
    if retries < 0:
        raise ConfigError(f"retries must be a non-negative int; got {retries!r}.")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str or None; got {type(name).__name__} {name!r}.")
    if tags is None:
        return {}
    if not isinstance(tags, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in tags.items()
    ):
        raise TypeError(f"tags must be a dict of str to str; got {tags!r}.")
    return dict(tags)


def _checked_retry_on(retry_on: object) -> list[str] | None:
    """``retry_on`` as the sorted cause values to store; refuses a name that is not a cause."""
    if retry_on is None:
        return None
    valid = ", ".join(sorted(cause.value for cause in RETRYABLE))
    if isinstance(retry_on, str) or not isinstance(retry_on, Iterable):
        raise TypeError(
            f"retry_on must be a list of failure causes (any of {valid}), got "
            f"{type(retry_on).__name__} {retry_on!r}."
        )
    names: set[str] = set()
    for item in retry_on:
        if not isinstance(item, str) or item not in {cause.value for cause in RETRYABLE}:
            raise ConfigError(
                f"retry_on names {item!r}, which is not a cause retries can apply to; valid "
                f"causes are {valid} (a cancelled attempt is never retried)."
            )
        names.add(str(item))  # a FailureCause is a str: store its plain value
    return sorted(names)


def run_map(
    remote: "RemoteFunction[..., Any]",
    inputs: Iterable[Any],
    *,
    input_mode: str = "auto",
    max_concurrent: int | None = 64,
    retries: int = 0,
    fail_fast: bool = False,
    cancel_running_on_fail: bool = False,
    name: str | None = None,
    tags: dict[str, str] | None = None,
    retry_on: Iterable[str] | None = None,
) -> BatchHandle:
    """Fan ``remote`` out over ``inputs``; see ``RemoteFunction.run_async_map``."""
    checked_tags = _check_arguments(max_concurrent, retries, tags, name)
    retry_names = _checked_retry_on(retry_on)
    items = list(inputs)
    calls = to_call_arguments(items, input_mode)
    if max_concurrent is None and len(items) > _UNBOUNDED_WARNING:
        _log.say(
            f"Submitting {len(items)} jobs with max_concurrent=None; set a limit "
            "(e.g. max_concurrent=64) to bound how many run at once."
        )
    fn = remote.__wrapped__
    pickled = PickledBatch(fn, calls)  # every input pickled before anything is resolved
    target = resolve_target(remote.options, fn, pickled.data)
    data = pickled.plan(target)  # local data uploaded, once, before the batch is written
    group_id = new_group_id()
    created_at = datetime.now(UTC).isoformat(timespec="seconds")
    func_name = func_name_of(fn)
    prefix = child_id_prefix(getattr(fn, "__name__", "job"), group_id)
    array = None
    if not pickled.errors and not (fail_fast and not cancel_running_on_fail):
        array = array_backend(target.backend, len(items))
    template = job_record(target, func_name, "", created_at=created_at)
    manifest = BatchManifest(
        group_id=group_id,
        func_name=func_name,
        total_expected=len(items),
        job_id_prefix=prefix,
        job_template=msgspec.structs.replace(template, k8s_name="", mounts=data.mounts),
        created_at=created_at,
        name=name,
        tags=checked_tags,
        retries=retries,
        retry_on=retry_names,
        max_concurrent=max_concurrent,
        fail_fast=fail_fast,
        cancel_running_on_fail=cancel_running_on_fail,
        input_mode=input_mode,
        array_job=prefix if array is not None else "",
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
    state = BatchState(
        total=len(items),
        retries=retries,
        jobs=[None] * len(items),
        retry_on=retry_causes(retry_names),
    )
    policy = FailurePolicy(state, fail_fast=fail_fast, cancel_running=cancel_running_on_fail)
    handle = BatchHandle(
        manifest=manifest, state=state, backend=target.backend, records=records, policy=policy
    )
    submitter = Submitter(
        state=state, backend=target.backend, manifest=manifest, records=records,
        policy=policy, lease=lease, unsubmittable=pickled.errors, env=env,
    )  # fmt: skip
    if max_concurrent is None and retries == 0:
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
        retries=0,  # the backend's own: a failed child is final
        jobs=[JobHandle.from_record(manifest.child_record(i, 0)) for i in range(total)],
        retry_on=retry_causes(manifest.retry_on),
    )
    state.submission_done.set()
    policy = FailurePolicy(state, fail_fast=False, cancel_running=False)  # the backend's too
    return BatchHandle(
        manifest=manifest, state=state, backend=backend, records=records, policy=policy
    )
