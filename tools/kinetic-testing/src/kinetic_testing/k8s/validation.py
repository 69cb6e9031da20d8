"""Admission checks for every POSTed body: the published OpenAPI schema plus the API server's
own field rules that a schema cannot express (name formats, restart policies, unique names).

Schema checks come from `kubernetes-validate` for a chosen Kubernetes version; a failure is a
422 `Invalid` for the client *and* a `ValidationFailure` recorded on the simulator, so a test
can assert that the code under test never sent a body a real cluster would refuse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import kubernetes_validate

from .resources import JOBS, LWS, PODS, ResourceType
from .selectors import LabelSelector, SelectorError

__all__ = ["ValidationFailure", "Validator"]

Cause = tuple[str, str]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LWS_SPEC_KEYS = {
    "replicas",
    "leaderWorkerTemplate",
    "rolloutStrategy",
    "startupPolicy",
    "networkConfig",
}
_LWS_TEMPLATE_KEYS = {
    "leaderTemplate",
    "workerTemplate",
    "size",
    "restartPolicy",
    "subGroupPolicy",
    "resourcePolicy",
}


@dataclass(frozen=True)
class ValidationFailure:
    """One refused body: what it was, and every reason it was refused."""

    kind: str
    namespace: str
    name: str
    messages: tuple[str, ...]
    body: dict[str, Any] = field(repr=False, compare=False)


class Validator:
    """Checks bodies against one Kubernetes version's schemas (strict: unknown fields fail)."""

    def __init__(self, kubernetes_version: str, *, strict: bool = True) -> None:
        latest = kubernetes_validate.latest_version()
        wanted = tuple(int(p) for p in kubernetes_version.lstrip("v").split(".")[:2])
        if wanted > tuple(int(p) for p in latest.split(".")[:2]):
            raise ValueError(
                f"kubernetes_version {kubernetes_version!r} is newer than the newest schema "
                f"kubernetes-validate ships ({latest}); pick {latest} or older"
            )
        self.kubernetes_version = kubernetes_version
        self.strict = strict

    def check(self, res: ResourceType, body: dict[str, Any]) -> list[Cause]:
        """Every problem with `body` as `(field path, message)`; empty when it is admissible."""
        causes: list[Cause] = []
        if res is LWS:
            causes += self._check_lws(body)
        else:
            causes += self._schema(body, prefix="")
        if causes:
            return causes  # like the API server: a body that does not decode is not validated
        causes += _check_metadata(body.get("metadata") or {}, res)
        spec = body.get("spec") or {}
        if res is PODS:
            causes += _check_pod_spec(
                spec, "spec", allowed_restart={"Always", "OnFailure", "Never"}
            )
        elif res is JOBS:
            causes += _check_job_spec(spec)
        return causes

    def _schema(self, body: dict[str, Any], prefix: str) -> list[Cause]:
        try:
            kubernetes_validate.validate(body, self.kubernetes_version, strict=self.strict)
        except kubernetes_validate.ValidationError as exc:
            path = _format_path(list(exc.path))
            if prefix:
                path = prefix + path.removeprefix("template")
            return [(path, str(exc.message))]
        return []

    def _check_lws(self, body: dict[str, Any]) -> list[Cause]:
        # No published schema for the CRD, so check its shape by hand and validate the two pod
        # templates against the core PodTemplate schema.
        causes: list[Cause] = []
        unknown_top = set(body) - {"apiVersion", "kind", "metadata", "spec", "status"}
        causes += [(k, "unknown field") for k in sorted(unknown_top)]
        spec = body.get("spec")
        if not isinstance(spec, dict):
            return [*causes, ("spec", "Required value")]
        causes += [(f"spec.{k}", "unknown field") for k in sorted(set(spec) - _LWS_SPEC_KEYS)]
        replicas = spec.get("replicas", 1)
        if not isinstance(replicas, int) or replicas < 0:
            causes.append(("spec.replicas", f"Invalid value: {replicas!r}: must be an int >= 0"))
        tmpl = spec.get("leaderWorkerTemplate")
        if not isinstance(tmpl, dict):
            return [*causes, ("spec.leaderWorkerTemplate", "Required value")]
        base = "spec.leaderWorkerTemplate"
        causes += [(f"{base}.{k}", "unknown field") for k in sorted(set(tmpl) - _LWS_TEMPLATE_KEYS)]
        size = tmpl.get("size", 1)
        if not isinstance(size, int) or size < 1:
            causes.append((f"{base}.size", f"Invalid value: {size!r}: must be an int >= 1"))
        if "workerTemplate" not in tmpl:
            causes.append((f"{base}.workerTemplate", "Required value"))
        for key in ("leaderTemplate", "workerTemplate"):
            if key not in tmpl:
                continue
            wrapped = {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": "template"},
                "template": tmpl[key],
            }
            causes += self._schema(wrapped, prefix=f"{base}.{key}")
            # The pods belong to StatefulSets, which only accept restartPolicy Always.
            causes += _check_pod_spec(
                (tmpl[key] or {}).get("spec") or {},
                f"{base}.{key}.spec",
                allowed_restart={"Always"},
            )
        return causes


def _format_path(parts: list[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _check_metadata(meta: dict[str, Any], res: ResourceType) -> list[Cause]:
    causes: list[Cause] = []
    name = meta.get("name")
    if not name and not meta.get("generateName"):
        causes.append(("metadata.name", "Required value: name or generateName is required"))
    elif name:
        # Job and LeaderWorkerSet names end up in label values and pod hostnames.
        short = res is not PODS
        limit = 63 if short else 253
        pattern = _DNS_LABEL if short else _DNS_SUBDOMAIN
        if len(name) > limit or not pattern.match(name):
            causes.append(
                (
                    "metadata.name",
                    f'Invalid value: "{name}": must be a lowercase RFC 1123 '
                    f"{'label' if short else 'subdomain'} of at most {limit} characters "
                    "(lowercase letters, digits, '-'; start and end alphanumeric)",
                )
            )
    for key, value in (meta.get("labels") or {}).items():
        try:
            LabelSelector.parse(f"{key}={value}")
        except SelectorError as exc:
            causes.append((f"metadata.labels[{key}]", f"Invalid value: {value!r}: {exc}"))
    return causes


def _check_pod_spec(spec: dict[str, Any], path: str, *, allowed_restart: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for group in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(group) or []):
            where = f"{path}.{group}[{i}]"
            cname = container.get("name")
            if not cname:
                causes.append((f"{where}.name", "Required value"))
            elif len(cname) > 63 or not _DNS_LABEL.match(cname):
                causes.append(
                    (f"{where}.name", f'Invalid value: "{cname}": must be an RFC 1123 label')
                )
            elif cname in seen:
                causes.append((f"{where}.name", f'Duplicate value: "{cname}"'))
            seen.add(str(cname))
            if not container.get("image"):
                causes.append((f"{where}.image", "Required value"))
            for j, env in enumerate(container.get("env") or []):
                if not env.get("name"):
                    causes.append((f"{where}.env[{j}].name", "Required value"))
    if not spec.get("containers"):
        causes.append((f"{path}.containers", "Required value"))
    restart = spec.get("restartPolicy")
    if restart is not None and restart not in allowed_restart:
        causes.append(
            (
                f"{path}.restartPolicy",
                f'Unsupported value: "{restart}": supported values: {sorted(allowed_restart)}',
            )
        )
    return causes


def _check_job_spec(spec: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    pod_spec = ((spec.get("template") or {}).get("spec")) or {}
    restart = pod_spec.get("restartPolicy")
    if restart not in ("OnFailure", "Never"):
        causes.append(
            (
                "spec.template.spec.restartPolicy",
                f'Required value: valid values: "OnFailure", "Never" (got {restart!r})',
            )
        )
    # The restart policy was checked above; the shared check covers the containers.
    causes += _check_pod_spec(
        pod_spec, "spec.template.spec", allowed_restart={"Always", "OnFailure", "Never"}
    )
    for key, minimum in (
        ("backoffLimit", 0),
        ("completions", 0),
        ("parallelism", 0),
        ("ttlSecondsAfterFinished", 0),
        ("activeDeadlineSeconds", 1),
    ):
        value = spec.get(key)
        if value is not None and (not isinstance(value, int) or value < minimum):
            causes.append((f"spec.{key}", f"Invalid value: {value!r}: must be >= {minimum}"))
    if spec.get("selector") and not spec.get("manualSelector"):
        causes.append(
            ("spec.selector", "Invalid value: `selector` will be auto-generated; leave it unset")
        )
    if spec.get("podFailurePolicy") and restart != "Never":
        causes.append(
            (
                "spec.template.spec.restartPolicy",
                'Invalid value: only "Never" is supported when podFailurePolicy is specified',
            )
        )
    return causes
