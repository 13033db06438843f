"""Balanced sources: which in-sync replica leads a partition while its new replicas copy from it.

Kafka followers fetch only from the partition's leader, so every copy a step makes is served by the leader,
at that broker's `leader.replication.throttled.rate`, shared with every other copy it serves (KIP-73:
ReplicationQuotaManager bounds a broker's throttled bytes, not one partition's). When the plan's copies sit
on a few leaders (draining a broker that leads a third of the moving partitions), those leaders finish last
while the receivers idle: the makespan is the busiest *source's* bytes, however the steps are ordered.

The rule, computed once per plan (with the ranks), from the snapshot at the start:

1. Work per broker: the bytes each broker must receive (every replica it gains) and the bytes it must
   serve with leaders as the step rule keeps them (the current leader serves the first copy, and every
   copy when the plan's preferred leader is already a replica; the preferred leader serves the rest once
   elected).
2. The floor: the busiest receiver's bytes (or the largest single copy, if larger). No schedule beats it,
   so a source serving no more than that is not the bottleneck and keeps its partitions.
3. LPT, largest partition first (Graham's longest-processing-time list scheduling, the classic makespan
   heuristic): a partition keeps its leader while the leader's serving bytes stay within the floor;
   otherwise its copies go to the in-sync replica of the step with the least serving bytes, if that is
   less loaded than the leader.

Only partitions whose every copy the current leader would serve are reassigned (one new replica, or the
preferred leader already a replica), so a source never serves copies the preferred leader would have. The
engine carries the choice out when the partition's step starts: the chosen replica goes first in the step's
target and a preferred-leader election makes it the leader before its copies fetch much (decide.py). That is
one extra leader election per such partition; the plan's preferred leader is elected at the end as usual,
which is why the rule is off when `reassignment.elect.preferred.leader.after.finish` is false.
Rates are taken as equal on every broker (the engine sets one leader and one follower throttle).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from reassignd.engine.limits import Limits
from reassignd.engine.steps import Step
from reassignd.model import NO_LEADER, ClusterSnapshot, PartitionState, ReassignmentPlan, TopicPartition


@dataclass(frozen=True, slots=True)
class Server:
    """`tp`'s copies are served by `serving` instead of `leader` (the leader when the plan started)."""

    leader: int
    serving: int


def served_by_leader(current: tuple[int, ...], final: tuple[int, ...]) -> int:
    """How many of the partition's copies its current leader serves under the step rule.

    All of them when the plan's preferred leader is already a replica (the leader is not moved until the
    end); otherwise only the first, which brings the preferred leader in; it serves the rest once elected.
    """
    new = sum(1 for b in final if b not in current)
    if new == 0:
        return 0
    return new if final[0] in current else 1


def serving_replica(
    server: Server | None,
    p: PartitionState,
    step: Step,
    *,
    final: tuple[int, ...],
    leader: int,
    limits: Limits,
    online: Collection[int],
    electing: bool,
) -> int:
    """The replica the step's copies fetch from: the leader, or the balanced source chosen for the partition
    (`planned_source`), which the step must keep and not be adding."""
    if not step.adding or electing:
        return leader
    chosen = planned_source(server, p, final=final, leader=leader, limits=limits, online=online)
    if chosen not in step.target or chosen in step.adding:
        return leader
    return chosen


def planned_source(
    server: Server | None,
    p: PartitionState,
    *,
    final: tuple[int, ...],
    leader: int,
    limits: Limits,
    online: Collection[int],
) -> int:
    """The replica the partition's next copies will fetch from: the leader, or its balanced source (the
    ETA counts on the same choice as the steps).

    The choice holds only while the partition is as it was planned for (same leader), the chosen replica is
    in sync and online, and its copies are the last the leader would serve; the plan's preferred leader is
    elected at the end (`elect_after_finish`).
    """
    if server is None or leader != server.leader:
        return leader
    if not (limits.balance_sources and limits.elect_after_finish) or limits.scheduling_mode == "batch":
        return leader
    chosen = server.serving
    if chosen not in p.isr or chosen not in online:
        return leader
    if p.replicas[0] == chosen:
        return leader  # reordered, but the election did not take: copy from the leader, do not loop
    if served_by_leader(p.replicas, final) != sum(1 for b in final if b not in p.replicas):
        return leader  # the preferred leader comes in first and serves the later copies
    return chosen


def assign_servers(
    plan: ReassignmentPlan,
    snapshot: ClusterSnapshot,
    done: frozenset[TopicPartition] = frozenset(),
) -> Mapping[TopicPartition, Server]:
    """The partitions whose copies should be served by another in-sync replica than their leader."""
    receiving: dict[int, int] = {}
    serving: dict[int, int] = {}
    movable: list[tuple[int, int, TopicPartition, PartitionState]] = []
    largest = 0
    partitions = snapshot.partitions
    for index, (tp, final) in enumerate(plan.targets.items()):
        p = partitions.get(tp)
        if p is None or tp in done or p.adding or p.removing:
            continue
        current, size = p.replicas, p.size_bytes
        new = [b for b in final if b not in current]
        if not new:
            continue
        largest = max(largest, size)
        for b in new:
            receiving[b] = receiving.get(b, 0) + size
        if final[0] not in current and len(new) > 1:  # the leader serves FTR[0]'s copy, FTR[0] the rest
            serving[final[0]] = serving.get(final[0], 0) + size * (len(new) - 1)
            if p.leader != NO_LEADER:
                serving[p.leader] = serving.get(p.leader, 0) + size
            continue
        if p.leader != NO_LEADER:
            movable.append((size * len(new), index, tp, p))
    if not movable:
        return MappingProxyType({})
    floor = max(max(receiving.values(), default=0), largest)
    for work, _, _, p in movable:
        serving[p.leader] = serving.get(p.leader, 0) + work
    if max(serving.values()) <= floor:
        return MappingProxyType({})  # the receivers bound the plan: every leader keeps its partitions
    online = snapshot.online_broker_ids()
    choices: list[tuple[int, int, TopicPartition, int, tuple[int, ...]]] = []
    for work, index, tp, p in movable:
        candidates = tuple(b for b in p.replicas if b != p.leader and b in p.isr and b in online)
        if candidates:  # else its leader's load is fixed, as counted above
            serving[p.leader] -= work
            choices.append((work, index, tp, p.leader, candidates))
    servers: dict[TopicPartition, Server] = {}
    choices.sort(key=lambda m: (-m[0], m[1]))
    for work, _, tp, leader, candidates in choices:
        kept = serving.get(leader, 0) + work
        if kept <= floor:
            serving[leader] = kept
            continue
        best = min(candidates, key=lambda b: serving.get(b, 0))
        if serving.get(best, 0) + work < kept:
            serving[best] = serving.get(best, 0) + work
            servers[tp] = Server(leader, best)
        else:
            serving[leader] = kept
    return MappingProxyType(servers)
