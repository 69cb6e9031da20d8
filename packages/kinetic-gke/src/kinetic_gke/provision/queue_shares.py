"""The queues ``kinetic up`` makes on a cluster with Kueue, as declared by ``KINETIC_QUEUES`` or
a profile's ``queues``: ``team-a=2,team-b=1`` splits the node pools' capacity two to one
between two queues; a name alone has share 1.

Every queue is a ClusterQueue in one cohort, so quota a queue leaves idle is lent to the others
and reclaimed when its own jobs come back. The default queue (where jobs that name none go) is
always made: with share 0 when it is not declared, so its jobs run only on quota the declared
queues leave idle. Nothing declared keeps the queues the cluster has (their shares are kept on
their ClusterQueues), or makes the default queue alone with all the capacity.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kinetic_gke.settings import QUEUES
from kinetic_protocol import ConfigError
from kinetic_protocol.queueing import DEFAULT_QUEUE, check_queue_name

__all__ = ["QueueShares"]


@dataclass(frozen=True)
class QueueShares:
    """Queue names and their whole-number shares, by name; the default queue always one."""

    shares: tuple[tuple[str, int], ...] = ((DEFAULT_QUEUE, 1),)

    def __post_init__(self) -> None:
        if sum(share for _name, share in self.shares) <= 0:
            raise ConfigError(
                f"{QUEUES.env}={self.text!r}: every share is 0, so no queue would have any "
                "quota. Give at least one queue a share above 0 (team-a=1)."
            )

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _share in self.shares)

    @property
    def text(self) -> str:
        """As it is declared: ``kinetic=0,team-a=2``."""
        return ",".join(f"{name}={share}" for name, share in self.shares)

    @classmethod
    def of(cls, pairs: Iterable[tuple[str, int]]) -> QueueShares:
        """From name and share pairs, sorted, with the default queue added at share 0."""
        found = dict(pairs)
        found.setdefault(DEFAULT_QUEUE, 0)
        return cls(tuple(sorted(found.items())))

    @classmethod
    def parse(cls, text: str) -> QueueShares:
        """``team-a=2,team-b`` as declared; a ConfigError naming what is wrong otherwise."""
        pairs: dict[str, int] = {}
        for item in text.split(","):
            entry = item.strip()
            if not entry:
                continue
            name, has_share, raw = (part.strip() for part in entry.partition("="))
            try:
                check_queue_name(name)
            except ConfigError as exc:
                raise ConfigError(f"{QUEUES.env}={text!r}: {exc}") from None
            if name in pairs:
                raise ConfigError(f"{QUEUES.env}={text!r} names queue {name!r} twice.")
            pairs[name] = _share(text, name, raw) if has_share else 1
        if not pairs:
            raise ConfigError(
                f"{QUEUES.env}={text!r} declares no queue: write NAME=SHARE,... (team-a=2,"
                "team-b=1), or unset it to keep the queues the cluster has."
            )
        return cls.of(pairs.items())


def _share(text: str, name: str, raw: str) -> int:
    if not raw.isdigit():
        raise ConfigError(
            f"{QUEUES.env}={text!r}: the share of queue {name!r} is {raw!r}, not a whole number "
            "0 or above (team-a=2 gets twice the quota of team-b=1)."
        )
    return int(raw)
