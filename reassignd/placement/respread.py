"""New targets for partitions whose replicas span fewer racks or data centres than the rack tree allows
(KIP-879 levels; self-healing's `rack_spread` fix): each partition is re-placed by the fewest valid moves
of the placement rules (placement/rules.py), the rest of its replicas kept in their places.

A partition's spread is uneven when, at some node of the tree, a child holds more than one replica more
than a sibling that still has room (`spread_violations`: what the multi-level placer never produces). Each
move takes a replica from below the crowded child (the last in the replica list first, so the preferred
leader stays when it can) to a broker below the sparse one, the emptiest first (fewest replicas, counting
the moves chosen so far, then lowest id); every move must be valid by `move_violation`, so none worsens
any node's spread. A partition with a replica outside the eligible brokers (offline, decommissioned) is
left for the broker-level fixes; one no valid move evens out is left with why.

Pure: the caller passes the replica lists, the racks, the eligible brokers and their loads.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from reassignd.model import TopicPartition
from reassignd.placement.retarget import Retargets
from reassignd.placement.rules import SpreadViolation, apply_move, move_violation, spread_violations
from reassignd.placement.topology import Topology

Replicas = tuple[int, ...]


def uneven_partitions(
    replicas: Mapping[TopicPartition, Replicas], racks: Mapping[int, str | None], eligible: Collection[int]
) -> list[TopicPartition]:
    """The partitions, every replica on an eligible broker, whose spread over the eligible brokers' rack
    tree is uneven: they span fewer racks or data centres than the placer would give them."""
    topology = Topology.from_racks({b: racks.get(b) for b in eligible})
    return [
        tp
        for tp, rs in sorted(replicas.items())
        if all(b in topology for b in rs) and spread_violations(rs, topology)
    ]


def respread_targets(
    targets: Mapping[TopicPartition, Replicas],
    racks: Mapping[int, str | None],
    eligible: Collection[int],
    load: Mapping[int, int],
) -> Retargets:
    """`targets`: the partitions to even out, with their replicas now; `load`: replicas per broker now.
    Nothing ever lands outside `eligible`."""
    topology = Topology.from_racks({b: racks.get(b) for b in eligible})
    counts = {b: int(load.get(b, 0)) for b in topology.leaves}
    out = Retargets()
    for tp in sorted(targets):
        before = tuple(targets[tp])
        if any(b not in topology for b in before):
            out.unplaced[tp] = "a replica is on a broker that is offline or decommissioned"
            continue
        replicas, why = before, None
        for _ in range(4 * len(before) * max(1, len(topology.chains[before[0]]))):
            found = spread_violations(replicas, topology)
            if not found:
                break
            move = _even_move(replicas, found[0], topology, counts)
            if move is None:
                why = f"no valid move evens out its spread ({found[0]})"
                break
            source, destination = move
            replicas = apply_move(replicas, source, destination)
            counts[source] -= 1
            counts[destination] += 1
        else:
            why = "its spread did not even out"
        if why is not None:
            out.unplaced[tp] = why
        elif replicas != before:
            out.targets[tp] = replicas
    return out


def _even_move(
    replicas: Sequence[int], violation: SpreadViolation, topology: Topology, counts: Mapping[int, int]
) -> tuple[int, int] | None:
    """A valid move from below the crowded node to below the sparse one, or None."""
    crowded, sparse = violation.crowded, violation.sparse
    sources = [b for b in reversed(replicas) if crowded in topology.ancestors(b)]
    destinations = sorted(
        (b for b in topology.leaves if b not in replicas and sparse in topology.ancestors(b)),
        key=lambda b: (counts[b], b),
    )
    for source in sources:
        for destination in destinations:
            if move_violation(replicas, source, destination, topology) is None:
                return source, destination
    return None
