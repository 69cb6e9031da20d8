"""The variables the runtime reads, declared once (see :mod:`kinetic_protocol.settings`),
and the one place the Kinetic home is made from ``KINETIC_HOME``."""

from pathlib import Path

from kinetic_protocol.settings import SettingSpec

__all__ = [
    "ATTEMPT_TIMEOUT",
    "BUNDLE_CACHE",
    "CAPTURABLE",
    "COORDINATOR_ADDRESS",
    "DATA_DIR",
    "ENV",
    "HF_MIRROR",
    "HOME",
    "HOST_INDEX",
    "HOST_INSTANCE",
    "RESTART_ATTEMPT",
    "INDEX_FAILURES",
    "INDEX_PREEMPTIONS",
    "JAX_DISTRIBUTED",
    "JOB_ID",
    "KEEP_OUTPUT_BYTES",
    "KEEP_OUTPUT_SECONDS",
    "MEGASCALE_PORT",
    "NUM_HOSTS",
    "NUM_SLICES",
    "OUTPUT_DIR",
    "PREEMPTION_RETRIES",
    "SETTINGS",
    "SIGNING_KEYS",
    "SLICE",
    "SLICE_HOST_INDEX",
    "SLICE_INDEX",
    "SLICE_TIMEOUT",
    "STOP_GRACE",
    "STORE",
    "TERMINATION_LOG",
    "TORCH_PORT",
    "VOLUME_MOUNTS",
    "WORKDIR",
    "kinetic_home",
]

_OWNER = "kinetic-runtime"

HOME = SettingSpec(
    "home",
    "KINETIC_HOME",
    "Where Kinetic keeps local state and the local store.",
    _OWNER,
    default="~/.kinetic",
)
STORE = SettingSpec(
    "store",
    "KINETIC_STORE",
    "Store URI (file:// or gs://) for code, calls and results; overrides the backend's "
    "default. Inside a job: the store it runs from.",
    _OWNER,
)
JOB_ID = SettingSpec("job_id", "KINETIC_JOB_ID", "Inside a job: its id.", _OWNER, kind="job")
OUTPUT_DIR = SettingSpec(
    "output_dir",
    "KINETIC_OUTPUT_DIR",
    "Inside a job: where to write files that outlive it (never cleaned up).",
    _OWNER,
    kind="job",
)
TERMINATION_LOG = SettingSpec(
    "termination_log",
    "KINETIC_TERMINATION_LOG",
    "Inside a job: a file set aside by the backend where the runtime writes, in place, why it "
    "ended without running (a full disk), for the backend to report.",
    _OWNER,
    kind="job",
)
WORKDIR = SettingSpec(
    "workdir",
    "KINETIC_WORKDIR",
    "Inside a job: where the runtime unpacks the code bundle (default: a temporary directory).",
    _OWNER,
    kind="job",
)
BUNDLE_CACHE = SettingSpec(
    "bundle_cache",
    "KINETIC_BUNDLE_CACHE",
    "Inside a local job: this machine's unpacked code bundles, one tree per bundle, which a "
    "job sees at its working directory through an overlay mount instead of unpacking its "
    "bundle (set by the local backend: $KINETIC_HOME/local/bundles). Unset: unpacked.",
    _OWNER,
    kind="job",
)
ENV = SettingSpec(
    "env",
    "KINETIC_ENV",
    "Inside a job: the backend running it (local, gke, pathways).",
    _OWNER,
    kind="job",
)

NUM_HOSTS = SettingSpec(
    "num_hosts",
    "KINETIC_NUM_HOSTS",
    "Inside a job: how many hosts its slice spans (1 for a single-host job).",
    _OWNER,
    kind="job",
    default="1",
)
HOST_INDEX = SettingSpec(
    "host_index",
    "KINETIC_HOST_INDEX",
    "Inside a multi-host job: this host's index, 0 for the leader.",
    _OWNER,
    kind="job",
    fallback_env=("LWS_WORKER_INDEX", "TPU_WORKER_ID"),
)
COORDINATOR_ADDRESS = SettingSpec(
    "coordinator_address",
    "KINETIC_COORDINATOR_ADDRESS",
    "Inside a multi-host job: HOST:PORT of the leader's JAX coordinator (default: the "
    "LeaderWorkerSet leader's address, port 8476).",
    _OWNER,
    kind="job",
)
HOST_INSTANCE = SettingSpec(
    "host_instance",
    "KINETIC_HOST_INSTANCE",
    "Inside a multi-host job: what this host runs in (the pod's uid), so a restart is told "
    "apart from a replacement.",
    _OWNER,
    kind="job",
)
RESTART_ATTEMPT = SettingSpec(
    "restart_attempt",
    "KINETIC_RESTART_ATTEMPT",
    "Inside a multi-host job: which run of its group of hosts this is (0 first; a JobSet's "
    "restart-attempt, after the cluster took a host away): each run's hosts start anew.",
    _OWNER,
    kind="job",
    default="0",
)
NUM_SLICES = SettingSpec(
    "num_slices",
    "KINETIC_NUM_SLICES",
    "Inside a multi-host job: how many slices it runs on (slices=; each slice one Job of a "
    "JobSet: a TPU slice, or a GPU or CPU job's nodes); they divide KINETIC_NUM_HOSTS.",
    _OWNER,
    kind="job",
    default="1",
)
SLICE_INDEX = SettingSpec(
    "slice_index",
    "KINETIC_SLICE_INDEX",
    "Inside a multi-host job: this host's slice, 0 first; with KINETIC_SLICE_HOST_INDEX it "
    "gives the host index where KINETIC_HOST_INDEX is not set (a JobSet's job-global-index).",
    _OWNER,
    kind="job",
)
SLICE_HOST_INDEX = SettingSpec(
    "slice_host_index",
    "KINETIC_SLICE_HOST_INDEX",
    "Inside a multi-host job: this host's index within its slice (an Indexed Job's "
    "completion index).",
    _OWNER,
    kind="job",
    fallback_env=("JOB_COMPLETION_INDEX",),
)
TORCH_PORT = SettingSpec(
    "torch_port",
    "KINETIC_TORCH_PORT",
    "Inside a multi-host job: host 0's port for PyTorch's env:// rendezvous (MASTER_PORT; "
    "default 29500).",
    _OWNER,
    kind="job",
)
MEGASCALE_PORT = SettingSpec(
    "megascale_port",
    "KINETIC_MEGASCALE_PORT",
    "Inside a job of several TPU slices: the port of JAX multislice's coordinator on host 0 "
    "(MEGASCALE_PORT; default 8080).",
    _OWNER,
    kind="job",
)
SLICE = SettingSpec(
    "slice",
    "KINETIC_SLICE",
    "Inside a pathways job: the name of its LeaderWorkerSet, which the host that ends the job "
    "stops (scales to zero) through the Kubernetes API, recording the outcome on it.",
    _OWNER,
    kind="job",
)
JAX_DISTRIBUTED = SettingSpec(
    "jax_distributed",
    "KINETIC_JAX_DISTRIBUTED",
    "Multi-host jobs: 'auto' initialises jax.distributed before the function runs when the "
    "function uses JAX (imported by its modules or in its own code); 'off' leaves it to the "
    "function. Pass it to jobs with capture_env_vars.",
    _OWNER,
    default="auto",
    choices=("auto", "off"),
)
ATTEMPT_TIMEOUT = SettingSpec(
    "attempt_timeout",
    "KINETIC_ATTEMPT_TIMEOUT",
    "Inside a job whose backend cannot stop it at its timeout= itself (pathways): seconds after "
    "which the runtime ends the attempt (exit status 4, cause timeout).",
    _OWNER,
    kind="job",
)
INDEX_FAILURES = SettingSpec(
    "index_failures",
    "KINETIC_INDEX_FAILURES",
    "Inside one index of an array batch: how many earlier runs of the index failed and were run "
    "again (the Job's per-index failure count); the run's attempt number. Unset outside arrays.",
    _OWNER,
    kind="job",
)
INDEX_PREEMPTIONS = SettingSpec(
    "index_preemptions",
    "KINETIC_INDEX_PREEMPTIONS",
    "Inside one index of an array batch: how many earlier runs of the index the cluster took "
    "away (preempted, evicted) and the Job ran again without counting them as failures.",
    _OWNER,
    kind="job",
)
PREEMPTION_RETRIES = SettingSpec(
    "preemption_retries",
    "KINETIC_PREEMPTION_RETRIES",
    "Inside one index of an array batch: how many preempted runs it may have; a run started "
    "after more ends at once (exit status 86, cause preempted).",
    _OWNER,
    kind="job",
)
SLICE_TIMEOUT = SettingSpec(
    "slice_timeout",
    "KINETIC_SLICE_TIMEOUT",
    "Multi-host jobs: seconds a host waits for every host of its slice to start and join "
    "jax.distributed before the job fails saying which did not. Pass it to jobs with "
    "capture_env_vars.",
    _OWNER,
    default="300",
)

DATA_DIR = SettingSpec(
    "data_dir",
    "KINETIC_DATA_DIR",
    "Inside a job: where the runtime stages kinetic.Data passed as arguments (default: beside "
    "the working directory, '<workdir>-data').",
    _OWNER,
    kind="job",
)
VOLUME_MOUNTS = SettingSpec(
    "volume_mounts",
    "KINETIC_VOLUME_MOUNTS",
    "Inside a job: who makes volume paths. 'platform': the pod's own volumes are mounted there; "
    "'namespace': the runtime mounts them in a private mount namespace (local jobs).",
    _OWNER,
    kind="job",
    default="platform",
    choices=("platform", "namespace"),
)
HF_MIRROR = SettingSpec(
    "hf_mirror",
    "KINETIC_HF_MIRROR",
    "A directory of Hugging Face dataset repositories (<dir>/<owner>/<name>) that hf:// data "
    "loads from instead of the hub: for clusters without internet access, and for tests. "
    "Pass it to jobs with capture_env_vars.",
    _OWNER,
)
SIGNING_KEYS = SettingSpec(
    "signing_keys",
    "KINETIC_SIGNING_KEYS",
    "Inside a job: the directory of the keys that verify its call and sign its result (a "
    "mounted Secret in a pod; the Kinetic home's keys for a local job).",
    _OWNER,
    kind="job",
)
KEEP_OUTPUT_BYTES = SettingSpec(
    "keep_output_bytes",
    "KINETIC_KEEP_OUTPUT_BYTES",
    "Inside a job: how many bytes of each host's output (its tail) the runtime keeps in the "
    "store, where logs() reads it once the pod or local directory is gone; 0 keeps none. "
    "Pass it to jobs with capture_env_vars.",
    _OWNER,
    default="1048576",
)
KEEP_OUTPUT_SECONDS = SettingSpec(
    "keep_output_seconds",
    "KINETIC_KEEP_OUTPUT_SECONDS",
    "Inside a job: the shortest time, in seconds, between two writes of its kept output while "
    "it runs (it is written once more when the run ends). Pass it to jobs with "
    "capture_env_vars.",
    _OWNER,
    default="5",
)
STOP_GRACE = SettingSpec(
    "stop_grace",
    "KINETIC_STOP_GRACE",
    "Inside a pod: seconds a run may go on after its pod is told to stop (SIGTERM: past its "
    "deadline, deleted) before the runtime ends it itself, so it ends as stopped (exit 143) "
    "and never as killed (137, which reads as out of memory). Set by the backend a little "
    "under the pod's grace period.",
    _OWNER,
    kind="job",
)

SETTINGS = (
    HOME,
    STORE,
    JOB_ID,
    OUTPUT_DIR,
    WORKDIR,
    BUNDLE_CACHE,
    ENV,
    NUM_HOSTS,
    NUM_SLICES,
    HOST_INDEX,
    SLICE_INDEX,
    SLICE_HOST_INDEX,
    COORDINATOR_ADDRESS,
    TORCH_PORT,
    MEGASCALE_PORT,
    HOST_INSTANCE,
    RESTART_ATTEMPT,
    SLICE,
    JAX_DISTRIBUTED,
    SLICE_TIMEOUT,
    INDEX_FAILURES,
    INDEX_PREEMPTIONS,
    PREEMPTION_RETRIES,
    DATA_DIR,
    VOLUME_MOUNTS,
    HF_MIRROR,
    SIGNING_KEYS,
    ATTEMPT_TIMEOUT,
    KEEP_OUTPUT_BYTES,
    KEEP_OUTPUT_SECONDS,
    STOP_GRACE,
    TERMINATION_LOG,
)
CAPTURABLE = (HF_MIRROR, JAX_DISTRIBUTED, SLICE_TIMEOUT, KEEP_OUTPUT_BYTES, KEEP_OUTPUT_SECONDS)
"""Settings a user passes to jobs with ``capture_env_vars``: the only ``KINETIC_*`` variables
that may be captured (Kinetic sets the others in a job itself)."""


def kinetic_home() -> Path:
    """``$KINETIC_HOME``, else ``~/.kinetic``; where local state and the default store live.

    Absolute (a relative value is taken from the current directory), so the paths handed to
    job processes, which run elsewhere, name the same files.
    """
    return Path(HOME.value() or "~/.kinetic").expanduser().absolute()
