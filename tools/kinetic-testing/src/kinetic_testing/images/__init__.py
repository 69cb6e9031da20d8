"""The image tier: Kinetic's generated images built with buildah from locally made bases."""

from .buildah import Buildah, ImageCommandError, ImageToolMissing, require_tools
from .standins import CACHE_ENV, StandIn, cache_root, ensure_standins, standins

__all__ = [
    "CACHE_ENV",
    "Buildah",
    "ImageCommandError",
    "ImageToolMissing",
    "StandIn",
    "cache_root",
    "ensure_standins",
    "require_tools",
    "standins",
]
