"""Kafka's default replica placement for topics created without an explicit assignment (KRaft).

A port of metadata/src/main/java/org/apache/kafka/metadata/placement/StripedReplicaPlacer.java: racks sorted
by name (brokers without a rack form one rack, sorted first), each rack's brokers sorted with a random start
offset; the leader comes from the next rack in turn that has an unfenced broker, followers from the following
racks round-robin (fenced brokers only when a rack has no unfenced one left in this round), every partition
starts one rack further on ("striped"), and after as many partitions as there are unfenced brokers the rack
and broker lists are shuffled. Randomness comes from a seeded `random.Random`, so a scenario places the same
way every run (Java's Random is not reproduced: the ids differ from a real cluster's, the pattern does not).
CreatePartitions' continuation from existing assignments is not needed here and not ported.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from reassignd.sim import errors
from reassignd.sim.errors import KafkaError


class _BrokerList:
    def __init__(self) -> None:
        self.brokers: list[int] = []
        self.index = 0
        self.offset = 0
        self.epoch = 0

    def initialize(self, rng: random.Random) -> None:
        if self.brokers:
            self.brokers.sort()
            self.offset = rng.randrange(len(self.brokers))

    def next(self, epoch: int) -> int:
        """The next broker of this round (`epoch`), or -1 when the round has used them all."""
        size = len(self.brokers)
        if not size:
            return -1
        if self.epoch != epoch:
            self.epoch = epoch
            self.index = 0
            self.offset = (self.offset + 1) % size
        if self.index >= size:
            return -1
        broker = self.brokers[(self.index + self.offset) % size]
        self.index += 1
        return broker


class _Rack:
    def __init__(self) -> None:
        self.fenced = _BrokerList()
        self.unfenced = _BrokerList()

    def next(self, epoch: int) -> int:
        result = self.unfenced.next(epoch)
        return result if result >= 0 else self.fenced.next(epoch)


class _RackList:
    def __init__(self, rng: random.Random, brokers: Mapping[int, tuple[str | None, bool]]) -> None:
        self.rng = rng
        self.racks: dict[str | None, _Rack] = {}
        self.unfenced = 0
        for broker_id in sorted(brokers):
            rack_name, fenced = brokers[broker_id]
            rack = self.racks.setdefault(rack_name, _Rack())
            (rack.fenced if fenced else rack.unfenced).brokers.append(broker_id)
            self.unfenced += 0 if fenced else 1
        self.names = sorted(self.racks, key=lambda name: (name is not None, name or ""))
        for name in self.names:
            self.racks[name].fenced.initialize(rng)
            self.racks[name].unfenced.initialize(rng)
        self.total = len(brokers)
        self.offset = rng.randrange(len(self.names)) if self.names else 0
        self.epoch = 0

    def _shuffle(self) -> None:
        self.rng.shuffle(self.names)
        for rack in self.racks.values():
            self.rng.shuffle(rack.fenced.brokers)
            self.rng.shuffle(rack.unfenced.brokers)

    def place(self, replication_factor: int) -> list[int]:
        if self.epoch == self.unfenced and self.unfenced > 1:
            self._shuffle()
            self.epoch = 0
        if self.offset == len(self.names):
            self.offset = 0
        count = len(self.names)
        first_rack = self.offset
        while True:
            leader = self.racks[self.names[first_rack]].unfenced.next(self.epoch)
            if leader >= 0:
                break
            first_rack = (first_rack + 1) % count
        replicas = [leader]
        rack_index = self.offset
        for _ in range(1, replication_factor):
            result = -1
            while result < 0:
                if rack_index == first_rack:
                    first_rack = -1  # the leader's rack gave its broker for this round already
                else:
                    result = self.racks[self.names[rack_index]].next(self.epoch)
                rack_index = (rack_index + 1) % count
            replicas.append(result)
        self.epoch += 1
        self.offset += 1
        return replicas


def assign_replicas(
    brokers: Mapping[int, str | None],
    partitions: int,
    replication_factor: int,
    rng: random.Random,
    fenced: frozenset[int] = frozenset(),
) -> list[list[int]]:
    """Replica lists for `partitions` partitions over `brokers` (id -> rack or None); leaders never fenced."""
    if partitions <= 0:
        raise KafkaError(
            errors.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
        )
    prefix = f"Unable to replicate the partition {replication_factor} time(s): "
    if replication_factor <= 0:
        raise KafkaError(
            errors.INVALID_REPLICATION_FACTOR,
            prefix
            + f"Invalid replication factor {replication_factor}: the replication factor must be positive.",
        )
    if not set(brokers) - fenced:
        raise KafkaError(errors.INVALID_REPLICATION_FACTOR, prefix + "All brokers are currently fenced.")
    if replication_factor > len(brokers):
        raise KafkaError(
            errors.INVALID_REPLICATION_FACTOR,
            prefix + f"The target replication factor of {replication_factor} cannot be reached because only "
            f"{len(brokers)} broker(s) are registered.",
        )
    racks = _RackList(rng, {b: (rack, b in fenced) for b, rack in brokers.items()})
    return [racks.place(replication_factor) for _ in range(partitions)]
