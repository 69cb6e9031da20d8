"""A container's environment and argv, resolved as the kubelet does.

Env = the agent's small host base + a per-pod TMPDIR/HOSTNAME + ``envFrom`` + ``env`` (later
entries win, ``$(VAR)`` references expand against earlier ones). ``python``/``python3`` as
argv[0] become the interpreter the pod's image stands for (this one unless the test named
another), since the image is never pulled.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "base_host_env",
    "container_argv",
    "container_env",
    "expand",
    "interpreter_env",
    "pod_hostname",
    "resolve_pod_names",
]

Obj = dict[str, Any]
_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_FIELD = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")
_PYTHONS = frozenset({"python", "python3", f"python3.{sys.version_info.minor}"})


class EnvError(Exception):
    """An env source that cannot be resolved: the kubelet's CreateContainerConfigError."""


def base_host_env(source: Mapping[str, str] | None = None) -> dict[str, str]:
    """The small host environment a pod process may see (never the whole ``os.environ``)."""
    source = os.environ if source is None else source
    bin_dir = os.path.dirname(sys.executable)
    path = source.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    env = {"PATH": f"{bin_dir}{os.pathsep}{path}", "LANG": source.get("LANG", "C.UTF-8")}
    for key in ("HOME", "STORAGE_EMULATOR_HOST", "SSL_CERT_FILE", "TZ"):
        if key in source:
            env[key] = source[key]
    return env


def interpreter_env(base: Mapping[str, str], python: str) -> dict[str, str]:
    """``base`` with ``python``'s directory first on ``PATH``, as an image puts its own
    interpreter there: what the job starts by name (``python -m pip``...) is that one too."""
    path = base.get("PATH")
    bin_dir = os.path.dirname(python)
    return {**base, "PATH": f"{bin_dir}{os.pathsep}{path}" if path else bin_dir}


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: unknown references stay, ``$$`` escapes."""

    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return _REF.sub(sub, text)


def _field(pod: Obj, path: str) -> str:
    meta = pod["metadata"]
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": pod["spec"].get("nodeName"),
        "spec.serviceAccountName": pod["spec"].get("serviceAccountName"),
        "status.podIP": (pod.get("status") or {}).get("podIP"),
        "status.hostIP": "127.0.0.1",
    }
    if path in simple:
        return str(simple[path] or "")
    match = _FIELD.match(path)
    if match:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    raise EnvError(f"unsupported fieldRef {path!r}")


def field_value(pod: Obj, path: str) -> str:
    """A downward-API field of ``pod`` (``metadata.namespace``...)."""
    return _field(pod, path)


Lookup = Callable[[str, str, str], str | None]
"""(namespace, object name, key) -> value, or None if missing."""
Bulk = Callable[[str, str, bool], dict[str, str] | None]
"""(namespace, object name, is_secret) -> all its keys, or None if missing."""


def _value_from(pod: Obj, source: Obj, secret: Lookup, config_map: Lookup) -> str | None:
    ns = pod["metadata"]["namespace"]
    if "fieldRef" in source:
        return _field(pod, source["fieldRef"]["fieldPath"])
    for key, lookup in (("secretKeyRef", secret), ("configMapKeyRef", config_map)):
        if key in source:
            ref = source[key]
            value = lookup(ns, ref["name"], ref["key"])
            if value is None and not ref.get("optional"):
                kind = "secret" if key == "secretKeyRef" else "configmap"
                raise EnvError(f"couldn't find key {ref['key']} in {kind} {ns}/{ref['name']}")
            return value
    raise EnvError(f"unsupported valueFrom {sorted(source)}")


def container_env(
    pod: Obj,
    container: Obj,
    base: Mapping[str, str],
    pod_env: Mapping[str, str],
    secret: Lookup,
    config_map: Lookup,
    bulk: Bulk,
) -> dict[str, str]:
    """The process environment for ``container`` of ``pod``."""
    env = {**base, "HOSTNAME": pod_hostname(pod), **pod_env}
    ns = pod["metadata"]["namespace"]
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        for key, is_secret in (("configMapRef", False), ("secretRef", True)):
            if key in source:
                data = bulk(ns, source[key]["name"], is_secret)
                if data is None:
                    if source[key].get("optional"):
                        continue
                    kind = "secret" if is_secret else "configmap"
                    raise EnvError(f'{kind} "{source[key]["name"]}" not found')
                env.update({prefix + k: v for k, v in data.items()})
    for entry in container.get("env") or []:
        if "valueFrom" in entry:
            value = _value_from(pod, entry["valueFrom"], secret, config_map)
            if value is not None:
                env[entry["name"]] = value
        else:
            env[entry["name"]] = expand(str(entry.get("value", "")), env)
    return resolve_pod_names(pod, env)


def pod_hostname(pod: Obj) -> str:
    """The host name a kubelet gives the pod: ``spec.hostname`` where its controller set one
    (a JobSet's ``<jobset>-<job>-<index>-<completion>``, a StatefulSet's pod name), else the
    pod's name."""
    return str(pod["spec"].get("hostname") or pod["metadata"]["name"])


def resolve_pod_names(pod: Obj, env: dict[str, str]) -> dict[str, str]:
    """Stand in for cluster DNS: pod processes share this machine's resolver, so names of pods
    in this pod's subdomain (``<pod>.<subdomain>[.<ns>[.svc[.cluster.local]]]``, what a
    LeaderWorkerSet hands its hosts) become ``127.0.0.1``, where every pod process listens."""
    subdomain = pod["spec"].get("subdomain")
    if not subdomain:
        return env
    ns = re.escape(pod["metadata"]["namespace"])
    name = re.compile(
        rf"\b[a-z0-9]([a-z0-9-]*[a-z0-9])?\.{re.escape(subdomain)}"
        rf"(\.{ns}(\.svc(\.cluster\.local)?)?)?(?![a-z0-9.-])"
    )
    return {key: name.sub("127.0.0.1", value) for key, value in env.items()}


def container_argv(
    container: Obj, env: Mapping[str, str], python: str = sys.executable
) -> list[str]:
    """``command + args`` with ``$(VAR)`` expanded and ``python`` mapped to ``python``."""
    argv = [expand(str(a), env) for a in (container.get("command") or [])]
    argv += [expand(str(a), env) for a in (container.get("args") or [])]
    if not argv:
        raise EnvError("container has no command: the node agent cannot run an image entrypoint")
    if os.path.basename(argv[0]) in _PYTHONS:
        argv[0] = python
    return argv
