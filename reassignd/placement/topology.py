"""The rack tree of KIP-879: rack paths such as `/dc1/rack2/host3` nest, brokers are the leaves.

A node is the tuple of path components from the root; a broker's leaf is its rack path followed by
`#<id>`, so a broker without a rack hangs directly under the root beside the data centres. Capacities
(brokers below a node) bound how many replicas of one partition a subtree can take.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from reassignd.model import Broker, parse_rack_path

Node = tuple[str, ...]
ROOT: Node = ()


def leaf_of(broker_id: int, rack: str | None) -> Node:
    return (*parse_rack_path(rack), f"#{broker_id}")


@dataclass(frozen=True, slots=True)
class Topology:
    """Brokers placed in the rack tree; built once per snapshot and shared (immutable)."""

    leaves: Mapping[int, Node]
    children: Mapping[Node, tuple[Node, ...]]
    capacity: Mapping[Node, int]
    leaf_broker: Mapping[Node, int]
    chains: Mapping[int, tuple[Node, ...]]

    @classmethod
    def from_racks(cls, racks: Mapping[int, str | None]) -> Topology:
        leaves = {broker: leaf_of(broker, rack) for broker, rack in racks.items()}
        children: dict[Node, set[Node]] = {ROOT: set()}
        capacity: dict[Node, int] = {ROOT: 0}
        for leaf in leaves.values():
            capacity[ROOT] += 1
            for depth in range(1, len(leaf) + 1):
                node, parent = leaf[:depth], leaf[: depth - 1]
                children.setdefault(parent, set()).add(node)
                children.setdefault(node, set())
                capacity[node] = capacity.get(node, 0) + 1
        return cls(
            leaves=MappingProxyType(leaves),
            children=MappingProxyType({n: tuple(sorted(c)) for n, c in children.items()}),
            capacity=MappingProxyType(capacity),
            leaf_broker=MappingProxyType({leaf: b for b, leaf in leaves.items()}),
            chains=MappingProxyType(
                {b: tuple(leaf[:depth] for depth in range(1, len(leaf) + 1)) for b, leaf in leaves.items()}
            ),
        )

    @classmethod
    def from_brokers(cls, brokers: Iterable[Broker]) -> Topology:
        return cls.from_racks({b.id: b.rack for b in brokers})

    def __contains__(self, broker: object) -> bool:
        return broker in self.leaves

    def ancestors(self, broker: int) -> tuple[Node, ...]:
        """The nodes from the top level down to the broker's own leaf (the root excluded)."""
        return self.chains[broker]

    def subtree_counts(self, replicas: Iterable[int]) -> dict[Node, int]:
        """How many of these replicas sit below each node (the root included)."""
        counts: dict[Node, int] = {ROOT: 0}
        chains = self.chains
        for broker in replicas:
            counts[ROOT] += 1
            for node in chains[broker]:
                counts[node] = counts.get(node, 0) + 1
        return counts

    def is_leaf(self, node: Node) -> bool:
        return node in self.leaf_broker

    def top_level(self, broker: int) -> Node:
        """The broker's top-level domain (its data centre, or its leaf when it has no rack)."""
        return self.leaves[broker][:1]

    def restricted_to(self, brokers: Iterable[int]) -> Topology:
        wanted = set(brokers)
        return Topology.from_racks({b: _rack_of(leaf) for b, leaf in self.leaves.items() if b in wanted})


def _rack_of(leaf: Node) -> str | None:
    return "/" + "/".join(leaf[:-1]) if len(leaf) > 1 else None


def node_name(node: Node) -> str:
    return "/" + "/".join(node)
