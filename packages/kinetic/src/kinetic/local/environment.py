"""What a local job's processes get of this machine's environment.

A local job sees what a pod would: its captured variables and the ones Kinetic sets, plus only
what a process needs to run on this machine (:data:`HOST_NAMES`, :data:`HOST_PREFIXES`).
Nothing else of the submitter's environment reaches it, so a job that works locally because
of a stray variable fails here first, not on the cluster.
"""

from collections.abc import Mapping

from kinetic_runtime.settings import HOME

__all__ = ["HOST_NAMES", "HOST_PREFIXES", "host_environment"]

HOST_NAMES = (
    # to run at all: where programs and the user's files are, who runs them
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ",
    # to find accelerators and native libraries installed on this machine
    "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES",
    # to reach a gs:// store as this machine does (a pod has its own identity instead)
    "GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "STORAGE_EMULATOR_HOST",
    # the network as this machine sees it
    "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
)  # fmt: skip
"""Variables a local job inherits from the submitter when set."""

HOST_PREFIXES = ("LANG", "LC_")
"""Prefixes of inherited variables: the locale (``LANG``, ``LANGUAGE``, ``LC_*``)."""


def host_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of ``environ`` a local job inherits, with ``KINETIC_HOME`` made absolute (the
    job runs in another directory) when it is set."""
    from kinetic.config import kinetic_home

    kept = {
        name: value
        for name, value in environ.items()
        if name in HOST_NAMES or name.startswith(HOST_PREFIXES)
    }
    if HOME.from_env(environ):
        kept[HOME.env] = str(kinetic_home())
    return kept
