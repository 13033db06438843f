"""New targets for partitions whose target names a broker that is gone (`reassignd retarget`): each gone
broker of a target is replaced, in its place in the list (so a gone preferred leader's replacement becomes
the preferred leader), by an eligible broker that keeps the partition's rack spread.

Eligible: online, registered, not decommissioned, not already in the target. Among the eligible brokers a
replacement is the first valid one (placement/rules.py: the move gone -> replacement worsens no node's
spread; a gone broker whose rack is not known only has the arrival rule) in this order: same leaf rack as
the gone broker, fewest replicas (counting the replacements chosen so far), lowest id. A partition with no
valid replacement keeps its target and is reported with why; nothing is forced onto a worse spread.

Pure: the caller passes the targets, who is gone, the racks, the eligible brokers and their loads.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from reassignd.model import TopicPartition
from reassignd.placement.rules import move_violation
from reassignd.placement.topology import Topology

Replicas = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Retargets:
    targets: dict[TopicPartition, Replicas] = field(default_factory=dict)
    """The new target of each partition that could be given one."""
    unplaced: dict[TopicPartition, str] = field(default_factory=dict)
    """Partitions left as they were, with why."""


def replacement_targets(
    targets: Mapping[TopicPartition, Replicas],
    gone: Collection[int],
    racks: Mapping[int, str | None],
    eligible: Collection[int],
    load: Mapping[int, int],
) -> Retargets:
    """`targets`: the partitions to look at (those naming no gone broker are left out of the answer);
    `racks`: every broker whose rack is known (gone ones too, when registered); `load`: replicas per
    broker now."""
    gone_set, allowed = frozenset(gone), frozenset(eligible) - frozenset(gone)
    topology = Topology.from_racks({b: racks.get(b) for b in allowed | set(racks)})
    counts = {b: int(load.get(b, 0)) for b in allowed}
    out = Retargets()
    for tp in sorted(targets):
        target = tuple(targets[tp])
        if not gone_set & set(target):
            continue
        replicas, why = list(target), None
        for index, broker in enumerate(target):
            if broker not in gone_set:
                continue
            choice = _replacement(
                replicas, broker, racks=racks, allowed=allowed, counts=counts, topology=topology
            )
            if isinstance(choice, str):
                why = f"no broker can replace {broker}: {choice}"
                break
            replicas[index] = choice
        if why is not None:
            out.unplaced[tp] = why
            continue
        for broker in set(replicas) - set(target):
            counts[broker] += 1
        out.targets[tp] = tuple(replicas)
    return out


def _replacement(
    replicas: list[int],
    gone: int,
    *,
    racks: Mapping[int, str | None],
    allowed: frozenset[int],
    counts: Mapping[int, int],
    topology: Topology,
) -> int | str:
    """The replacement of `gone` in `replicas`, or why there is none."""
    candidates = sorted(
        (b for b in allowed if b not in replicas),
        key=lambda b: (racks.get(b) != racks.get(gone) or racks.get(gone) is None, counts[b], b),
    )
    if not candidates:
        return "no eligible broker is left (online, not decommissioned, not holding the partition)"
    first_violation = None
    for broker in candidates:
        violation = move_violation(replicas, gone, broker, topology)
        if violation is None:
            return broker
        first_violation = first_violation or f"broker {broker} {violation}"
    return f"every eligible broker would worsen the rack spread ({first_violation})"
