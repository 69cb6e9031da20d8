"""Job ids: DNS-1123 labels that name a job everywhere (store keys, Kubernetes objects)."""

import re
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

__all__ = ["child_id_prefix", "func_name_of", "new_job_id"]

_MAX_NAME = 63


def _slug(name: str, limit: int) -> str:
    """``name`` as the start of a DNS-1123 label: lowercase, dashes, beginning with a letter."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not slug[:1].isalpha():
        slug = f"job-{slug}" if slug else "job"
    return slug[:limit].rstrip("-")


def new_job_id(func_name: str) -> str:
    """A DNS-1123 label: ``<func>-<utc time>-<random>``."""
    suffix = f"-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(4)[:7]}"
    return _slug(func_name, _MAX_NAME - len(suffix)) + suffix


def child_id_prefix(func_name: str, group_id: str) -> str:
    """Children are ``<prefix>-<index>[-r<attempt>]``; room is left for both within 63."""
    suffix = f"-{group_id.removeprefix('grp-')}"
    return _slug(func_name, _MAX_NAME - len(suffix) - len("-999999-r99")) + suffix


def func_name_of(fn: Callable[..., Any]) -> str:
    return str(getattr(fn, "__qualname__", getattr(fn, "__name__", "function")))
