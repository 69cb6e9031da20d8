"""Kubernetes label selectors: the string form used in `?labelSelector=` and the structured form.

The node agent aims its faults with this matcher, which applies the set semantics a real API
server applies to ``?labelSelector=``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["LabelSelector", "Requirement", "SelectorError"]

Operator = Literal["=", "!=", "in", "notin", "exists", "!exists"]

_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_EQUALITY: tuple[tuple[str, Operator], ...] = (("!=", "!="), ("==", "="), ("=", "="))
_SET_REQ = re.compile(r"^(?P<key>\S+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")


class SelectorError(ValueError):
    """A selector string that does not parse; the message names the offending part."""


@dataclass(frozen=True)
class Requirement:
    """One clause of a selector: `key op values`."""

    key: str
    operator: Operator
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether `labels` satisfy this clause, with the API server's semantics."""
        present = self.key in labels
        value = labels.get(self.key)
        if self.operator == "exists":
            return present
        if self.operator == "!exists":
            return not present
        if self.operator == "=":
            return present and value in self.values
        if self.operator == "in":
            return present and value in self.values
        # "!=" and "notin" also match objects that lack the key entirely.
        return not present or value not in self.values


@dataclass(frozen=True)
class LabelSelector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        """Parse the string form (`a=b,c!=d,e,!f,g in (x,y),h notin (z)`)."""
        if text is None or not text.strip():
            return cls()
        return cls(tuple(_parse_clause(clause) for clause in _split_clauses(text)))

    @classmethod
    def from_structured(cls, selector: Mapping[str, Any] | None) -> LabelSelector:
        """Build from a `metav1.LabelSelector` dict (`matchLabels` / `matchExpressions`)."""
        if not selector:
            return cls()
        reqs = [
            Requirement(str(k), "=", frozenset({str(v)}))
            for k, v in (selector.get("matchLabels") or {}).items()
        ]
        ops: dict[str, Operator] = {
            "In": "in",
            "NotIn": "notin",
            "Exists": "exists",
            "DoesNotExist": "!exists",
        }
        for expr in selector.get("matchExpressions") or []:
            op = ops.get(str(expr.get("operator")))
            if op is None:
                raise SelectorError(
                    f"matchExpressions operator {expr.get('operator')!r} is not one of "
                    f"{sorted(ops)}"
                )
            reqs.append(Requirement(str(expr["key"]), op, frozenset(expr.get("values") or [])))
        return cls(tuple(reqs))

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether every requirement holds for `labels`."""
        labels = labels or {}
        return all(req.matches(labels) for req in self.requirements)


def _split_clauses(text: str) -> list[str]:
    """Split on commas that are not inside a parenthesised value set."""
    clauses: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"unbalanced ')' in label selector {text!r}")
        if char == "," and depth == 0:
            clauses.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise SelectorError(f"unbalanced '(' in label selector {text!r}")
    clauses.append("".join(current).strip())
    for clause in clauses:
        if not clause:
            raise SelectorError(f"empty requirement in label selector {text!r}")
    return clauses


def _parse_clause(clause: str) -> Requirement:
    set_match = _SET_REQ.match(clause)
    if set_match:
        key = _check_key(set_match["key"], clause)
        values = frozenset(
            _check_value(v.strip(), clause) for v in set_match["values"].split(",") if v.strip()
        )
        if not values:
            raise SelectorError(f"set requirement {clause!r} needs at least one value")
        op: Operator = "in" if set_match["op"] == "in" else "notin"
        return Requirement(key, op, values)
    for token, operator in _EQUALITY:
        if token in clause:
            key, _, value = clause.partition(token)
            return Requirement(
                _check_key(key.strip(), clause),
                operator,
                frozenset({_check_value(value.strip(), clause)}),
            )
    if clause.startswith("!"):
        return Requirement(_check_key(clause[1:].strip(), clause), "!exists")
    return Requirement(_check_key(clause, clause), "exists")


def _check_key(key: str, clause: str) -> str:
    if not _KEY.match(key) or len(key.rsplit("/", 1)[-1]) > 63:
        raise SelectorError(
            f"unable to parse requirement {clause!r}: invalid label key {key!r} "
            "(a qualified name: optional DNS prefix and '/', then at most 63 characters of "
            "alphanumerics, '-', '_', '.')"
        )
    return key


def _check_value(value: str, clause: str) -> str:
    if not _VALUE.match(value) or len(value) > 63:
        raise SelectorError(
            f"unable to parse requirement {clause!r}: invalid label value {value!r} "
            "(at most 63 alphanumerics, '-', '_', '.', starting and ending alphanumeric)"
        )
    return value
