"""Plan, show, apply: the engine every provisioning command runs on.

A resource module reads the real state from the cloud (there is no local state file to lose)
and returns the steps that would bring it to what is wanted; what already matches becomes a
note. Applying runs the steps in order and reports each one. Every step is written to be safe
to repeat (an "already exists" answer is success, an operation still running is waited for),
so a run that failed half-way converges when run again, without duplicates. That also lets a
plan be made before what it reads can be read (an API still off, a cluster not yet made): it
is planned as missing, and the step that makes it accepts finding it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Action", "Plan", "Report", "Step", "apply"]

Action = Literal["create", "update", "delete", "install", "grant", "revoke", "enable"]
Report = Callable[[str], None]


@dataclass(frozen=True)
class Step:
    """One change: what it acts on, how, and the function that makes it."""

    action: Action
    target: str
    """What it acts on, for people: ``cluster kinetic-cluster (us-central1-a)``."""
    run: Callable[[Report], None]
    detail: str = ""

    def describe(self) -> str:
        symbol = {"delete": "-", "revoke": "-", "update": "~"}.get(self.action, "+")
        text = f"  {symbol} {self.action} {self.target}"
        return f"{text}: {self.detail}" if self.detail else text


@dataclass
class Plan:
    """The steps to apply, and what already matches or is kept (notes)."""

    steps: list[Step] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __add__(self, other: Plan) -> Plan:
        return Plan([*self.steps, *other.steps], [*self.notes, *other.notes])

    @property
    def empty(self) -> bool:
        return not self.steps

    def render(self) -> str:
        lines = [step.describe() for step in self.steps]
        lines += [f"  = {note}" for note in self.notes]
        return "\n".join(lines) if lines else "  (nothing)"


def apply(plan: Plan, report: Report) -> None:
    """Run every step in order, reporting each; the first failure stops the run (running the
    command again picks up where it stopped)."""
    total = len(plan.steps)
    for index, step in enumerate(plan.steps, start=1):
        report(f"[{index}/{total}] {step.action} {step.target}")
        step.run(report)
