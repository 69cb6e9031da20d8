"""The gke backend's settings, declared once (see :mod:`kinetic_protocol.settings`): its jobs',
its images' and its provisioning's."""

from kinetic_protocol.settings import SettingSpec

__all__ = [
    "BASE_IMAGE_REPO",
    "CONTAINER_IMAGE",
    "GCP_API_ENDPOINT",
    "GPU_DRIVER_MANIFEST",
    "GPU_DRIVER_MANIFEST_SHA256",
    "HOST_GROUP_PORTS",
    "KUBE_CONTEXT",
    "KUEUE_MANIFEST",
    "KUEUE_MANIFEST_SHA256",
    "JOBSET_MANIFEST",
    "JOBSET_MANIFEST_SHA256",
    "LWS_MANIFEST",
    "LWS_MANIFEST_SHA256",
    "POD_CPU",
    "POD_MEMORY",
    "POLL",
    "QUEUES",
    "RUN_AS_ROOT",
    "SERVICE_ACCOUNT",
    "SETTINGS",
    "UNSCHEDULABLE_TIMEOUT",
]

_OWNER = "kinetic-gke"

KUBE_CONTEXT = SettingSpec(
    "kube_context",
    "KINETIC_KUBE_CONTEXT",
    "Kubeconfig context to use (default: gke_<project>_<zone>_<cluster>).",
    _OWNER,
)
SERVICE_ACCOUNT = SettingSpec(
    "service_account",
    "KINETIC_SERVICE_ACCOUNT",
    "Kubernetes service account pods run as (Workload Identity); default: the namespace's.",
    _OWNER,
)
UNSCHEDULABLE_TIMEOUT = SettingSpec(
    "unschedulable_timeout",
    "KINETIC_UNSCHEDULABLE_TIMEOUT",
    "Seconds a job may wait unschedulable, or for the cluster to create its pod, before it fails.",
    _OWNER,
    default="900",
)
POLL = SettingSpec(
    "gke_poll",
    "KINETIC_GKE_POLL",
    "Shortest and longest wait between status polls, seconds, as LOW,HIGH (set, it also bounds "
    "`kinetic up`'s waits on Google Cloud operations).",
    _OWNER,
    default="1,10",
)
RUN_AS_ROOT = SettingSpec(
    "run_as_root",
    "KINETIC_RUN_AS_ROOT",
    "1 runs pods as the image's user (root) instead of uid 1000; refused where the namespace "
    "enforces the restricted Pod Security Standard.",
    _OWNER,
    default="0",
)
POD_CPU = SettingSpec(
    "pod_cpu",
    "KINETIC_POD_CPU",
    "CPU request of each pod (default: 3/4 of the accelerator machine's vCPUs; 500m for cpu).",
    _OWNER,
)
POD_MEMORY = SettingSpec(
    "pod_memory",
    "KINETIC_POD_MEMORY",
    "Memory request of each pod (default: 3/4 of the accelerator machine's; 1Gi for cpu).",
    _OWNER,
)
HOST_GROUP_PORTS = SettingSpec(
    "host_group_ports",
    "KINETIC_HOST_GROUP_PORTS",
    "Ports host 0 of a job of several hosts serves JAX's coordinator, PyTorch's rendezvous "
    "and JAX multislice on, as COORDINATOR,TORCH,MEGASCALE (default 8476,29500,8080). Every "
    "pod has a network of its own on GKE: set it only where pods share one (a test cluster "
    "whose pods are one machine's processes) or a sidecar takes a default port.",
    _OWNER,
)

GCP_API_ENDPOINT = SettingSpec(
    "gcp_api_endpoint",
    "KINETIC_GCP_API_ENDPOINT",
    "Send Google Cloud API calls (GKE, Artifact Registry and its image tags, Cloud Build, IAM, "
    "Service Usage, Compute; not Cloud Storage) to this endpoint instead of Google's; an "
    "http:// one gets no credentials (emulators, tests).",
    _OWNER,
)

CONTAINER_IMAGE = SettingSpec(
    "container_image",
    "KINETIC_CONTAINER_IMAGE",
    "Default container_image= for Kubernetes backends: bundled, prebuilt, or an image URI.",
    _OWNER,
)
BASE_IMAGE_REPO = SettingSpec(
    "base_image_repo",
    "KINETIC_BASE_IMAGE_REPO",
    "Artifact Registry repository for images Kinetic builds.",
    _OWNER,
    default="kinetic",
)

QUEUES = SettingSpec(
    "queues",
    "KINETIC_QUEUES",
    "Queues kinetic up makes on a cluster with Kueue, each with its share of the node pools' "
    "capacity: NAME=SHARE,... (a name alone: share 1). The default queue, kinetic, is made "
    "with share 0 unless named. Unset: the queues the cluster has are kept.",
    _OWNER,
    profile_key="queues",
)
LWS_MANIFEST = SettingSpec(
    "lws_manifest",
    "KINETIC_LWS_MANIFEST",
    "A LeaderWorkerSet manifest (URL or file) for kinetic up to install instead of the release "
    "that ships with Kinetic; needs KINETIC_LWS_MANIFEST_SHA256.",
    _OWNER,
)
LWS_MANIFEST_SHA256 = SettingSpec(
    "lws_manifest_sha256",
    "KINETIC_LWS_MANIFEST_SHA256",
    "sha256 the KINETIC_LWS_MANIFEST manifest must have; kinetic up applies nothing else.",
    _OWNER,
)
KUEUE_MANIFEST = SettingSpec(
    "kueue_manifest",
    "KINETIC_KUEUE_MANIFEST",
    "A Kueue manifest (URL or file) for kinetic up to install instead of the release that ships "
    "with Kinetic; needs KINETIC_KUEUE_MANIFEST_SHA256.",
    _OWNER,
)
KUEUE_MANIFEST_SHA256 = SettingSpec(
    "kueue_manifest_sha256",
    "KINETIC_KUEUE_MANIFEST_SHA256",
    "sha256 the KINETIC_KUEUE_MANIFEST manifest must have; kinetic up applies nothing else.",
    _OWNER,
)
JOBSET_MANIFEST = SettingSpec(
    "jobset_manifest",
    "KINETIC_JOBSET_MANIFEST",
    "A JobSet manifest (URL or file) for kinetic up to install instead of the release that "
    "ships with Kinetic; needs KINETIC_JOBSET_MANIFEST_SHA256.",
    _OWNER,
)
JOBSET_MANIFEST_SHA256 = SettingSpec(
    "jobset_manifest_sha256",
    "KINETIC_JOBSET_MANIFEST_SHA256",
    "sha256 the KINETIC_JOBSET_MANIFEST manifest must have; kinetic up applies nothing else.",
    _OWNER,
)
GPU_DRIVER_MANIFEST = SettingSpec(
    "gpu_driver_manifest",
    "KINETIC_GPU_DRIVER_MANIFEST",
    "An NVIDIA driver installer manifest (URL or file) for kinetic up to install when GPU pools "
    "lack GKE-managed drivers (none ships with Kinetic); needs "
    "KINETIC_GPU_DRIVER_MANIFEST_SHA256.",
    _OWNER,
)
GPU_DRIVER_MANIFEST_SHA256 = SettingSpec(
    "gpu_driver_manifest_sha256",
    "KINETIC_GPU_DRIVER_MANIFEST_SHA256",
    "sha256 the KINETIC_GPU_DRIVER_MANIFEST manifest must have.",
    _OWNER,
)

SETTINGS = (
    KUBE_CONTEXT,
    SERVICE_ACCOUNT,
    UNSCHEDULABLE_TIMEOUT,
    POLL,
    RUN_AS_ROOT,
    POD_CPU,
    POD_MEMORY,
    HOST_GROUP_PORTS,
    GCP_API_ENDPOINT,
    CONTAINER_IMAGE,
    BASE_IMAGE_REPO,
    QUEUES,
    LWS_MANIFEST,
    LWS_MANIFEST_SHA256,
    KUEUE_MANIFEST,
    KUEUE_MANIFEST_SHA256,
    JOBSET_MANIFEST,
    JOBSET_MANIFEST_SHA256,
    GPU_DRIVER_MANIFEST,
    GPU_DRIVER_MANIFEST_SHA256,
)
