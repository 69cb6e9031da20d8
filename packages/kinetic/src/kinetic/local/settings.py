"""The local backend's settings, declared once (see :mod:`kinetic_protocol.settings`)."""

from kinetic_protocol.settings import SettingSpec

__all__ = ["LAUNCHER", "SETTINGS", "SLOTS"]

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

SETTINGS = (SLOTS, LAUNCHER)
