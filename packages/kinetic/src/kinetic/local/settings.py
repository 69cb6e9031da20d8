"""The local backend's settings, declared once (see :mod:`kinetic_protocol.settings`), and
read as the values they stand for."""

import os

from kinetic_protocol import ConfigError, layout
from kinetic_protocol.settings import SettingSpec

__all__ = ["DISK_FULL_RETRIES", "LAUNCHER", "SETTINGS", "SLOTS", "disk_full_retries", "local_slots"]

_OWNER = "kinetic (local backend)"

SLOTS = SettingSpec(
    "local_slots",
    "KINETIC_LOCAL_SLOTS",
    "How many local jobs run at once (default: the CPU count).",
    _OWNER,
)
LAUNCHER = SettingSpec(
    "local_launcher",
    "KINETIC_LOCAL_LAUNCHER",
    "0 starts each local job in a fresh interpreter instead of forking a warm launcher.",
    _OWNER,
    default="1",
)

DISK_FULL_RETRIES = SettingSpec(
    "local_disk_full_retries",
    "KINETIC_LOCAL_DISK_FULL_RETRIES",
    "How often a local job that a full disk stopped is run again (after 1, 2, 4, ... s) "
    "before it fails with cause infrastructure; a batch's retries are not spent meanwhile.",
    _OWNER,
    default="5",
)

SETTINGS = (SLOTS, LAUNCHER, DISK_FULL_RETRIES)


def disk_full_retries() -> int:
    """How often a job a full disk stopped is run again (``KINETIC_LOCAL_DISK_FULL_RETRIES``)."""
    raw = DISK_FULL_RETRIES.value() or "0"
    count = layout.ascii_count(raw)
    if count is None:
        raise ConfigError(f"{DISK_FULL_RETRIES.env} must be a count (0 or more), got {raw!r}.")
    return count


def local_slots() -> int:
    """How many local jobs run at once: ``KINETIC_LOCAL_SLOTS``, else the CPU count."""
    raw = SLOTS.from_env()
    if raw is None:
        return os.cpu_count() or 1
    try:
        slots = int(raw)
    except ValueError:
        slots = 0
    if slots < 1:
        raise ConfigError(f"KINETIC_LOCAL_SLOTS must be a positive integer, got {raw!r}.")
    return slots
