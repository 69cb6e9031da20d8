"""``run_async_map``: validate everything, write the manifest, then submit the children."""

import secrets
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from kinetic import _log
from kinetic.batch.handle import BatchHandle
from kinetic.batch.inputs import to_call_arguments
from kinetic.batch.records import BatchRecords
from kinetic.batch.state import BatchState
from kinetic.batch.submitter import FailurePolicy, Submitter
from kinetic.submit import child_id_prefix, func_name_of, job_record, resolve_target
from kinetic_protocol import BatchManifest

if TYPE_CHECKING:
    from kinetic.decorator import RemoteFunction

__all__ = ["new_group_id", "run_map"]

log = _log.get_logger(__name__)
_UNBOUNDED_WARNING = 100


def new_group_id() -> str:
    return f"grp-{secrets.token_hex(4)}"


def _check_limits(max_concurrent: int | None, retries: int) -> None:
    if max_concurrent is not None and (
        isinstance(max_concurrent, bool)
        or not isinstance(max_concurrent, int)
        or max_concurrent < 1
    ):
        raise ValueError(
            f"max_concurrent must be a positive integer or None (no limit); got {max_concurrent!r}."
        )
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries must be a non-negative integer; got {retries!r}.")


def _check_tags(tags: dict[str, str] | None) -> dict[str, str]:
    if tags is None:
        return {}
    if not isinstance(tags, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in tags.items()
    ):
        raise ValueError(f"tags must be a dict of str to str; got {tags!r}.")
    return dict(tags)


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
) -> BatchHandle:
    """Fan ``remote`` out over ``inputs``; see ``RemoteFunction.run_async_map``."""
    _check_limits(max_concurrent, retries)
    items = list(inputs)
    calls = to_call_arguments(items, input_mode)
    checked_tags = _check_tags(tags)
    if max_concurrent is None and len(items) > _UNBOUNDED_WARNING:
        log.warning(
            f"Submitting {len(items)} jobs with max_concurrent=None; set a limit "
            "(e.g. max_concurrent=64) to bound how many run at once."
        )
    fn = remote.__wrapped__
    target = resolve_target(remote.options, fn)
    group_id = new_group_id()
    created_at = datetime.now(UTC).isoformat(timespec="seconds")
    func_name = func_name_of(fn)
    template = job_record(target, func_name, "", created_at=created_at)
    manifest = BatchManifest(
        group_id=group_id,
        func_name=func_name,
        total_expected=len(items),
        job_id_prefix=child_id_prefix(getattr(fn, "__name__", "job"), group_id),
        job_template=msgspec.structs.replace(template, k8s_name=""),
        created_at=created_at,
        name=name,
        tags=checked_tags,
        retries=retries,
        max_concurrent=max_concurrent,
        fail_fast=fail_fast,
        input_mode=input_mode,
    )
    records = BatchRecords(target.store, group_id)
    records.write_manifest(manifest)
    state = BatchState(total=len(items), retries=retries, jobs=[None] * len(items))
    policy = FailurePolicy(state, fail_fast=fail_fast, cancel_running=cancel_running_on_fail)
    handle = BatchHandle(
        manifest=manifest, state=state, backend=target.backend, records=records, policy=policy
    )
    submitter = Submitter(
        state=state, target=target, fn=fn, calls=calls, manifest=manifest, records=records,
        max_concurrent=max_concurrent, policy=policy,
    )  # fmt: skip
    if max_concurrent is None and retries == 0:
        submitter.run(watch=False)  # synchronous: everything is submitted when this returns
    else:
        submitter.start_background()
    return handle
