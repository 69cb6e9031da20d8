"""One host's log file of a local job, read whole or followed as it grows."""

from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

__all__ = ["HostLog"]


class HostLog:
    """One host's log file, read whole or followed as it grows.

    With a prefix (several hosts shown together) only whole lines are returned, so one host's
    line is never split by another's.
    """

    def __init__(self, path: Path, prefix: str) -> None:
        self.path = path
        self.prefix = prefix
        self._handle: TextIO | None = None
        self._partial = ""

    def read(self, tail: int | None) -> str:
        try:
            lines = self.path.read_text(errors="replace").splitlines(keepends=True)
        except FileNotFoundError:
            return ""
        if tail is not None:
            lines = lines[-tail:] if tail > 0 else []
        if self.prefix:
            lines = [self.prefix + (line if line.endswith("\n") else line + "\n") for line in lines]
        return "".join(lines)

    def next_line(self) -> str:
        """The next line written, or "" when there is none yet."""
        if self._handle is None:
            if not self.path.exists():
                return ""
            self._handle = open(self.path, errors="replace")  # noqa: SIM115
        text = self._handle.readline()
        if not self.prefix:
            return text
        self._partial += text
        if not self._partial.endswith("\n"):
            return ""
        line, self._partial = self._partial, ""
        return self.prefix + line

    def rest(self) -> Iterator[str]:
        """Every line left, once the job has ended."""
        while line := self.next_line():
            yield line
        if self._partial:
            yield f"{self.prefix}{self._partial}\n"
            self._partial = ""

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
