"""A job's output as the runtime kept it in the store, and the reads that fall back to it.

The backend's own log (the pod's, the local job's file) is read first: it is complete and
live. Once it is gone (the pod deleted, the local directory removed), or out of this reader's
reach (no cluster credentials), the copy the runtime kept in the store stands in for it: the
tail of each host's output, per run (see :mod:`kinetic_runtime.keeper`). A batch child that a
collection cleaned up shows the last lines its batch kept, if it failed, or says its logs are
gone with it.
"""

from collections.abc import Iterator

from kinetic import _log
from kinetic._context import backend_for, store_for
from kinetic.bookkeeping.kept import cleaned_up_error, collected_with_batch, kept_failure_summary
from kinetic_protocol import (
    Backend,
    ConfigError,
    CorruptRecordError,
    HostSelection,
    JobRecord,
    JobStatus,
    KeptOutput,
    KineticError,
    ObjectNotFoundError,
    ObjectStore,
    layout,
)
from kinetic_protocol.host_groups import record_hosts
from kinetic_protocol.records import decode_json

__all__ = [
    "follow_output",
    "job_output",
    "kept_text",
    "read_output",
    "runs_by_host",
    "stored_text",
]


def runs_by_host(store: ObjectStore, job_id: str) -> dict[int, list[KeptOutput]]:
    """Every kept run of the job, by host, oldest first (one LIST, one read per run)."""
    found: dict[int, list[KeptOutput]] = {}
    for key in store.list(layout.kept_output_prefix(job_id)):
        where = layout.parse_kept_output_key(key)
        if where is None:
            _log.say(f"Ignoring {store.uri}/{key}: not a kept output (logs/<host>/<run>.json).")
            continue
        try:
            kept = decode_json(store.read(key), KeptOutput, what=f"{store.uri}/{key}")
        except (ObjectNotFoundError, CorruptRecordError):
            continue  # deleted while listed, or not a kept output: nothing to show
        found.setdefault(where[0], []).append(kept)
    for runs in found.values():
        runs.sort(key=lambda kept: kept.run)
    return found


def _host_text(runs: list[KeptOutput]) -> str:
    """One host's kept output: each run after the first begins with a line naming it, and a
    run whose start was dropped to stay within the bound says so first."""
    parts = []
    for number, kept in enumerate(runs):
        if number:
            parts.append(f"[kinetic] --- run {number + 1} of this job ({kept.run}) ---\n")
        if kept.dropped:
            parts.append(
                f"[kinetic] ({kept.dropped} bytes of earlier output were not kept; the store "
                "keeps the tail of each run)\n"
            )
        parts.append(kept.text if kept.text.endswith("\n") or not kept.text else kept.text + "\n")
    return "".join(parts)


def _last(text: str, tail: int | None) -> str:
    if tail is None:
        return text
    return "".join(text.splitlines(keepends=True)[-tail:]) if tail > 0 else ""


def _first_failed_host(runs: dict[int, list[KeptOutput]]) -> int:
    """The host shown by default: the leader, unless another host's run failed first. That
    host's failure stopped the slice, and the leader, stopped with it, may have said nothing
    (or not yet started the function)."""
    failed = [
        (last.updated_at, host)
        for host, host_runs in runs.items()
        if (last := host_runs[-1]).final and last.ended not in ("", "exit 0")
    ]
    return min(failed)[1] if failed else 0


def kept_text(
    record: JobRecord, *, tail: int | None = None, host: HostSelection = None
) -> str | None:
    """The kept output of the selected host (by default the leader's, or that of the host
    whose failure ended the job; every host's, each line prefixed ``[host i]``, with
    ``"all"``), its last ``tail`` lines; None if none was kept."""
    return stored_text(store_for(record), record.job_id, tail=tail, host=host)


def stored_text(
    store: ObjectStore, job_id: str, *, tail: int | None = None, host: HostSelection = None
) -> str | None:
    """:func:`kept_text` by job id alone: it needs no job record, so no signing key (the kept
    output is display text, and not signed), and no cluster."""
    runs = runs_by_host(store, job_id)
    chosen = _first_failed_host(runs) if host is None else host
    hosts = sorted(runs) if chosen == "all" else [i for i in [chosen] if i in runs]
    if not hosts:
        return None
    if chosen != "all":
        return _last(_host_text(runs[hosts[0]]), tail)
    return "".join(
        f"[host {i}] {line}"
        for i in hosts
        for line in _last(_host_text(runs[i]), tail).splitlines(keepends=True)
    )


def read_output(
    backend: Backend, record: JobRecord, *, tail: int | None = None, host: HostSelection = None
) -> str:
    """The job's output: the backend's while it has any, else the kept copy.

    ``host`` is passed to the backend only when it is not None (as only backends with
    per-host logs take it). A backend that cannot be read (its resource out of reach) gives
    way to the kept copy; with none kept, its error stands. Every host's (``"all"``) is read
    host by host, so each one whose pod went with a failed group shows its kept copy.
    """
    hosts = record_hosts(record)
    if host == "all" and hosts > 1:
        return "".join(
            f"[host {index}] {line}"
            for index in range(hosts)
            for line in read_output(backend, record, tail=tail, host=index).splitlines(True)
        )
    options = {} if host is None else {"host": host}
    try:
        text = backend.logs(record, tail=tail, **options)
    except KineticError:
        kept = kept_text(record, tail=tail, host=host)
        if kept is None:
            raise
        return kept
    if text or (tail is not None and tail <= 0):
        return text
    return kept_text(record, tail=tail, host=host) or text


def job_output(record: JobRecord, *, tail: int | None = None, host: HostSelection = None) -> str:
    """The output of the job of ``record`` (``JobHandle.tail``/``logs``): the backend's, the
    kept copy, or what its batch kept of a child it collected."""
    backend = backend_for(record)
    selection = host if _per_host(backend, record, host) else None
    text = read_output(backend, record, tail=tail, host=selection)
    return _unless_collected(record, text, tail)


def follow_output(record: JobRecord, *, host: HostSelection = None) -> Iterator[str]:
    """The job's output lines as they are written, until it ends; a job whose backend log
    is gone yields the output kept in the store."""
    backend = backend_for(record)
    per_host = _per_host(backend, record, host)
    lines = backend.follow_logs(record, host=host) if per_host else backend.follow_logs(record)
    said = False
    for line in lines:
        said = True
        yield line
    if not said:
        kept = kept_text(record, host=host if per_host else None)
        yield from (kept or "").splitlines(keepends=True)


def _unless_collected(record: JobRecord, text: str, tail: int | None) -> str:
    """``text``, unless it is the empty output of a batch child that was collected and
    cleaned up: a failed one shows the last lines its batch kept (``tail`` of them), and any
    other has no logs any more, and says so (``JobNotFoundError``)."""
    if text or record.group_index is None:
        return text
    state = backend_for(record).statuses([record])[record.job_id]
    if state.status is not JobStatus.NOT_FOUND:
        return text
    summary = kept_failure_summary(record)
    if summary is not None:
        lines = summary.last_lines.splitlines(keepends=True)
        kept = lines if tail is None else (lines[-tail:] if tail > 0 else [])
        return "".join(kept)
    if not collected_with_batch(record):
        return text
    raise cleaned_up_error(record)


def _per_host(backend: Backend, record: JobRecord, host: HostSelection) -> bool:
    """Whether to pass ``host=`` on: only a backend with per-host logs takes it."""
    if backend.capabilities.per_host_logs:
        return True
    if host not in (None, 0, "all"):
        raise ConfigError(
            f"Job {record.job_id} runs on one host (backend {record.backend!r}); there is no "
            f"host {host!r}. Leave host= unset."
        )
    return False
