"""Kinetic's Pathways backend: each multi-host TPU job is a LeaderWorkerSet on GKE."""

from kinetic_pathways.backend import PathwaysBackend
from kinetic_pathways.manifest import lws_manifest

__all__ = ["PathwaysBackend", "lws_manifest"]
