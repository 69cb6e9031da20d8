"""The client's settings, declared once, and the registry of every setting Kinetic reads.

``registry()`` gathers the client's declarations, the runtime's, and those of each installed
backend (its factory's ``declared_settings``), so ``kinetic config show`` explains every
``KINETIC_*`` variable, including a third-party backend's.
"""

from __future__ import annotations

import contextlib

from kinetic_protocol import ConfigError
from kinetic_protocol.settings import SettingSpec, SettingsRegistry

__all__ = [
    "BACKEND",
    "BATCH_HEARTBEAT",
    "BATCH_LEASE",
    "BUILD_SERVICE_ACCOUNT",
    "BUNDLE_GITIGNORE",
    "BUNDLE_WARN_MB",
    "CLUSTER",
    "DEBUG_PORT",
    "DEBUG_WAIT",
    "NAMESPACE",
    "PROFILE",
    "PROFILES_FILE",
    "PRICES",
    "PRIORITY",
    "PROJECT",
    "QUEUE",
    "SETTINGS",
    "ZONE",
    "registry",
]

_OWNER = "kinetic"

BACKEND = SettingSpec(
    "backend",
    "KINETIC_BACKEND",
    "Where jobs run: local, gke, pathways (default: gke with a project, else local).",
    _OWNER,
    profile_key="backend",
)
PROJECT = SettingSpec(
    "project",
    "KINETIC_PROJECT",
    "GCP project of the cluster, bucket and registry.",
    _OWNER,
    profile_key="project",
    fallback_env=("GOOGLE_CLOUD_PROJECT",),
)
ZONE = SettingSpec(
    "zone",
    "KINETIC_ZONE",
    "Zone (or region) of the GKE cluster.",
    _OWNER,
    default="us-central1-a",
    profile_key="zone",
)
CLUSTER = SettingSpec(
    "cluster",
    "KINETIC_CLUSTER",
    "Name of the GKE cluster.",
    _OWNER,
    default="kinetic-cluster",
    profile_key="cluster",
)
NAMESPACE = SettingSpec(
    "namespace",
    "KINETIC_NAMESPACE",
    "Kubernetes namespace jobs run in.",
    _OWNER,
    default="default",
    profile_key="namespace",
)
QUEUE = SettingSpec(
    "queue",
    "KINETIC_QUEUE",
    "Queue jobs are admitted through (on GKE with Kueue: a LocalQueue of the namespace). "
    "Unset: the backend's default queue, kinetic.",
    _OWNER,
    profile_key="queue",
)
PRIORITY = SettingSpec(
    "priority",
    "KINETIC_PRIORITY",
    "Priority class of jobs: low, normal or high, or a class the cluster declares. Unset: none "
    "(the value of normal).",
    _OWNER,
    profile_key="priority",
)
BATCH_HEARTBEAT = SettingSpec(
    "batch_heartbeat",
    "KINETIC_BATCH_HEARTBEAT",
    "Seconds between a batch submitter's heartbeats in the store.",
    _OWNER,
    default="5",
)
BATCH_LEASE = SettingSpec(
    "batch_lease",
    "KINETIC_BATCH_LEASE",
    "Seconds without a heartbeat after which a batch's submitter counts as gone (readers stop "
    "waiting for it; `kinetic batch resume` may take over). Machines' clocks must agree to "
    "well within this.",
    _OWNER,
    default="30",
)
PROFILE = SettingSpec(
    "profile", "KINETIC_PROFILE", "Profile to use instead of the file's active one.", _OWNER
)
PROFILES_FILE = SettingSpec(
    "profiles_file",
    "KINETIC_PROFILES_FILE",
    "Where profiles are kept.",
    _OWNER,
    default="~/.kinetic/profiles.json",
)

BUILD_SERVICE_ACCOUNT = SettingSpec(
    "build_service_account",
    "KINETIC_BUILD_SERVICE_ACCOUNT",
    "Service account (email) Cloud Build runs bundled image builds as, writing their logs to "
    "the jobs bucket; kinetic up makes one and records it in its profile. Unset: Cloud Build's "
    "default account.",
    _OWNER,
    profile_key="build_service_account",
)
BUNDLE_WARN_MB = SettingSpec(
    "bundle_warn_mb",
    "KINETIC_BUNDLE_WARN_MB",
    "Warn, naming the largest files, when a code bundle's files pass this many MiB (0: never).",
    _OWNER,
    default="50",
)
BUNDLE_GITIGNORE = SettingSpec(
    "bundle_gitignore",
    "KINETIC_BUNDLE_GITIGNORE",
    "Whether .gitignore files keep files out of code bundles too, as .kineticignore does.",
    _OWNER,
    default="true",
)
DEBUG_PORT = SettingSpec(
    "debug_port",
    "KINETIC_DEBUG_PORT",
    "Local port a blocking debug=True call makes the job's debug server reachable on (the "
    "port your launch.json names)",
    _OWNER,
    default="5678",
)
DEBUG_WAIT = SettingSpec(
    "debug_wait",
    "KINETIC_DEBUG_WAIT",
    "Seconds a debug job waits for a debugger before running without one",
    _OWNER,
    default="600",
)


PRICES = SettingSpec(
    "prices",
    "KINETIC_PRICES",
    "A JSON file of list prices (another region, newer prices) that replaces the built-in "
    "table `kinetic accelerators` shows; docs/guides/capacity.md gives its shape.",
    _OWNER,
)

SETTINGS = (
    BACKEND,
    PROJECT,
    ZONE,
    CLUSTER,
    NAMESPACE,
    QUEUE,
    PRIORITY,
    PROFILE,
    PROFILES_FILE,
    BUILD_SERVICE_ACCOUNT,
    BUNDLE_WARN_MB,
    BUNDLE_GITIGNORE,
    DEBUG_PORT,
    DEBUG_WAIT,
    BATCH_HEARTBEAT,
    BATCH_LEASE,
    PRICES,
)


def registry() -> SettingsRegistry:
    """Every declared setting: the client's, the runtime's and each installed backend's."""
    from kinetic.backends import available_backends, load_factory
    from kinetic_runtime.settings import SETTINGS as RUNTIME

    found = SettingsRegistry((*SETTINGS, *RUNTIME))
    for name in available_backends():
        with contextlib.suppress(ConfigError):  # a broken backend is reported where it is used
            found.declare(*getattr(load_factory(name), "declared_settings", ()))
    return found
