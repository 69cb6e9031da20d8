"""Where the kubelet role reads a pod's volume contents from: the API server's Secrets,
ConfigMaps, service-account tokens and the pod's own fields (for ``secret`` and ``projected``
volumes; :mod:`.volumes` lays them out)."""

from __future__ import annotations

from kubernetes.client.exceptions import ApiException

from .api import Kube, Obj
from .env import field_value
from .volumes import MountError

__all__ = ["ApiVolumeSources"]


class ApiVolumeSources:
    """Volume contents from the API server, read when a container starts."""

    def __init__(self, kube: Kube) -> None:
        self._kube = kube

    def projected(self, pod: Obj, volume: Obj) -> dict[str, str]:
        """A projected volume's files: a token for the pod's service account (bound to the
        pod, from the API server), ConfigMap keys and downward-API fields."""
        files: dict[str, str] = {}
        ns = pod["metadata"]["namespace"]
        for source in volume.get("sources") or []:
            if "serviceAccountToken" in source:
                token = source["serviceAccountToken"]
                account = pod["spec"].get("serviceAccountName") or "default"
                try:
                    files[token["path"]] = self._kube.service_account_token(
                        ns, account, pod, int(token.get("expirationSeconds") or 3607)
                    )
                except ApiException as exc:  # e.g. the namespace is being deleted
                    raise MountError(f"failed to fetch token: {exc.reason}") from exc
            for item in (source.get("configMap") or {}).get("items") or []:
                value = self._kube.config_map_value(ns, source["configMap"]["name"], item["key"])
                if value is None:
                    name = source["configMap"]["name"]
                    raise MountError(f'configmap "{name}" not found')
                files[item["path"]] = value
            for item in (source.get("downwardAPI") or {}).get("items") or []:
                files[item["path"]] = field_value(pod, item["fieldRef"]["fieldPath"])
        return files

    def secret_data(self, namespace: str, name: str) -> dict[str, str] | None:
        return self._kube.config_map_data(namespace, name, secret=True)
