"""``kinetic doctor``: why a job would not run, one check at a time, each with its fix."""

from __future__ import annotations

from kinetic_gke.doctor.checks import CHECKS
from kinetic_gke.doctor.model import Check, Context, Finding, Outcome

__all__ = ["CHECKS", "Check", "Context", "Finding", "Outcome", "diagnose"]


def diagnose(context: Context) -> list[Finding]:
    """Run every check; an error inside one is that check's FAIL, never the end of the run."""
    findings = []
    for check in CHECKS:
        try:
            outcome, message, fix = check.run(context)
        except Exception as exc:
            outcome, message, fix = "FAIL", f"{type(exc).__name__}: {exc}", ""
        findings.append(Finding(check.name, outcome, message, fix))
    return findings
