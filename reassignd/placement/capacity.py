"""Broker capacities for the hard goals: disk bytes and network in/out bytes per second, per broker with
defaults for all, and the share of each a plan may use (Cruise Control's capacity thresholds, 0.8).

Two file formats are read (JSON):

* reassignd's own, in bytes::

    {"default": {"disk_bytes": 2e12, "network_in_bytes_per_sec": 1.25e8, "network_out_bytes_per_sec": 1.25e8},
     "brokers": {"12": {"disk_bytes": 4e12}},
     "thresholds": {"disk": 0.8, "network_in": 0.8, "network_out": 0.8}}

* Cruise Control's `capacity.json` (`{"brokerCapacities": [{"brokerId": "-1", "capacity": {"DISK": "..",
  "NW_IN": "..", "NW_OUT": ".."}}]}`, broker -1 the default, DISK in MB or a map of log dir to MB (JBOD,
  summed), NW_IN / NW_OUT in KB/s, with Cruise Control's 1 MB = 1024 * 1024 bytes), so an operator moving
  from Cruise Control keeps the file.

A resource without a capacity is unbounded (its goal does not apply to that broker).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reassignd.model import InvalidInputError, Problem

RESOURCES = ("disk", "network_in", "network_out")
_OWN_KEYS = {
    "disk_bytes": "disk",
    "network_in_bytes_per_sec": "network_in",
    "network_out_bytes_per_sec": "network_out",
}
_CC_KEYS = {"DISK": ("disk", 1024 * 1024), "NW_IN": ("network_in", 1024), "NW_OUT": ("network_out", 1024)}
DEFAULT_THRESHOLD = 0.8


@dataclass(frozen=True, slots=True)
class Capacity:
    """One broker's capacities; None means unbounded."""

    disk: float | None = None
    network_in: float | None = None
    network_out: float | None = None

    def get(self, resource: str) -> float | None:
        value: float | None = getattr(self, resource)
        return value

    def merged_over(self, default: Capacity) -> Capacity:
        return Capacity(*(self.get(r) if self.get(r) is not None else default.get(r) for r in RESOURCES))


@dataclass(frozen=True, slots=True)
class Capacities:
    default: Capacity = field(default_factory=Capacity)
    brokers: Mapping[int, Capacity] = field(default_factory=dict)
    thresholds: Mapping[str, float] = field(
        default_factory=lambda: dict.fromkeys(RESOURCES, DEFAULT_THRESHOLD)
    )

    def of(self, broker: int) -> Capacity:
        own = self.brokers.get(broker)
        return own.merged_over(self.default) if own is not None else self.default

    def limit(self, broker: int, resource: str) -> float:
        """What a plan may load the broker with: capacity x threshold (infinite when unbounded)."""
        capacity = self.of(broker).get(resource)
        if capacity is None:
            return math.inf
        return capacity * self.thresholds.get(resource, DEFAULT_THRESHOLD)

    def bounded(self, resource: str) -> bool:
        return self.default.get(resource) is not None or any(
            c.get(resource) is not None for c in self.brokers.values()
        )


def _number(value: Any, where: str, key: str, problems: list[Problem]) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        problems.append(Problem(where, key, f"must be a number, got {value!r}"))
        return None
    if not math.isfinite(number) or number <= 0:
        problems.append(Problem(where, key, f"must be a positive number, got {value!r}"))
        return None
    return number


def _own_capacity(raw: Any, where: str, problems: list[Problem]) -> Capacity:
    if not isinstance(raw, Mapping):
        problems.append(Problem(where, "(entry)", f"must be an object, got {type(raw).__name__}"))
        return Capacity()
    values: dict[str, float | None] = {}
    for key, value in raw.items():
        if key not in _OWN_KEYS:
            problems.append(Problem(where, str(key), f"unknown key; expected one of {sorted(_OWN_KEYS)}"))
            continue
        values[_OWN_KEYS[key]] = _number(value, where, key, problems)
    return Capacity(**values)


def _cc_capacity(raw: Any, where: str, problems: list[Problem]) -> Capacity:
    if not isinstance(raw, Mapping):
        problems.append(Problem(where, "capacity", f"must be an object, got {type(raw).__name__}"))
        return Capacity()
    values: dict[str, float | None] = {}
    for key, (resource, unit) in _CC_KEYS.items():
        if key not in raw:
            continue
        value = raw[key]
        if isinstance(value, Mapping):  # JBOD: one entry per log dir
            parts = [_number(v, where, f"{key}.{d}", problems) for d, v in value.items()]
            values[resource] = sum(p for p in parts if p is not None) * unit if parts else None
        else:
            number = _number(value, where, key, problems)
            values[resource] = number * unit if number is not None else None
    return Capacity(**values)


def parse_capacities(doc: Any, source: str = "capacity file") -> Capacities:
    """Either format; every problem is reported at once, naming the entry and key."""
    problems: list[Problem] = []
    if not isinstance(doc, Mapping):
        raise InvalidInputError(source, [Problem(source, "(document)", "must be a JSON object")])
    default = Capacity()
    brokers: dict[int, Capacity] = {}
    thresholds = dict.fromkeys(RESOURCES, DEFAULT_THRESHOLD)
    if "brokerCapacities" in doc:
        entries = doc["brokerCapacities"]
        if not isinstance(entries, list):
            problems.append(Problem(source, "brokerCapacities", "must be a list"))
            entries = []
        for i, entry in enumerate(entries):
            where = f"brokerCapacities[{i}]"
            if not isinstance(entry, Mapping) or "brokerId" not in entry:
                problems.append(Problem(where, "brokerId", "missing"))
                continue
            try:
                broker = int(entry["brokerId"])
            except (TypeError, ValueError):
                problems.append(Problem(where, "brokerId", f"must be an integer, got {entry['brokerId']!r}"))
                continue
            capacity = _cc_capacity(entry.get("capacity"), where, problems)
            if broker == -1:
                default = capacity
            else:
                brokers[broker] = capacity
    else:
        unknown = sorted(set(doc) - {"default", "brokers", "thresholds"})
        if unknown:
            problems.append(Problem(source, "(document)", f"unknown key(s) {unknown}"))
        if "default" in doc:
            default = _own_capacity(doc["default"], "default", problems)
        raw_brokers = doc.get("brokers", {})
        if not isinstance(raw_brokers, Mapping):
            problems.append(Problem(source, "brokers", "must be an object keyed by broker id"))
            raw_brokers = {}
        for key, raw in raw_brokers.items():
            try:
                broker = int(key)
            except ValueError:
                problems.append(Problem("brokers", str(key), "broker ids must be integers"))
                continue
            brokers[broker] = _own_capacity(raw, f"brokers.{key}", problems)
        raw_thresholds = doc.get("thresholds", {})
        if not isinstance(raw_thresholds, Mapping):
            problems.append(Problem(source, "thresholds", "must be an object"))
            raw_thresholds = {}
        for key, value in raw_thresholds.items():
            if key not in RESOURCES:
                problems.append(
                    Problem("thresholds", str(key), f"unknown; expected one of {list(RESOURCES)}")
                )
                continue
            number = _number(value, "thresholds", key, problems)
            if number is not None and number > 1:
                problems.append(Problem("thresholds", key, f"a share of capacity in (0, 1], got {value!r}"))
            elif number is not None:
                thresholds[key] = number
    if problems:
        raise InvalidInputError(source, problems)
    return Capacities(default, brokers, thresholds)


def load_capacities(path: str) -> Capacities:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InvalidInputError(
            "capacity file", [Problem(path, "(file)", exc.strerror or str(exc))]
        ) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            "capacity file", [Problem(path, f"line {exc.lineno}", f"invalid JSON: {exc.msg}")]
        ) from None
    return parse_capacities(doc, path)
