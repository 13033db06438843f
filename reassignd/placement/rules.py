"""What a valid replica move is: the single source of truth for the daemon, the CLI and the Spark pipeline.

A move takes one replica of a partition from `source` to `destination`. The spread of a partition at a
node of the rack tree is how evenly its replicas sit among the node's children; a node is uneven when a
child holds more than one replica more than a sibling that still has room. A move is valid when the
destination does not hold the partition and no node's spread gets worse:

- where the two brokers' paths split, the destination's side holds fewer replicas than the source's
  (x -> y with y < x: the pair {x, y} becomes {x-1, y+1}, never further apart);
- below the split, the replica leaves through the fullest child at every level, and arrives through a
  child holding no more than any sibling with room.

A replica leaving an ineligible broker (one being drained) only has the arrival rule, from the root down.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reassignd.placement.topology import ROOT, Node, Topology, node_name


def move_violation(replicas: Sequence[int], source: int, destination: int, topology: Topology) -> str | None:
    """Why moving `source` -> `destination` is not allowed, or None when it is."""
    if source not in replicas:
        return f"broker {source} does not hold a replica (replicas {list(replicas)})"
    if destination in replicas:
        return f"broker {destination} already holds a replica (replicas {list(replicas)})"
    if destination not in topology:
        return f"broker {destination} is not an eligible broker"
    counts = topology.subtree_counts(r for r in replicas if r in topology)
    if source not in topology:
        return _arrival_violation(counts, ROOT, topology.ancestors(destination), topology)
    src_chain, dst_chain = topology.ancestors(source), topology.ancestors(destination)
    split = 0
    while src_chain[split] == dst_chain[split]:
        split += 1  # both chains end in distinct leaves, so this stops
    src_node, dst_node = src_chain[split], dst_chain[split]
    if counts.get(dst_node, 0) >= counts.get(src_node, 0):
        return (
            f"would worsen the spread at level {split + 1}: {node_name(dst_node)} holds "
            f"{counts.get(dst_node, 0)} replica(s), {node_name(src_node)} holds {counts[src_node]}"
        )
    parent = src_node
    for node in src_chain[split + 1 :]:
        fullest = max(counts.get(k, 0) for k in topology.children[parent])
        if counts.get(node, 0) < fullest:
            return (
                f"would unbalance {node_name(parent)}: {node_name(node)} holds {counts.get(node, 0)} "
                f"replica(s) while a sibling holds {fullest}"
            )
        parent = node
    return _arrival_violation(counts, dst_node, dst_chain[split + 1 :], topology)


def _arrival_violation(
    counts: dict[Node, int], parent: Node, chain: Sequence[Node], topology: Topology
) -> str | None:
    """At every level of `chain`, the node must hold no more replicas than any sibling with room."""
    for node in chain:
        with_room = [k for k in topology.children[parent] if counts.get(k, 0) < topology.capacity[k]]
        fewest = min((counts.get(k, 0) for k in with_room), default=0)
        if counts.get(node, 0) > fewest:
            return (
                f"would crowd {node_name(parent)}: {node_name(node)} holds {counts.get(node, 0)} "
                f"replica(s) while a sibling with room holds {fewest}"
            )
        parent = node
    return None


def is_valid_move(replicas: Sequence[int], source: int, destination: int, topology: Topology) -> bool:
    return move_violation(replicas, source, destination, topology) is None


def apply_move(replicas: Sequence[int], source: int, destination: int) -> tuple[int, ...]:
    """The replica list with `source` replaced in place, so the preferred-leader order is kept."""
    return tuple(destination if r == source else r for r in replicas)


@dataclass(frozen=True, slots=True)
class SpreadViolation:
    """At `node`, sibling `crowded` holds more than one replica more than `sparse`, which has room."""

    node: Node
    crowded: Node
    crowded_count: int
    sparse: Node
    sparse_count: int

    def __str__(self) -> str:
        return (
            f"under {node_name(self.node)}: {node_name(self.crowded)} has {self.crowded_count}, "
            f"{node_name(self.sparse)} has {self.sparse_count}"
        )


def spread_violations(replicas: Sequence[int], topology: Topology) -> list[SpreadViolation]:
    """Nodes whose children hold replica counts differing by more than one where the topology allows.

    A sibling with fewer replicas only counts as a violation when it still has room (its subtree has
    more eligible brokers than replicas), so a lopsided topology is not reported as a bad spread.
    """
    present = [r for r in replicas if r in topology]
    if len({topology.leaves[r][:1] for r in present}) == len(present):
        return []  # one replica per top-level node: every node holds at most one, nothing can be uneven
    counts = topology.subtree_counts(present)
    found: list[SpreadViolation] = []
    stack: list[Node] = [ROOT]
    while stack:
        node = stack.pop()
        kids = topology.children.get(node, ())
        if not kids:
            continue
        crowded = max(kids, key=lambda k: (counts.get(k, 0), k))
        with_room = [k for k in kids if counts.get(k, 0) < topology.capacity[k]]
        if with_room:
            sparse = min(with_room, key=lambda k: (counts.get(k, 0), k))
            if counts.get(crowded, 0) > counts.get(sparse, 0) + 1:
                found.append(
                    SpreadViolation(node, crowded, counts.get(crowded, 0), sparse, counts.get(sparse, 0))
                )
        stack.extend(k for k in kids if counts.get(k, 0) > 0)
    return found
