"""The local backend's settings, declared once (see :mod:`kinetic_protocol.settings`)."""

from kinetic_protocol.settings import SettingSpec

__all__ = ["DISK_FULL_RETRIES", "LAUNCHER", "SETTINGS", "SLOTS"]

_OWNER = "kinetic (local backend)"

SLOTS = SettingSpec(
    "local_slots", "KINETIC_LOCAL_SLOTS",
    "How many local jobs run at once (default: the CPU count).", _OWNER,
)  # fmt: skip
LAUNCHER = SettingSpec(
    "local_launcher", "KINETIC_LOCAL_LAUNCHER",
    "0 starts each local job in a fresh interpreter instead of forking a warm launcher.",
    _OWNER, default="1",
)  # fmt: skip

DISK_FULL_RETRIES = SettingSpec(
    "local_disk_full_retries", "KINETIC_LOCAL_DISK_FULL_RETRIES",
    "How often a local job that a full disk stopped is run again (after 1, 2, 4, ... s) "
    "before it fails with cause infrastructure; a batch's retries are not spent meanwhile.",
    _OWNER, default="5",
)  # fmt: skip

SETTINGS = (SLOTS, LAUNCHER, DISK_FULL_RETRIES)
