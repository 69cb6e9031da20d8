"""Where everything lives in an object store: the one place that spells the keys.

::

    bundles/<sha256>.zip                      content-addressed code bundle, written if absent
    jobs/<job_id>/handle.json                 JobRecord (the durable handle), create-only
    jobs/<job_id>/call.json                   CallDescriptor
    jobs/<job_id>/payload.pkl                 cloudpickled (function, args, kwargs)
    jobs/<job_id>/result.msgpack              ResultEnvelope, written by the runtime
    jobs/<job_id>/debug.json                  DebugState of a debug job, replaced as it changes
    jobs/<job_id>/cancelled.json              JobCancelled, written by cancel() before it stops it
    jobs/<job_id>/hosts/<i>/started.json      HostStart of host i of a multi-host job, create-only
                                              (started-<run>.json in a later run of its group)
    jobs/<job_id>/hosts/<i>/result.msgpack    Failed envelope of worker host i (i > 0), if it failed
                                              (result-<run>.msgpack in a later run of its group)
    jobs/<job_id>/logs/<i>/<run>.json         KeptOutput: the tail of host i's output in one run,
                                              rewritten as it runs (cleaned up with the job)
    outputs/<job_id>/...                      KINETIC_OUTPUT_DIR default; never cleaned up
    data/<sha256>/files/...                   local Data uploaded for jobs that cannot see it,
                                              by its content hash (a file: files/<its name>)
    data/<sha256>/complete.json               DataManifest, written create-only after the files
    batches/<group_id>.json                   BatchManifest, written once (listable cheaply)
    groups/<group_id>/function.pkl            the batch's cloudpickled function, written once
    groups/<group_id>/inputs/<start>.msgpack  InputChunk: the pickled (args, kwargs) of inputs
    groups/<group_id>/call.json               CallDescriptor every child runs (written once)
    groups/<group_id>/children/<index>-<attempt>.json   BatchChild, before its backend resource
    groups/<group_id>/children/<index>-<attempt>.<tag>.json   the same, where the key above
                                              holds an object that does not verify
    groups/<group_id>/errors/<index>.json     BatchSubmissionError
    groups/<group_id>/lease/<epoch>.json      SubmitterLease of each submitter, heartbeats
    groups/<group_id>/complete.json           BatchCompletion
    groups/<group_id>/index/<part>.json       BatchIndexSegment: the latest attempt of each
                                              input, written after the completion (layout 2)
    groups/<group_id>/cancel                  present once any process cancelled the batch
    groups/<group_id>/collected/<id>.msgpack  CollectedOutcomes kept before a cleanup
    groups/<group_id>/failures/<id>.json      CollectedFailures: cause and last lines of each
                                              failed child, kept before a cleanup (signed)

A batch child has no ``jobs/<job_id>/handle.json``, ``call.json`` or ``payload.pkl`` of its
own: its record is the manifest's template plus its child record, and its call is the
batch's. Its ``jobs/<job_id>/`` holds only what the job writes (result, hosts, debug).
"""

__all__ = [
    "CHILDREN_DIR",
    "ascii_count",
    "host_file_run",
    "MANIFESTS_PREFIX",
    "bundle_key",
    "call_key",
    "cancel_key",
    "cancelled_job_key",
    "cancelled_child_key",
    "cancelled_children_prefix",
    "child_key",
    "child_rerecord_key",
    "collected_key",
    "collected_prefix",
    "collected_failures_key",
    "collected_failures_prefix",
    "debug_key",
    "children_prefix",
    "data_files_prefix",
    "data_marker_key",
    "data_prefix",
    "completion_key",
    "group_call_key",
    "group_function_key",
    "group_prefix",
    "index_key",
    "index_prefix",
    "host_result_key",
    "host_started_key",
    "hosts_prefix",
    "input_chunk_key",
    "lease_key",
    "leases_prefix",
    "parse_host_key",
    "parse_kept_output_key",
    "parse_lease_key",
    "job_prefix",
    "job_record_key",
    "kept_output_key",
    "kept_output_prefix",
    "manifest_key",
    "output_prefix",
    "parse_child_key",
    "parse_child_name",
    "payload_key",
    "result_key",
    "submission_error_key",
    "submission_errors_prefix",
]

CHILDREN_DIR = "children"


def ascii_count(text: str) -> int | None:
    """``text`` as a count if it is ASCII digits only (what Kinetic writes in a key), else
    None. ``str.isdigit`` also takes superscripts and other scripts' digits, which ``int``
    then refuses or reads as a different key's number."""
    if not text or not text.isascii() or not text.isdigit():
        return None
    return int(text)


def bundle_key(sha256: str) -> str:
    return f"bundles/{sha256}.zip"


def job_prefix(job_id: str) -> str:
    return f"jobs/{job_id}/"


def job_record_key(job_id: str) -> str:
    return f"jobs/{job_id}/handle.json"


def call_key(job_id: str) -> str:
    return f"jobs/{job_id}/call.json"


def payload_key(job_id: str) -> str:
    return f"jobs/{job_id}/payload.pkl"


def result_key(job_id: str) -> str:
    return f"jobs/{job_id}/result.msgpack"


def cancelled_job_key(job_id: str) -> str:
    return f"{job_prefix(job_id)}cancelled.json"


def debug_key(job_id: str) -> str:
    return f"jobs/{job_id}/debug.json"


def hosts_prefix(job_id: str) -> str:
    return f"jobs/{job_id}/hosts/"


def host_started_key(job_id: str, host: int, run: int = 0) -> str:
    """Where ``host`` claims its start; ``run``: which run of its group (a JobSet runs the
    whole group again after a preemption, and each run's hosts start anew)."""
    name = "started.json" if run == 0 else f"started-{run}.json"
    return f"{hosts_prefix(job_id)}{host}/{name}"


def host_result_key(job_id: str, host: int, run: int = 0) -> str:
    """A worker host's failure in ``run`` of its group (see :func:`host_started_key`); host 0
    (the leader) writes :func:`result_key` instead."""
    name = "result.msgpack" if run == 0 else f"result-{run}.msgpack"
    return f"{hosts_prefix(job_id)}{host}/{name}"


def host_file_run(name: str, kind: str) -> int | None:
    """The run of the group a host's file ``name`` (from :func:`parse_host_key`) is of, if it
    is a ``kind`` (``started.json``, ``result.msgpack``) file; else None. A job from before
    runs were counted wrote run 0's names only."""
    stem, dot, extension = kind.partition(".")
    if name == kind:
        return 0
    if not (dot and name.startswith(f"{stem}-") and name.endswith(f".{extension}")):
        return None
    return ascii_count(name[len(stem) + 1 : -len(extension) - 1])


def parse_host_key(key: str) -> tuple[int, str] | None:
    """``(host, file name)`` of a key under :func:`hosts_prefix`; None for any other key."""
    parts = key.rsplit("/", 2)[-2:]
    host = ascii_count(parts[0]) if len(parts) == 2 else None
    return None if host is None else (host, parts[1])


def kept_output_prefix(job_id: str) -> str:
    return f"jobs/{job_id}/logs/"


def kept_output_key(job_id: str, host: int, run: str) -> str:
    """One host's kept output of one run (``run``: its start time and pid, so keys sort by it)."""
    return f"{kept_output_prefix(job_id)}{host}/{run}.json"


def parse_kept_output_key(key: str) -> tuple[int, str] | None:
    """``(host, run)`` of a key made by :func:`kept_output_key`; None for any other key."""
    parts = key.rsplit("/", 2)[-2:]
    host = ascii_count(parts[0]) if len(parts) == 2 else None
    if host is None or not parts[1].endswith(".json"):
        return None
    return host, parts[1].removesuffix(".json")


def output_prefix(job_id: str) -> str:
    return f"outputs/{job_id}/"


def data_prefix(content_hash: str) -> str:
    return f"data/{content_hash}/"


def data_files_prefix(content_hash: str) -> str:
    return f"data/{content_hash}/files/"


def data_marker_key(content_hash: str) -> str:
    """Present only once every file of the upload is stored (see ``DataManifest``)."""
    return f"data/{content_hash}/complete.json"


def group_prefix(group_id: str) -> str:
    return f"groups/{group_id}/"


MANIFESTS_PREFIX = "batches/"


def manifest_key(group_id: str) -> str:
    return f"{MANIFESTS_PREFIX}{group_id}.json"


def children_prefix(group_id: str) -> str:
    return f"groups/{group_id}/{CHILDREN_DIR}/"


def child_key(group_id: str, index: int, attempt: int) -> str:
    return f"{children_prefix(group_id)}{index:06d}-{attempt:03d}.json"


def child_rerecord_key(group_id: str, index: int, attempt: int, tag: str) -> str:
    """Where an attempt is recorded when its :func:`child_key` holds an object that does not
    verify (planted by a store writer): ``tag`` is random (16 hex digits), so no key of this
    kind can be taken ahead of the submitter."""
    return f"{children_prefix(group_id)}{index:06d}-{attempt:03d}.{tag}.json"


_HEX_DIGITS = frozenset("0123456789abcdef")


def parse_child_name(name: str) -> tuple[int, int] | None:
    """``(index, attempt)`` of a name :func:`child_key` or :func:`child_rerecord_key` made
    (the part after :func:`children_prefix`); None for any other name."""
    if not name.endswith(".json") or "/" in name:
        return None
    index, _, rest = name.removesuffix(".json").partition("-")
    attempt, dot, tag = rest.partition(".")
    if dot and (len(tag) != 16 or not set(tag) <= _HEX_DIGITS):
        return None
    found = ascii_count(index), ascii_count(attempt)
    return None if found[0] is None or found[1] is None else (found[0], found[1])


def parse_child_key(key: str) -> tuple[int, int] | None:
    """``(index, attempt)`` of a key :func:`child_key` (or :func:`child_rerecord_key`) made;
    None for any other key."""
    return parse_child_name(key.rsplit("/", 1)[-1])


def submission_errors_prefix(group_id: str) -> str:
    return f"groups/{group_id}/errors/"


def submission_error_key(group_id: str, index: int) -> str:
    return f"{submission_errors_prefix(group_id)}{index:06d}.json"


def completion_key(group_id: str) -> str:
    return f"groups/{group_id}/complete.json"


def index_prefix(group_id: str) -> str:
    return f"groups/{group_id}/index/"


def index_key(group_id: str, part: int) -> str:
    return f"{index_prefix(group_id)}{part:06d}.json"


def cancel_key(group_id: str) -> str:
    return f"groups/{group_id}/cancel"


def cancelled_children_prefix(group_id: str) -> str:
    return f"groups/{group_id}/cancelled/"


def cancelled_child_key(group_id: str, index: int, attempt: int) -> str:
    return f"{cancelled_children_prefix(group_id)}{index:06d}-{attempt:03d}.json"


def group_call_key(group_id: str) -> str:
    return f"groups/{group_id}/call.json"


def group_function_key(group_id: str) -> str:
    return f"groups/{group_id}/function.pkl"


def input_chunk_key(group_id: str, start: int) -> str:
    return f"groups/{group_id}/inputs/{start:06d}.msgpack"


def leases_prefix(group_id: str) -> str:
    return f"groups/{group_id}/lease/"


def lease_key(group_id: str, epoch: int) -> str:
    return f"{leases_prefix(group_id)}{epoch:04d}.json"


def parse_lease_key(key: str) -> int | None:
    """The epoch of a key made by :func:`lease_key`, or None for any other object."""
    name = key.rsplit("/", 1)[-1]
    return ascii_count(name.removesuffix(".json")) if name.endswith(".json") else None


def collected_prefix(group_id: str) -> str:
    return f"groups/{group_id}/collected/"


def collected_key(group_id: str, name: str) -> str:
    return f"{collected_prefix(group_id)}{name}.msgpack"


def collected_failures_prefix(group_id: str) -> str:
    return f"groups/{group_id}/failures/"


def collected_failures_key(group_id: str, name: str) -> str:
    return f"{collected_failures_prefix(group_id)}{name}.json"
