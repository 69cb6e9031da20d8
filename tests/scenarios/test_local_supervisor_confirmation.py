"""A local job runs under the supervisor its submitter confirmed, whichever supervisor starts
first (local backend, real processes).

Under heavy load a supervisor can be slow to start. Two ways that once lost a job, the
supervisor the submitter recorded in ``supervisor.pid`` exiting without running it ("the local
supervisor process exited unexpectedly"):

- a submitter ``kill -9``-ed after starting a supervisor, before confirming it; the job is
  submitted again (a batch's ``resume``) while that first supervisor has still not started;
- the launcher answering too late, so the submitter started a second supervisor itself.

Slowness is made certain, not waited for: a supervisor is started through a wrapper that stops
itself (SIGSTOP) before it runs the supervisor, and is let go (SIGCONT) at the chosen moment.
"""

import os
import signal
import stat
import sys
from pathlib import Path

import pytest
import scenario_funcs as uf
from batch_support import SCENARIOS_DIR, start_script
from scenario_support import ScenarioBackend, pid_gone, wait_until

import kinetic
from kinetic import JobStatus
from kinetic.config import resolve_settings
from kinetic.local import backend as local
from kinetic.local.backend import LocalBackend

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads process states from /proc"
)

_WRAPPER = """#!/bin/sh
# A supervisor stops here until it is let go; anything else runs at once.
if [ "$2" = kinetic_runtime.local.supervisor ]; then kill -STOP $$; fi
exec {python} "$@"
"""


@pytest.fixture
def slow_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An interpreter whose supervisors wait to be let go (fresh starts: no launcher)."""
    monkeypatch.setenv("KINETIC_LOCAL_LAUNCHER", "0")
    wrapper = tmp_path / "slow-python"
    wrapper.write_text(_WRAPPER.format(python=sys.executable))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def _backend(python: str) -> LocalBackend:
    return LocalBackend(resolve_settings(backend="local").backend_settings(), python=python)


def _held(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def _let_go(pid: int) -> None:
    """Let a held supervisor run, once it is certainly held (its SIGSTOP came first)."""
    wait_until(lambda: _held(pid), f"supervisor {pid} to be held")
    os.kill(pid, signal.SIGCONT)


_KILLED_BEFORE_CONFIRMING = f"""
    import sys
    import threading
    sys.path.insert(0, {SCENARIOS_DIR!r})
    import kinetic
    import scenario_funcs as uf
    from kinetic.local import backend as local

    slow_python = sys.argv[1]
    real_init = local.LocalBackend.__init__

    def with_slow_python(self, settings, python=None):
        real_init(self, settings, python=slow_python)

    def confirm_never(path, data):
        # The supervisor was started; say which, then wait here to be killed by pid.
        print(path.parent.name, data.decode(), flush=True)
        threading.Event().wait()

    local.LocalBackend.__init__ = with_slow_python
    local.write_private_atomically = confirm_never
    kinetic.run(accelerator="cpu", backend="local")(uf.add).run_async(2, 3)
"""


def test_a_job_submitted_again_runs_when_the_killed_submitters_supervisor_starts_late(
    local_backend: ScenarioBackend, tmp_path: Path, slow_python: str
) -> None:
    submitter = start_script(tmp_path, _KILLED_BEFORE_CONFIRMING, slow_python)
    assert submitter.stdout is not None
    job_id, first = submitter.stdout.readline().split()
    os.kill(submitter.pid, signal.SIGKILL)  # by pid only: its supervisor has its own session
    submitter.communicate(timeout=60)
    assert not pid_gone(int(first)), "the supervisor died with its submitter"
    job = kinetic.attach(job_id, backend="local")
    state = job.status_detail()
    assert state.status is JobStatus.NOT_FOUND and "never started" in state.detail

    # Submitted again (as a batch's resume does) while the first supervisor has not started.
    again = _backend(slow_python)
    again.submit(job.record)
    second = int((again.job_dir(job_id) / "supervisor.pid").read_text())
    _let_go(int(first))
    wait_until(lambda: pid_gone(int(first)), "the unconfirmed supervisor to give up")
    _let_go(second)

    assert job.result(timeout=60, cleanup=False) == 5
    assert job.status() is JobStatus.SUCCEEDED


def test_a_job_runs_under_the_confirmed_supervisor_when_the_launcher_answered_too_late(
    local_backend: ScenarioBackend, slow_python: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    late: list[int] = []
    starter = _backend(slow_python)

    def answered_too_late(job_dir: Path) -> None:
        """The launcher started a supervisor, but its answer timed out: the client then
        starts one itself."""
        late.append(starter._start_supervisor(job_dir, slow_python))

    real_init = LocalBackend.__init__

    def with_slow_python(self: LocalBackend, settings: object, python: str | None = None) -> None:
        real_init(self, settings, python=slow_python)  # type: ignore[arg-type]

    monkeypatch.setattr(LocalBackend, "__init__", with_slow_python)
    monkeypatch.setattr(local, "launcher_enabled", lambda python: True)
    monkeypatch.setattr(local, "request_start", answered_too_late)
    job = local_backend.decorate()(uf.add).run_async(2, 3)
    confirmed = int((starter.job_dir(job.job_id) / "supervisor.pid").read_text())
    [unconfirmed] = late
    assert confirmed != unconfirmed
    _let_go(unconfirmed)
    wait_until(lambda: pid_gone(unconfirmed), "the unconfirmed supervisor to give up")
    _let_go(confirmed)

    assert job.result(timeout=60, cleanup=False) == 5
    assert job.status() is JobStatus.SUCCEEDED
