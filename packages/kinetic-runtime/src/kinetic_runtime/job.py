"""One run of a job's function: the steps from fetching its call to the value it returned or
the failure it ended with, each wrapped so that a failure records its phase
(:class:`~kinetic_runtime.phases.PhaseError`). :mod:`kinetic_runtime.main` starts the run and
stores what it ends with.
"""

import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import cloudpickle

from kinetic_protocol import (
    CallDescriptor,
    DebugOptions,
    Failed,
    ObjectStore,
    ResultEnvelope,
    SerializationError,
    Succeeded,
    layout,
)
from kinetic_protocol.signing import Keyring
from kinetic_runtime import settings
from kinetic_runtime.bundle_trees import place_bundle
from kinetic_runtime.calls import (
    BatchInput,
    StoredCall,
    fetch_call,
    load_call,
    open_call,
    read_input,
    verify,
)
from kinetic_runtime.multihost import SliceHost, initialise_jax
from kinetic_runtime.phases import Phase, PhaseError
from kinetic_runtime.workspace import (
    apply_environment,
    install_requirements,
    missing_env,
)

__all__ = ["JobRun", "default_data_dir", "now", "say"]

_REPR_LIMIT = 500


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def say(message: str) -> None:
    print(f"[kinetic] {message}", file=sys.stderr, flush=True)


def _overlay_changes_nothing_else(call: CallDescriptor) -> bool:
    """Whether overlaying the job's code would leave all else it sees as it is. Not for a
    debug job: its files stay where a debugger on this machine opens them. Not for a user who
    is not root and whose job makes no user namespace anyway (volumes do): in one, the owner
    of any file not the user's shows as ``nobody`` and setuid programs (sudo) gain nothing, a
    change to what a job sees that faster starts do not warrant; its bundle is unpacked."""
    if call.debug is not None:
        return False
    return os.geteuid() == 0 or bool(call.volumes)


class JobRun:
    """The steps of one run, each wrapped so a failure records its phase."""

    def __init__(
        self,
        store: ObjectStore,
        job_id: str,
        workdir: Path,
        host: SliceHost | None = None,
        member: BatchInput | None = None,
        *,
        keyring: Keyring,
    ) -> None:
        self.keyring = keyring
        self.store = store
        self.job_id = job_id
        self.workdir = workdir
        self.host = host
        self.member = member
        self.started_at = now()

    def step(self, phase: Phase, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except PhaseError:
            raise  # a step within this one failed: its phase is the one to report
        except BaseException as exc:  # a user module's import may sys.exit() or be interrupted
            raise PhaseError(phase, exc) from exc

    def run(self) -> ResultEnvelope:
        where = StoredCall.of(self.job_id, self.member)
        stored = self.step(Phase.FETCH, fetch_call, self.store, where, self.job_id)
        call = self.step(Phase.VERIFY, open_call, self.keyring, where, stored)
        payload = self.step(Phase.FETCH, self.store.read, call.payload.key)
        self.step(Phase.VERIFY, verify, call.payload, payload, where.owner)
        arguments = None
        if self.member is not None:
            arguments = self.step(Phase.FETCH, read_input, self.store, call, self.member)
        if call.bundle is not None:
            ref = call.bundle

            def fetch_bundle() -> bytes:  # not at all when this machine has its tree
                bundle: bytes = self.step(Phase.FETCH, self.store.read, ref.key)
                self.step(Phase.VERIFY, verify, ref, bundle, where.owner)
                return bundle

            shared = _overlay_changes_nothing_else(call)
            self.step(
                Phase.UNPACK, place_bundle, fetch_bundle, ref.sha256, ref.size, self.workdir, shared
            )
        self.step(Phase.ENVIRONMENT, self.prepare, call)
        self.step(Phase.INSTALL, install_requirements, call.requirements, self.workdir)
        # A batch child stages only what its function and its own input refer to.
        needed = None if arguments is None else {*call.function_data, *arguments.data}
        paths = self.step(Phase.DATA, self.stage_data, call, needed)
        fn, args, kwargs = self.step(Phase.DESERIALIZE, load_call, payload, arguments, paths)
        joined = self.host is not None and self.step(
            Phase.DISTRIBUTED, initialise_jax, self.host, fn, self.store, self.job_id, self.say
        )
        if joined and self.host is not None:
            say(f"job {self.job_id}: jax.distributed initialised ({self.host.label})")
        stop = None if call.debug is None else self.serve_debugger(call.debug)
        say(f"job {self.job_id}: running {call.func_name}")
        value = self.call_user_function(fn, args, kwargs, stop)
        return Succeeded(
            job_id=self.job_id,
            value=self.step(Phase.SERIALIZE_RESULT, _dump_value, value, call.func_name),
            started_at=self.started_at,
            finished_at=now(),
        )

    def serve_debugger(self, options: DebugOptions) -> Callable[[], object] | None:
        """The debug server of a ``debug=True`` job; on a multi-host job only the leader's.

        One debugger per job: its ``debug.json`` and the backend's port forward name host 0.
        Another host that waited too would wait the whole ``KINETIC_DEBUG_WAIT`` for a client
        that never comes, so it runs at once (and meets the leader at its first collective)."""
        if self.host is not None and not self.host.is_leader:
            self.say(f"the debugger attaches to host 0; {self.host.label} runs without one")
            return None
        from kinetic_runtime import debugging

        debug = (options, self.store, self.job_id, self.workdir, say)
        stop: Callable[[], object] | None = self.step(Phase.DEBUG, debugging.serve, *debug)
        return stop

    def call_user_function(
        self,
        fn: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        stop: Callable[[], object] | None = None,
    ) -> Any:
        """Call the function; any ``BaseException`` it raises becomes a ``run`` failure, except
        a successful ``sys.exit`` (code ``None`` or ``0``), which returns ``None``.

        ``stop`` (a debug job with a debugger attached: ``debugpy.breakpoint``) is called in
        this frame, so the debugger stops on the next line: step into it to enter ``fn``."""
        try:
            if stop is not None:
                stop()
            return fn(*args, **kwargs)  # debug jobs stop here: step into the function
        except SystemExit as exc:
            if _exit_succeeded(exc):
                say(f"job {self.job_id}: the function called sys.exit({exc.code!r}): success")
                return None
            raise PhaseError(Phase.RUN, exc) from exc
        except BaseException as exc:
            raise PhaseError(Phase.RUN, exc) from exc

    def stage_data(self, call: CallDescriptor, needed: set[int] | None) -> list[str | None]:
        """The call's ``kinetic.Data`` staged (all, or the ``needed`` entries and every
        volume's); the path of each by index, None for one not staged."""
        if not call.data:
            return []  # most jobs: nothing to stage, so the data machinery is never loaded
        from kinetic_runtime.data.stage import stage_data

        data_dir = Path(settings.DATA_DIR.from_env() or default_data_dir(self.workdir))
        private = settings.VOLUME_MOUNTS.value() == "namespace"
        return stage_data(
            call, self.store, data_dir, private_mounts=private, say=self.say, only=needed
        )

    def say(self, message: str) -> None:
        say(f"job {self.job_id}: {message}")

    def prepare(self, call: CallDescriptor) -> None:
        default_output = self.store.url(layout.output_prefix(self.job_id).rstrip("/"))
        apply_environment(call, self.workdir, call.output_dir or default_output, self.job_id)
        missing = missing_env(call)
        if missing:
            self.say(
                f"captured variable(s) {', '.join(missing)} were not passed to this job (a "
                "batch resumed where they were not set?); it runs without them"
            )
        if self.host is not None:
            os.environ.update(self.host.environment())
            from kinetic_runtime.jax_cluster import register_when_imported

            register_when_imported(self.host)

    def failed(self, error: PhaseError) -> Failed:
        import traceback  # loaded for a failure only: a job's start pays for what it uses

        cause = error.cause
        frames = traceback.format_exception(cause)
        if error.phase is Phase.RUN:
            # Drop the runtime's own frames: the user wants their traceback.
            frames = [frames[0], *_user_frames(cause)]
        try:
            pickled: bytes | None = cloudpickle.dumps(cause)
        except Exception:
            pickled = None
        return Failed(
            job_id=self.job_id,
            phase=error.phase.value,
            exc_type=f"{type(cause).__module__}.{type(cause).__qualname__}",
            message=_message(cause),
            traceback="".join(frames),
            exception=pickled,
            started_at=self.started_at,
            finished_at=now(),
            host=self.host.index if self.host else 0,
            hosts=self.host.count if self.host else 1,
        )


def _exit_succeeded(exc: SystemExit) -> bool:
    """Whether ``sys.exit(code)`` means success, as it would for a Python process."""
    return exc.code is None or (isinstance(exc.code, int) and exc.code == 0)


def _message(exc: BaseException) -> str:
    """The envelope's message; a bare ``SystemExit`` or ``KeyboardInterrupt`` has an empty or
    numeric ``str``, so those say what happened."""
    if isinstance(exc, SystemExit):
        return f"the function called sys.exit({exc.code!r})"
    text = str(exc)
    if not isinstance(exc, Exception) and not text:
        return f"the function raised {type(exc).__name__}"
    return text


def _user_frames(exc: BaseException) -> list[str]:
    """The traceback after the runtime's own frames, without its "Traceback" header.

    With no frame left (a builtin such as ``int`` was the function), the formatted exception
    has no header to drop, only the exception line, which must be kept.
    """
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    import traceback

    lines = traceback.format_exception(type(exc), exc, tb)
    return lines[1:] if tb is not None else lines


def _dump_value(value: Any, func_name: str) -> bytes:
    try:
        data: bytes = cloudpickle.dumps(value)
    except Exception as exc:
        shown = repr(value)
        if len(shown) > _REPR_LIMIT:
            shown = shown[:_REPR_LIMIT] + "..."
        raise SerializationError(
            f"{func_name} returned a value that cannot be pickled ({type(value).__name__}: "
            f"{exc}). Value: {shown}. Return plain data, or write large or special objects "
            "to KINETIC_OUTPUT_DIR and return their paths."
        ) from exc
    return data


def default_data_dir(workdir: Path) -> Path:
    """Where a job's data is staged unless ``KINETIC_DATA_DIR`` says: beside its workdir."""
    return Path(f"{workdir}-data")
