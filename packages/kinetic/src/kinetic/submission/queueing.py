"""The queue and priority class a submission asks for, from wherever they were set."""

from collections.abc import Callable

from kinetic.config import ResolvedSettings, Setting
from kinetic_protocol import ConfigError
from kinetic_protocol.queueing import check_priority_name, check_queue_name

__all__ = ["queueing_names"]


def queueing_names(settings: ResolvedSettings) -> tuple[str | None, str | None]:
    """``(queue, priority)`` as resolved (None: set nowhere), each checked as a name.

    An argument was checked when it was given; a variable's or a profile's value is checked
    here, and the error says where it came from, since that is what must be fixed."""
    return (
        _checked(settings.queue, check_queue_name, "queue"),
        _checked(settings.priority, check_priority_name, "priority"),
    )


def _checked(setting: Setting, check: Callable[[object], str], key: str) -> str | None:
    if setting.value is None:
        return None
    try:
        return check(setting.value)
    except ConfigError as exc:
        if setting.source == "env":
            where = f"set by ${setting.origin}: fix or unset it"
        elif setting.source == "profile":
            where = f"set by the {key!r} key of profile {setting.origin!r}: fix or remove it"
        else:
            raise
        raise ConfigError(f"{exc} ({where})") from exc
