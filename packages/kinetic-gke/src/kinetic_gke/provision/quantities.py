"""Kubernetes quantities added up and shown for people, as Kueue's quotas and usage are."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

__all__ = ["amount", "shown", "totals"]


def amount(quantity: object) -> Fraction:
    """A Kubernetes quantity (``500m``, ``96Gi``, ``8``) as a number; ValueError if it is not
    one."""
    from kubernetes.utils import parse_quantity

    return Fraction(parse_quantity(str(quantity)))  # type: ignore[no-untyped-call]


def shown(resource: str, total: Fraction) -> str:
    """``16``, ``2.5`` (CPUs), ``96Gi`` (memory)."""
    if resource == "memory":
        gib = total / 2**30
        return f"{gib.numerator}Gi" if gib.denominator == 1 else f"{float(gib):.1f}Gi"
    return str(total.numerator) if total.denominator == 1 else f"{float(total):g}"


def totals(flavors: list[dict[str, Any]], key: str) -> dict[str, Fraction]:
    """Per-flavor amounts (a resource group's ``flavors`` and their ``nominalQuota``, or a
    queue's ``flavorsUsage`` and their ``total``), summed by resource."""
    summed: dict[str, Fraction] = {}
    for flavor in flavors:
        for resource in flavor.get("resources") or []:
            name = resource["name"]
            summed[name] = summed.get(name, Fraction(0)) + amount(resource.get(key) or 0)
    return summed
