"""What a rehearsal found: the figures `rehearse` returns, with their JSON form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reassignd.model import TopicPartition


@dataclass(frozen=True, slots=True)
class Sample:
    """The plan at the start of one cycle: bytes left, and replicas being added per broker (engine view)."""

    time: float
    remaining_bytes: int
    incoming: Mapping[int, int]
    outgoing: Mapping[int, int]


_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")


def byte_text(value: float) -> str:
    """Decimal units with one decimal, as the CLI shows bytes everywhere: 1.5 GB = 1.5e9 bytes."""
    size, unit = float(value), 0
    while abs(size) >= 1000 and unit < len(_UNITS) - 1:
        size, unit = size / 1000, unit + 1
    return f"{size:.0f} {_UNITS[unit]}" if unit == 0 else f"{size:.1f} {_UNITS[unit]}"


def rate_text(value: float | None) -> str:
    return "none" if value is None else f"{byte_text(value)}/s"


@dataclass(frozen=True, slots=True)
class Bottleneck:
    """The resource that bounds a fetch (the simulator's max-min fair allocation): a broker's network
    link, part of it `reserved` for producers' traffic, or a throttle; `shared_by` copies share it."""

    resource: str  # network_in | network_out | follower_throttle | leader_throttle
    broker: int
    capacity: float
    reserved: float = 0.0
    shared_by: int = 1

    def describe(self) -> str:
        copies = "1 copy" if self.shared_by == 1 else f"{self.shared_by} copies"
        if self.resource.startswith("network"):
            direction = "in" if self.resource == "network_in" else "out"
            return (
                f"broker {self.broker}'s network {direction}: {rate_text(self.capacity)}, "
                f"{rate_text(self.reserved)} of it taken by producers' traffic, the rest shared by {copies}"
            )
        kind = "follower" if self.resource == "follower_throttle" else "leader"
        return f"the {kind} throttle on broker {self.broker}: {rate_text(self.capacity)} shared by {copies}"

    def to_json(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "broker": self.broker,
            "capacity_bytes_per_sec": self.capacity,
            "reserved_bytes_per_sec": self.reserved,
            "shared_by": self.shared_by,
        }


@dataclass(frozen=True, slots=True)
class Stuck:
    """A replica that cannot catch up: its fetch rate does not exceed the partition's produce rate."""

    tp: TopicPartition
    broker: int
    leader: int
    fetch_bytes_per_sec: float
    produce_bytes_per_sec: float
    bottleneck: Bottleneck | None = None

    @property
    def reason(self) -> str:
        """`bound by <the resource>` in the one format every line of the report uses."""
        if self.bottleneck is None:
            return "no resource is saturated: the copy cannot fetch (its leader or follower is down)"
        return f"bound by {self.bottleneck.describe()}"

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "broker": self.broker,
            "leader": self.leader,
            "fetch_bytes_per_sec": self.fetch_bytes_per_sec,
            "produce_bytes_per_sec": self.produce_bytes_per_sec,
            "reason": self.reason,
            "bottleneck": None if self.bottleneck is None else self.bottleneck.to_json(),
        }


@dataclass
class RehearsalResult:
    finished: bool
    duration_seconds: float
    cycles: int
    cycle_interval: float
    partitions: int
    steps: int
    total_bytes: int
    produce_bytes_per_sec: float = 0.0
    """What producers write to the plan's partitions at the start (sum over partitions)."""
    bytes_in: dict[int, int] = field(default_factory=dict)
    bytes_out: dict[int, int] = field(default_factory=dict)
    peak_incoming: dict[int, int] = field(default_factory=dict)
    peak_outgoing: dict[int, int] = field(default_factory=dict)
    under_min_isr: list[dict[str, Any]] = field(default_factory=list)
    never_converging: list[Stuck] = field(default_factory=list)
    timeline: list[Sample] = field(default_factory=list)
    ended_because: str = ""
    wall_seconds: float = 0.0
    max_incoming_per_broker: int | None = None
    max_outgoing_per_broker: int | None = None

    @property
    def under_min_isr_seconds(self) -> float:
        return float(sum(e["seconds"] for e in self.under_min_isr))

    def to_json_dict(self, with_timeline: bool = False) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "finished": self.finished,
            "ended_because": self.ended_because,
            "predicted_duration_seconds": round(self.duration_seconds, 3),
            "cycle_interval_seconds": self.cycle_interval,
            "cycles": self.cycles,
            "partitions": self.partitions,
            "steps": self.steps,
            "bytes_to_move": self.total_bytes,
            "plan_produce_bytes_per_sec": round(self.produce_bytes_per_sec, 1),
            "brokers": [
                {
                    "id": b,
                    "bytes_in": self.bytes_in.get(b, 0),
                    "bytes_out": self.bytes_out.get(b, 0),
                    "peak_incoming_movements": self.peak_incoming.get(b, 0),
                    "peak_outgoing_movements": self.peak_outgoing.get(b, 0),
                }
                for b in sorted(set(self.bytes_in) | set(self.bytes_out) | set(self.peak_incoming))
            ],
            "under_min_isr": {
                "partitions": len(self.under_min_isr),
                "total_seconds": round(self.under_min_isr_seconds, 3),
                "detail": self.under_min_isr,
            },
            "never_converging": [s.to_json() for s in self.never_converging],
            "rehearsal_wall_seconds": round(self.wall_seconds, 3),
        }
        if with_timeline:
            doc["timeline"] = [
                {
                    "time": round(s.time, 3),
                    "remaining_bytes": s.remaining_bytes,
                    "incoming": {str(b): n for b, n in sorted(s.incoming.items())},
                    "outgoing": {str(b): n for b, n in sorted(s.outgoing.items())},
                }
                for s in self.timeline
            ]
        return doc
