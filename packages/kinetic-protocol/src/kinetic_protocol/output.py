"""An attempt's output kept in the store, so it outlives the pod or directory that ran it.

The runtime writes one :class:`KeptOutput` per host and run (``layout.kept_output_key``): the
last :data:`KEEP_BYTES` bytes of what the job wrote to stdout and stderr, rewritten at most
every :data:`SYNC_SECONDS` while it runs, and once more, ``final``, when the run ends. It is
display text, not signed: nothing decides what to run or return from it (``docs/security.md``).
"""

import msgspec

from kinetic_protocol.records import SCHEMA_VERSION

__all__ = ["KEEP_BYTES", "SYNC_SECONDS", "KeptOutput"]

KEEP_BYTES = 1024 * 1024
"""How much of a run's output is kept (its tail): 1 MiB per host, unless
``KINETIC_KEEP_OUTPUT_BYTES`` says otherwise (0 keeps none)."""
SYNC_SECONDS = 5.0
"""The shortest time between two writes of one run's output while it runs (a store allows about
one write a second to one object), unless ``KINETIC_KEEP_OUTPUT_SECONDS`` says otherwise."""


class KeptOutput(msgspec.Struct, kw_only=True):
    """The tail of one host's output of one run of a job, as the runtime last wrote it."""

    job_id: str
    host: int
    run: str
    """This run's name: its start time (UTC) and process id, so runs sort by start."""
    text: str
    """The kept output: whole lines, the newest last (undecodable bytes replaced)."""
    dropped: int = 0
    """Bytes of earlier output left out to stay within the bound."""
    final: bool = False
    """The run has ended: nothing more will be written here."""
    ended: str = ""
    """How the run ended, in words (``exit 1``, ``killed by SIGKILL``), once ``final``."""
    updated_at: str = ""
    writes: int = 0
    """How many times this run's output has been written, this write included."""
    schema_version: int = SCHEMA_VERSION
