"""One cluster's assignment as arrays, with the per-broker loads every goal reads kept up to date move by
move: replicas, preferred leaders, bytes, network in (every replica receives its partition's produce rate:
the leader from producers, followers by replication) and network out (the leader sends it to each
follower; consumers are not in the snapshot, so they are not counted).

Partitions are held in canonical order (topic, partition), so the same cluster gives the same plan
whatever order its rows arrive in (one process, or any Spark layout).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from reassignd.model import ClusterSnapshot
from reassignd.placement.capacity import RESOURCES, Capacities

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class ClusterInput:
    """A cluster as the planner reads it; `replicas` is (partitions x max RF), padded with -1, and holds
    the target replicas while a reassignment runs (those partitions are never moved again)."""

    name: str
    racks: Mapping[int, str | None]  # every known broker
    online: frozenset[int]
    topics: Sequence[str]
    numbers: IntArray
    replicas: IntArray
    sizes: IntArray
    produce: FloatArray
    leaders: IntArray
    reassigning: BoolArray

    @property
    def partitions(self) -> int:
        return len(self.topics)

    @classmethod
    def build(
        cls,
        name: str,
        racks: Mapping[int, str | None],
        online: Iterable[int],
        rows: Iterable[tuple[str, int, Sequence[int], int, float, int, bool]],
    ) -> ClusterInput:
        """From (topic, partition, replicas, size, produce, leader, reassigning) rows, in any order."""
        ordered = sorted(rows, key=lambda r: (r[0], r[1]))
        width = max((len(r[2]) for r in ordered), default=1)
        replicas = np.full((len(ordered), max(width, 1)), -1, dtype=np.int64)
        for i, row in enumerate(ordered):
            replicas[i, : len(row[2])] = row[2]
        return cls(
            name=name,
            racks=dict(racks),
            online=frozenset(online),
            topics=[r[0] for r in ordered],
            numbers=np.array([r[1] for r in ordered], dtype=np.int64),
            replicas=replicas,
            sizes=np.array([r[3] for r in ordered], dtype=np.int64),
            produce=np.array([r[4] for r in ordered], dtype=np.float64),
            leaders=np.array([r[5] for r in ordered], dtype=np.int64),
            reassigning=np.array([r[6] for r in ordered], dtype=np.bool_),
        )

    @classmethod
    def from_snapshot(cls, snapshot: ClusterSnapshot, name: str | None = None) -> ClusterInput:
        rows = (
            (
                tp.topic,
                tp.partition,
                p.target_replicas,
                p.size_bytes,
                float(p.produce_bytes_per_sec),
                p.leader,
                p.is_reassigning,
            )
            for tp, p in snapshot.partitions.items()
        )
        return cls.build(
            name or snapshot.cluster_id or "cluster",
            {b.id: b.rack for b in snapshot.brokers.values()},
            snapshot.online_broker_ids(),
            rows,
        )


def tiebreak(count: int, seed: int) -> npt.NDArray[np.uint64]:
    """A seeded, order-independent pseudo-random key per partition (splitmix64 of its canonical index)."""
    with np.errstate(over="ignore"):
        z = np.arange(count, dtype=np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


class Assignment:
    """The mutable plan being built: replica lists and per-broker loads, with the hard capacity limits."""

    def __init__(self, data: ClusterInput, movable: BoolArray, capacities: Capacities | None) -> None:
        self.data = data
        self.rep: IntArray = data.replicas.copy()
        self.width = self.rep.shape[1]
        self.rf: IntArray = (self.rep >= 0).sum(axis=1).astype(np.int64)
        self.size = data.sizes
        self.produce = data.produce
        self.movable = movable
        self.brokers = sorted(data.racks)
        self.count = self._per_broker(np.ones(len(self.size), dtype=np.float64), all_slots=True)
        self.bytes = self._per_broker(self.size.astype(np.float64), all_slots=True)
        self.lead = self._per_broker(np.ones(len(self.size), dtype=np.float64), all_slots=False)
        self.nw_in = self._per_broker(self.produce, all_slots=True)
        self.nw_out = self._per_broker(self.produce * np.maximum(self.rf - 1, 0), all_slots=False)
        self.limits: dict[str, dict[int, float]] = {}
        if capacities is not None:
            for resource in RESOURCES:
                if capacities.bounded(resource):
                    self.limits[resource] = {b: capacities.limit(b, resource) for b in self.brokers}
        self.changed: set[int] = set()
        self.log: list[tuple[int, int, int, int]] = []  # (partition, slot, source, destination) per move

    def _per_broker(self, weight: npt.NDArray[np.float64], *, all_slots: bool) -> dict[int, float]:
        columns = self.rep if all_slots else self.rep[:, :1]
        ids = columns.reshape(-1)
        weights = np.repeat(weight, columns.shape[1])
        present = ids >= 0
        out = dict.fromkeys(self.brokers, 0.0)
        if present.any():
            unique, inverse = np.unique(ids[present], return_inverse=True)
            sums = np.bincount(inverse, weights=weights[present])
            for broker, total in zip(unique.tolist(), sums.tolist(), strict=True):
                out[broker] = out.get(broker, 0.0) + total
        return out

    def replicas(self, p: int) -> tuple[int, ...]:
        return tuple(self.rep[p, : self.rf[p]].tolist())

    def leader_out(self, p: int) -> float:
        return float(self.produce[p]) * max(int(self.rf[p]) - 1, 0)

    def fits(self, p: int, slot: int, destination: int) -> bool:
        """Whether `destination` can take this replica without passing a hard capacity limit."""
        limits = self.limits
        if not limits:
            return True
        disk = limits.get("disk")
        if disk is not None and self.bytes[destination] + float(self.size[p]) > disk[destination]:
            return False
        network_in = limits.get("network_in")
        if (
            network_in is not None
            and self.nw_in[destination] + float(self.produce[p]) > network_in[destination]
        ):
            return False
        network_out = limits.get("network_out")
        return not (
            slot == 0
            and network_out is not None
            and self.nw_out[destination] + self.leader_out(p) > network_out[destination]
        )

    def leads_fit(self, p: int, broker: int) -> bool:
        network_out = self.limits.get("network_out")
        return network_out is None or self.nw_out[broker] + self.leader_out(p) <= network_out[broker]

    def move(self, p: int, slot: int, destination: int) -> None:
        """Replace the replica in `slot` in place (the preferred-leader order is kept)."""
        source = int(self.rep[p, slot])
        size, produce = float(self.size[p]), float(self.produce[p])
        self.rep[p, slot] = destination
        self.log.append((p, slot, source, destination))
        for loads, amount in ((self.count, 1.0), (self.bytes, size), (self.nw_in, produce)):
            loads[source] -= amount
            loads[destination] += amount
        if slot == 0:
            self.lead[source] -= 1
            self.lead[destination] += 1
            self.nw_out[source] -= self.leader_out(p)
            self.nw_out[destination] += self.leader_out(p)
        self.changed.add(p)

    def make_leader(self, p: int, slot: int) -> None:
        """Reorder so the replica in `slot` comes first (a preferred-leader change, no data moves)."""
        old, new = int(self.rep[p, 0]), int(self.rep[p, slot])
        row = [new, *(b for b in self.replicas(p) if b != new)]
        self.rep[p, : len(row)] = row
        self.lead[old] -= 1
        self.lead[new] += 1
        self.nw_out[old] -= self.leader_out(p)
        self.nw_out[new] += self.leader_out(p)
        self.changed.add(p)

    def over_limit(self, resource: str) -> dict[int, float]:
        """Brokers above their limit for `resource`, with the excess."""
        limits = self.limits.get(resource)
        if limits is None:
            return {}
        loads = self.load_of(resource)
        return {b: loads[b] - limits[b] for b in self.brokers if loads[b] > limits[b] + 1e-9}

    def load_of(self, resource: str) -> dict[int, float]:
        return {"disk": self.bytes, "network_in": self.nw_in, "network_out": self.nw_out}[resource]
