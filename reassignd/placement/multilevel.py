"""KIP-879's multi-level rack-aware placer: rings over the rack tree.

Every node of the tree holds a ring over its children starting at a random child. Each replica descends
from the root taking the next child of the ring at each level, so a partition's replicas spread over data
centres first, then over racks inside each, and so on down to brokers. Two refinements keep the KIP's
promise on lopsided trees: a child whose subtree already holds as many replicas of the partition as it has
brokers is skipped, and among the rest the child with the fewest replicas of the partition wins, ties going
to ring order (on a fresh partition this is exactly the plain ring). Raising the replication factor replays
the existing replicas through the rings and continues where they stopped, as the KIP describes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from reassignd.model import InvalidInputError, Problem
from reassignd.placement.base import Assignment, ClusterView, PlacementSpec
from reassignd.placement.topology import ROOT, Node, Topology


class RackRings:
    """The mutable ring pointers of one placement run over an immutable topology."""

    def __init__(self, topology: Topology, rng: random.Random) -> None:
        self.topology = topology
        self.pointer: dict[Node, int] = {}
        for node in sorted(topology.children):
            kids = topology.children[node]
            if kids:
                self.pointer[node] = rng.randrange(len(kids))

    def advance_past(self, broker: int) -> None:
        """Move the rings as if `broker` had just been chosen (replaying an existing replica)."""
        parent = ROOT
        for node in self.topology.ancestors(broker):
            kids = self.topology.children[parent]
            self.pointer[parent] = (kids.index(node) + 1) % len(kids)
            parent = node

    def next_replica(self, counts: dict[Node, int]) -> int:
        """Descend from the root; `counts` (replicas of this partition per node) is updated in place."""
        node = ROOT
        capacity = self.topology.capacity
        while not self.topology.is_leaf(node):
            kids = self.topology.children[node]
            start = self.pointer[node]
            best_offset = -1
            best_count = 0
            for offset in range(len(kids)):
                child = kids[(start + offset) % len(kids)]
                count = counts.get(child, 0)
                if count >= capacity[child]:
                    continue
                if best_offset < 0 or count < best_count:
                    best_offset, best_count = offset, count
            if best_offset < 0:
                raise AssertionError(f"no room below {node}: capacities checked before descending")
            chosen = kids[(start + best_offset) % len(kids)]
            self.pointer[node] = (start + best_offset + 1) % len(kids)
            counts[node] = counts.get(node, 0) + 1
            node = chosen
        counts[node] = counts.get(node, 0) + 1
        return self.topology.leaf_broker[node]


class MultiLevelRackAwarePlacer:
    name = "multi-level"

    def __init__(self, *, seed: int | None = None) -> None:
        self.seed = seed

    def _rings(self, view: ClusterView, broker_ids: Sequence[int] | None) -> RackRings:
        topology = Topology.from_brokers(view.usable(broker_ids))
        return RackRings(topology, random.Random(self.seed))

    def place(
        self, spec: PlacementSpec, view: ClusterView, broker_ids: Sequence[int] | None = None
    ) -> Assignment | None:
        rings = self._rings(view, broker_ids)
        spec.check(rings.topology.capacity[ROOT])
        out: Assignment = []
        for _ in range(spec.num_partitions):
            counts: dict[Node, int] = {}
            out.append([rings.next_replica(counts) for _ in range(spec.replication_factor)])
        return out

    def increase_replication_factor(
        self,
        current: Sequence[Sequence[int]],
        replication_factor: int,
        view: ClusterView,
        broker_ids: Sequence[int] | None = None,
    ) -> Assignment:
        """Extend each partition's replica list to `replication_factor`, keeping the existing replicas."""
        rings = self._rings(view, broker_ids)
        topology = rings.topology
        problems = []
        for index, replicas in enumerate(current):
            outside = sorted(set(replicas) - set(topology.leaves))
            if outside:
                problems.append(Problem(f"partition {index}", "replicas", f"unusable broker(s) {outside}"))
            if len(replicas) > replication_factor:
                problems.append(
                    Problem(
                        f"partition {index}",
                        "replicas",
                        f"already has {len(replicas)} replicas, more than {replication_factor}",
                    )
                )
        if problems:
            raise InvalidInputError("replica placement", problems)
        PlacementSpec(max(1, len(current)), replication_factor).check(topology.capacity[ROOT])
        for replicas in current:
            for broker in replicas:
                rings.advance_past(broker)
        out: Assignment = []
        for replicas in current:
            counts = topology.subtree_counts(replicas)
            grown = list(replicas)
            while len(grown) < replication_factor:
                grown.append(rings.next_replica(counts))
            out.append(grown)
        return out
