"""The ReplicaPlacer interface of KIP-879 (`org.apache.kafka.metadata.placement` in Kafka, improved there)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from reassignd.model import Broker, ClusterSnapshot, InvalidInputError, Problem, TopicPartition

Assignment = list[list[int]]


@dataclass(frozen=True, slots=True)
class PlacementSpec:
    """What to place: KIP-879's PlacementSpec (number of partitions and replication factor)."""

    num_partitions: int
    replication_factor: int

    def check(self, usable_brokers: int) -> None:
        problems = []
        if self.num_partitions <= 0:
            problems.append(Problem("placement", "num_partitions", f"must be > 0, got {self.num_partitions}"))
        if self.replication_factor <= 0:
            problems.append(
                Problem("placement", "replication_factor", f"must be > 0, got {self.replication_factor}")
            )
        elif self.replication_factor > usable_brokers:
            problems.append(
                Problem(
                    "placement",
                    "replication_factor",
                    f"{self.replication_factor} is larger than the {usable_brokers} usable broker(s)",
                )
            )
        if problems:
            raise InvalidInputError("replica placement", problems)


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What a placer may see: brokers with racks and the current assignment (KIP-879's ClusterView)."""

    brokers: tuple[Broker, ...]
    assignments: Mapping[TopicPartition, tuple[int, ...]] = field(
        default_factory=lambda: MappingProxyType({})
    )

    @classmethod
    def from_snapshot(cls, snapshot: ClusterSnapshot) -> ClusterView:
        return cls(
            brokers=tuple(sorted(snapshot.brokers.values(), key=lambda b: b.id)),
            assignments=MappingProxyType({tp: p.replicas for tp, p in snapshot.partitions.items()}),
        )

    def usable(self, broker_ids: Sequence[int] | None) -> tuple[Broker, ...]:
        """Online brokers, or exactly the listed ones (unknown ids are an error naming them)."""
        if broker_ids is None:
            return tuple(b for b in self.brokers if b.online)
        known = {b.id: b for b in self.brokers}
        unknown = sorted(set(broker_ids) - set(known))
        duplicates = sorted({b for b in broker_ids if list(broker_ids).count(b) > 1})
        problems = []
        if unknown:
            problems.append(Problem("placement", "broker_ids", f"unknown broker id(s) {unknown}"))
        if duplicates:
            problems.append(Problem("placement", "broker_ids", f"duplicate broker id(s) {duplicates}"))
        if problems:
            raise InvalidInputError("replica placement", problems)
        return tuple(known[b] for b in sorted(broker_ids))


class ReplicaPlacer(Protocol):
    """Places the replicas of new partitions; returns None to defer to Kafka's rack-unaware default."""

    name: str

    def place(
        self, spec: PlacementSpec, view: ClusterView, broker_ids: Sequence[int] | None = None
    ) -> Assignment | None: ...


class PlacerFactory(Protocol):
    """What an entry point in the `reassignd.placers` group must be: called with an optional seed."""

    def __call__(self, *, seed: int | None = None) -> ReplicaPlacer: ...
