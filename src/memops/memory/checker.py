"""Symbolic checks over agent findings: dependency cycles and resource collisions.

Agents emit findings of four kinds. Two of them carry structure that rules can verify:
``DEPENDENCY`` findings (``a -> b``: a needs b) must not form a cycle, and any finding
that books a resource (``resource:<name> time:<start>-<end>``) must not overlap another
booking of the same resource. Intervals are half-open, so back-to-back bookings are fine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field

FindingKind = Literal["FACT", "CONSTRAINT", "SUB_PLAN", "DEPENDENCY"]

_EDGE = re.compile(r"^\s*(?P<a>\S+)\s*->\s*(?P<b>\S+)\s*$")
_BOOKING = re.compile(r"resource:(?P<name>[\w.:/-]+)\s+time:(?P<start>[\d:.]+)-(?P<end>[\d:.]+)")


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    kind: FindingKind
    text: str


@dataclass(frozen=True)
class Violation:
    kind: Literal["dependency-cycle", "resource-collision"]
    first: str
    second: str
    detail: str


def _time(value: str, finding: Finding) -> float:
    """Times are plain numbers or ``HH:MM``; both become comparable numbers."""
    try:
        if ":" in value:
            hours, minutes = value.split(":")
            return int(hours) * 60 + int(minutes)
        return float(value)
    except ValueError as exc:
        raise ValueError(f"finding {finding.id}: bad time {value!r} in {finding.text!r}") from exc


def dependency_cycles(findings: list[Finding]) -> list[Violation]:
    graph = nx.DiGraph()
    for f in findings:
        if f.kind != "DEPENDENCY":
            continue
        match = _EDGE.match(f.text)
        if match is None:
            raise ValueError(f"finding {f.id}: DEPENDENCY text must read 'a -> b', got {f.text!r}")
        graph.add_edge(match["a"], match["b"], finding=f.id)
    violations = []
    for component in nx.strongly_connected_components(graph):
        sub = graph.subgraph(component)
        if len(component) == 1 and not sub.number_of_edges():
            continue
        ids = sorted(data["finding"] for _, _, data in sub.edges(data=True))
        first, second = ids[0], ids[-1]
        nodes = " -> ".join(sorted(component))
        violations.append(
            Violation("dependency-cycle", first, second, f"cycle among {nodes} ({', '.join(ids)})")
        )
    return sorted(violations, key=lambda v: (v.first, v.second))


def resource_collisions(findings: list[Finding]) -> list[Violation]:
    bookings: dict[str, list[tuple[float, float, str]]] = {}
    for f in findings:
        for match in _BOOKING.finditer(f.text):
            start, end = _time(match["start"], f), _time(match["end"], f)
            if not start < end:
                raise ValueError(f"finding {f.id}: empty or reversed interval in {match.group(0)!r}")
            bookings.setdefault(match["name"], []).append((start, end, f.id))
    violations = []
    for name, spans in sorted(bookings.items()):
        for i, (s1, e1, a) in enumerate(spans):
            for s2, e2, b in spans[i + 1 :]:
                if s1 < e2 and s2 < e1:
                    violations.append(
                        Violation(
                            "resource-collision", a, b, f"{name}: [{s1:g}, {e1:g}) overlaps [{s2:g}, {e2:g})"
                        )
                    )
    return violations


def check(findings: list[Finding]) -> list[Violation]:
    return dependency_cycles(findings) + resource_collisions(findings)
