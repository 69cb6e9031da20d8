"""The variables the runtime reads, declared once (see :mod:`kinetic_protocol.settings`)."""

from kinetic_protocol.settings import SettingSpec

__all__ = ["ENV", "HOME", "JOB_ID", "OUTPUT_DIR", "SETTINGS", "STORE", "WORKDIR"]

_OWNER = "kinetic-runtime"

HOME = SettingSpec(
    "home", "KINETIC_HOME", "Where Kinetic keeps local state and the local store.", _OWNER,
    default="~/.kinetic",
)  # fmt: skip
STORE = SettingSpec(
    "store", "KINETIC_STORE",
    "Store URI (file:// or gs://) for code, calls and results; overrides the backend's "
    "default. Inside a job: the store it runs from.",
    _OWNER,
)  # fmt: skip
JOB_ID = SettingSpec(
    "job_id", "KINETIC_JOB_ID", "Inside a job: its id.", _OWNER, kind="job"
)  # fmt: skip
OUTPUT_DIR = SettingSpec(
    "output_dir", "KINETIC_OUTPUT_DIR",
    "Inside a job: where to write files that outlive it (never cleaned up).", _OWNER, kind="job",
)  # fmt: skip
WORKDIR = SettingSpec(
    "workdir", "KINETIC_WORKDIR",
    "Inside a job: where the runtime unpacks the code bundle (default: a temporary directory).",
    _OWNER, kind="job",
)  # fmt: skip
ENV = SettingSpec(
    "env", "KINETIC_ENV", "Inside a job: the backend running it (local, gke, pathways).", _OWNER,
    kind="job",
)  # fmt: skip

SETTINGS = (HOME, STORE, JOB_ID, OUTPUT_DIR, WORKDIR, ENV)
