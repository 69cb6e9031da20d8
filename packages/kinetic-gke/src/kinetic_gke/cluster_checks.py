"""The gke backend's pre-flight checks of its cluster before anything is written: that some
node pool can run an accelerator, and that FUSE data has GKE's Cloud Storage FUSE driver.
:class:`~kinetic_gke.GKEBackend` has them from :class:`ClusterChecks`."""

from kinetic_gke import gcp
from kinetic_gke.capacity import CapacityCheck, ClusterRef
from kinetic_gke.k8s import ClusterConnection, Obj, csi_driver_installed
from kinetic_protocol import BackendSettings, ConfigError
from kinetic_protocol.data import GCSFUSE_DRIVER

__all__ = ["ClusterChecks"]


class ClusterChecks:
    """The checks; the backend supplies its settings, cluster connection and context."""

    _settings: BackendSettings
    _capacity: CapacityCheck | None = None
    _fuse_checked: set[str]
    """Connections (by context) whose cluster is known to have the GCS FUSE driver."""

    @property
    def connection(self) -> ClusterConnection:
        raise NotImplementedError

    def _context_name(self) -> str:
        raise NotImplementedError

    @property
    def capacity(self) -> CapacityCheck:
        """The pre-flight check that some node pool can run an accelerator (cached per
        accelerator for this backend's life, so once per process)."""
        if self._capacity is None:
            settings = self._settings
            self._capacity = CapacityCheck(
                ClusterRef(settings.project, settings.zone, settings.cluster),
                list_nodes=self._list_nodes,
                read_cluster=lambda: gcp.read_cluster(
                    settings.project, settings.zone, settings.cluster
                ),
            )
        return self._capacity

    def _list_nodes(self, selector: str) -> list[Obj]:
        return self.connection.list_nodes(selector)

    def check_fuse_driver(self) -> None:
        """Refuse FUSE data on a cluster without GKE's Cloud Storage FUSE CSI driver (once per
        cluster); credentials that may not look are given the benefit of the doubt."""
        context = self._context_name()
        if context in self._fuse_checked:
            return
        if csi_driver_installed(self.connection, GCSFUSE_DRIVER) is False:
            settings = self._settings
            raise ConfigError(
                f"Data(..., fuse=True) needs the Cloud Storage FUSE CSI driver "
                f"({GCSFUSE_DRIVER}), which cluster {settings.cluster or context!r} does not "
                "have. Enable it: gcloud container clusters update "
                f"{settings.cluster or 'CLUSTER'} --update-addons GcsFuseCsiDriver=ENABLED "
                f"--location {settings.zone or 'ZONE'} --project {settings.project or 'PROJECT'}"
                " (or use fuse=False to download the data instead)."
            )
        self._fuse_checked.add(context)
